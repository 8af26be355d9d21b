/**
 * Ink's text splitters share a build-time grapheme segmenter (scripts/grapheme-segmenter.mjs)
 * that answers plain text without Intl.Segmenter. Its clusters must be Intl.Segmenter's: a
 * wrong split would cut a character in two or misplace every colour on a line.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs build helper, no types
import { buildStandaloneTable, graphemeSegmenterSource, useSharedSegmenter } from '../../scripts/grapheme-segmenter.mjs';

interface Segment {
  readonly segment: string;
  readonly index: number;
  readonly input: string;
}
interface Segments extends Iterable<Segment> {
  containing(index?: number): Segment | undefined;
}

let shared: { segment(text: string): Segments };
let dir: string;
const intl = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'baton-segmenter-'));
  writeFileSync(path.join(dir, 'segmenter.mjs'), graphemeSegmenterSource(buildStandaloneTable()) as string);
  shared = (await import(pathToFileURL(path.join(dir, 'segmenter.mjs')).href)).graphemeSegmenter;
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const plain = (segments: Iterable<Segment>) => [...segments].map(({ segment, index, input }) => ({ segment, index, input }));
const at = (segment: Segment | undefined) => (segment ? { segment: segment.segment, index: segment.index } : undefined);

describe('the shared grapheme segmenter', () => {
  it('splits any mix of screen text, ANSI codes, controls, marks, joiners, emoji and CJK as Intl.Segmenter does, and finds the same cluster at every index', () => {
    const pieces = ['a', ' ', '─', '│', '…', '✓', '✗', '·', '→', 'é', '\u001B[1m', '\u001B[22m', '\u009B31m', '\r', '\n', '\r\n', '\t', '\u0007',
      '\u0301', '\u200D', '\uFE0F', '👍', '👩‍💻', '🇫🇷', '中', 'ｶ', 'ﾞ', '\u1100\u1161', '\u00AD', '\uD800', '☀', '\u2028', '\u0600'];
    const text = fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ unit: 'grapheme', maxLength: 3 })), { maxLength: 14 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(text, (s) => {
        expect(plain(shared.segment(s))).toEqual(plain(intl.segment(s)));
        for (let i = -1; i <= s.length; i++) expect(at(shared.segment(s).containing(i)), `containing(${i}) of ${JSON.stringify(s)}`).toEqual(at(intl.segment(s).containing(i)));
      }),
      { numRuns: 3000 },
    );
  });

  it('answers the text baton draws without Intl.Segmenter', () => {
    const original = Intl.Segmenter;
    try {
      (Intl as { Segmenter: unknown }).Segmenter = class {
        constructor() {
          throw new Error('Intl.Segmenter was built for plain screen text');
        }
      };
      const line = '\u001B[1mbaton status\u001B[22m  ✓ in sync · ─── │ …';
      expect([...shared.segment(line)].map((s) => s.segment).join('')).toBe(line);
    } finally {
      (Intl as { Segmenter: unknown }).Segmenter = original;
    }
  });

  it('refuses a package whose segmenter declaration is not there exactly once', () => {
    expect(() => useSharedSegmenter('const x = 1;', 'const segmenter = new Intl.Segmenter();', 'segmenter', 'baton-grapheme-segmenter')).toThrow(/expected exactly one/);
  });
});
