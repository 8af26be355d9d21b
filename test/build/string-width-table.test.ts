/**
 * The bundle's string-width answers from a build-time table (scripts/string-width-table.mjs)
 * so the first TTY frame skips string-width's slow first call. Every answer must equal the
 * package's own: a wrong width would misalign every line Ink draws.
 */
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error a plain .mjs build helper, no types
import { buildWidthTable, rewriteStringWidth, TABLE_RANGES } from '../../scripts/string-width-table.mjs';

type Width = (text: unknown, options?: { ambiguousIsNarrow?: boolean; countAnsiEscapeCodes?: boolean }) => number;

const REPO = path.resolve(import.meta.dirname, '../..');
const SOURCE = path.join(REPO, 'node_modules', 'string-width', 'index.js');

let original: Width;
let table: [number, string][];
let rewritten: Width;
let dir: string;

beforeAll(async () => {
  original = (await import(pathToFileURL(SOURCE).href)).default as Width;
  table = buildWidthTable(original) as [number, string][];
  // The rewritten module imports string-width's own dependencies: a node_modules link resolves them.
  dir = mkdtempSync(path.join(os.tmpdir(), 'baton-string-width-'));
  symlinkSync(path.join(REPO, 'node_modules'), path.join(dir, 'node_modules'));
  writeFileSync(path.join(dir, 'index.mjs'), rewriteStringWidth(readFileSync(SOURCE, 'utf8'), table) as string);
  rewritten = (await import(pathToFileURL(path.join(dir, 'index.mjs')).href)).default as Width;
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const inTable = (ch: string) => table.some(([first, widths]) => /[0-2]/.test(widths[ch.charCodeAt(0) - first] ?? ''));

describe('string-width from the build-time table', () => {
  it('gives string-width\'s width for every code point of the table ranges, alone and followed by a combining mark', () => {
    for (const [first, last] of TABLE_RANGES as [number, number][]) {
      for (let cp = first; cp <= last; cp++) {
        const ch = String.fromCodePoint(cp);
        expect(rewritten(ch), `U+${cp.toString(16)}`).toBe(original(ch));
        expect(rewritten(`${ch}\u0301`), `U+${cp.toString(16)} + U+0301`).toBe(original(`${ch}\u0301`));
        expect(rewritten(`${ch}\uFE0F`), `U+${cp.toString(16)} + VS16`).toBe(original(`${ch}\uFE0F`));
      }
    }
  });

  it('gives string-width\'s width for any mix of table characters, ANSI styles, emoji, CJK, marks and joiners, under every option', () => {
    const pieces = ['a', ' ', '─', '│', '…', '✓', '✗', '·', '!', '→', 'é', '\u001B[1m', '\u001B[22m', '\u001B[38;5;2m', '\u009B31m',
      '\u0301', '\u200D', '\uFE0F', '👍', '👩‍💻', '🇫🇷', '中', 'ｶ', 'ﾞ', '\u1100\u1161', '\t', '\u00AD', '\uD800', '☀', '⌚', '\u2028'];
    const text = fc.array(fc.oneof(fc.constantFrom(...pieces), fc.string({ unit: 'grapheme', maxLength: 3 })), { maxLength: 12 }).map((parts) => parts.join(''));
    const options = fc.constantFrom(undefined, {}, { ambiguousIsNarrow: false }, { countAnsiEscapeCodes: true });
    fc.assert(fc.property(text, options, (s, o) => rewritten(s, o) === original(s, o)), { numRuns: 3000 });
  });

  it('answers non-strings and empty strings as string-width does', () => {
    for (const value of [undefined, null, 3, '', {}]) expect(rewritten(value)).toBe(original(value));
  });

  it('holds the characters baton\'s screens draw with, so they never reach the slow path', () => {
    for (const ch of ['─', '│', '…', '✓', '✗', '·', '→', '•', '×', '—', '▸']) expect(inTable(ch), ch).toBe(true);
    // and leaves to string-width what joins or is an emoji
    for (const ch of ['\u200D', '\u0301', '\uFE0F']) expect(inTable(ch), `U+${ch.charCodeAt(0).toString(16)}`).toBe(false);
  });

  it('refuses a string-width whose source no longer has the expected shape', () => {
    expect(() => rewriteStringWidth('export default function stringWidth(a) { return 1; }', table)).toThrow(/string-width: expected exactly one/);
  });
});

