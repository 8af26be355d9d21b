import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutsideText, isPlain, jsonForTerminal, shown, SHOWN_MAX } from '../src/outside-text.js';

/** Every code point a terminal acts on instead of drawing (see src/outside-text.ts). */
function steers(ch: string): boolean {
  const c = ch.codePointAt(0) ?? 0;
  return (
    c < 0x20 ||
    (c >= 0x7f && c <= 0x9f) ||
    c === 0x061c ||
    (c >= 0x200b && c <= 0x200f) ||
    (c >= 0x2028 && c <= 0x202e) ||
    (c >= 0x2060 && c <= 0x2069) ||
    c === 0xfeff ||
    (c >= 0xd800 && c <= 0xdfff)
  );
}

const hostile = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0x9f }).map((c) => String.fromCharCode(c)),
    fc.constantFrom('\u202e', '\u2066', '\u2069', '\u200f', '\u2028', '\ufeff', '\ud800', '\udc00', '✓', 'é'),
    fc.constantFrom('\x1b[8m', '\x1b]0;title\x07', '\x9b31m', '\r', '\n'),
  ),
  maxLength: 400,
});

describe('shown: text from outside is drawn, never obeyed', () => {
  it('leaves no steering character and bounds the length, for any input', () => {
    fc.assert(
      fc.property(hostile, (raw) => {
        const out = shown(raw);
        expect(Array.from(out).some(steers)).toBe(false);
        expect(Array.from(out).length).toBeLessThanOrEqual(SHOWN_MAX * 6 + 20);
      }),
      { numRuns: 500 },
    );
  });

  it('names each escape visibly', () => {
    expect(shown('a\x1b[8mb')).toBe('a\\x1b[8mb');
    expect(shown('x\ny\rz\t')).toBe('x\\ny\\rz\\t');
    expect(shown('\u202eabc')).toBe('\\u202eabc');
    expect(shown('\x9b')).toBe('\\x9b');
    expect(shown('ok ✓ é')).toBe('ok ✓ é');
    expect(shown('😀')).toBe('😀');
    expect(shown('\ud83d')).toBe('\\ud83d');
  });

  it('cuts a 10 KB string and says how much it left out', () => {
    const out = shown('a'.repeat(10_240));
    expect(out).toBe(`${'a'.repeat(SHOWN_MAX)}…(+${10_240 - SHOWN_MAX})`);
  });

  it('isPlain is true only for what shown leaves as it is', () => {
    fc.assert(
      fc.property(hostile, (raw) => {
        expect(isPlain(raw)).toBe(shown(raw) === raw);
      }),
    );
  });
});

describe('OutsideText', () => {
  it('escapes when interpolated and stays raw in JSON', () => {
    const t = new OutsideText('ctl-a\x1b[8m\nNext: baton sync --force');
    expect('by ' + String(t)).toBe('by ctl-a\\x1b[8m\\nNext: baton sync --force');
    expect((JSON.parse(JSON.stringify({ t })) as { t: string }).t).toBe(t.raw);
  });

  it('jsonForTerminal leaves no raw steering character and decodes to the same value', () => {
    fc.assert(
      fc.property(hostile, (raw) => {
        const text = jsonForTerminal({ raw });
        expect(Array.from(text).some(steers)).toBe(false);
        expect((JSON.parse(text) as { raw: string }).raw).toBe(raw);
      }),
      { numRuns: 300 },
    );
  });
});
