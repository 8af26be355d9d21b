import { describe, expect, it } from 'vitest';
import type { Key } from 'ink';
import { createKeyReader, keyIntent, NO_KEY, splitKeys, type KeyEvent } from '../../components/keys.js';
import { editLine } from '../../components/line-edit.js';

const key = (over: Partial<Key> = {}): Key => ({ ...NO_KEY, ...over });

/** What a press looks like in a failure message: `j`, `⏎`, `Esc`, `^u`, `⌫`. */
function show(event: KeyEvent): string {
  if (event.kind === 'paste') return `paste(${event.text})`;
  const k = event.key;
  if (k.return) return '⏎';
  if (k.escape) return 'Esc';
  if (k.backspace || k.delete) return '⌫';
  if (k.upArrow) return '↑';
  if (k.downArrow) return '↓';
  if (k.ctrl) return `^${event.input}`;
  return event.input;
}

/** Ink's events for one read, as its useInput hands them over (ESC sequences already cut). */
function readOnce(events: readonly [string, Partial<Key>?][], reader = createKeyReader()): string[] {
  const out = events.flatMap(([input, over]) => reader.read(input, key(over)).map(show));
  reader.endRead();
  return out;
}

describe('the key reader: one read, several keys', () => {
  it('splits a run of plain characters into keys, in order', () => {
    expect(splitKeys('jj', key()).map(show)).toEqual(['j', 'j']);
    expect(splitKeys('j\r', key()).map(show)).toEqual(['j', '⏎']);
    expect(splitKeys('3\r', key()).map(show)).toEqual(['3', '⏎']);
    expect(splitKeys('NPK7rzgd\r', key()).map(show)).toEqual([...'NPK7rzgd', '⏎']);
    expect(splitKeys('N', key({ shift: true }))[0]!.key.shift).toBe(true);
  });

  it('keeps a key Ink already named as it is (an arrow, Enter alone, Ctrl-U, a letter)', () => {
    expect(splitKeys('', key({ downArrow: true })).map(show)).toEqual(['↓']);
    expect(splitKeys('', key({ return: true })).map(show)).toEqual(['⏎']);
    expect(splitKeys('u', key({ ctrl: true })).map(show)).toEqual(['^u']);
    expect(splitKeys('\n', key()).map(show)).toEqual(['⏎']);
  });

  it('turns a Backspace burst (three DEL bytes in one read) into three erasures', () => {
    const keys = splitKeys('\x7f\x7f\x7f', key());
    expect(keys.map(show)).toEqual(['⌫', '⌫', '⌫']);
    expect(keys.reduce((text, k) => editLine(text, k.input, k.key) ?? text, 'abcdefgh')).toBe('abcde');
    expect(splitKeys('ab\x15c', key()).map(show)).toEqual(['a', 'b', '^u', 'c']);
  });

  it('reads Esc typed quickly before a key (Ink: one Meta key) as Esc first; Esc-q still quits', () => {
    expect(splitKeys('', key({ return: true, meta: true })).map(show)).toEqual(['Esc', '⏎']);
    expect(splitKeys('j', key({ meta: true })).map(show)).toEqual(['Esc', 'j']);
    expect(keyIntent('q', key({ meta: true }))).toBe('quit');
    expect(splitKeys('q', key({ meta: true }))).toHaveLength(1);
  });

  it('delivers arrows sent several at once (one Ink event each) in order', () => {
    expect(
      readOnce([
        ['', { downArrow: true }],
        ['', { downArrow: true }],
        ['', { upArrow: true }],
      ]),
    ).toEqual(['↓', '↓', '↑']);
  });

  it('drops the keys after an Enter or an Esc in the same read, across Ink events, and takes the next read whole', () => {
    const reader = createKeyReader();
    expect(readOnce([['j\rxyz'], ['', { downArrow: true }]], reader)).toEqual(['j', '⏎']);
    expect(readOnce([['', { escape: true, meta: true }], ['\r']], reader)).toEqual(['Esc']);
    expect(readOnce([['jj']], reader)).toEqual(['j', 'j']);
    expect(readOnce([['\r\r']], reader)).toEqual(['⏎']);
  });

  it('never drops Ctrl-C, even after an Enter in the same read', () => {
    expect(readOnce([['ab\rcd\x03']])).toEqual(['a', 'b', '⏎', '^c']);
    expect(readOnce([['\r'], ['c', { ctrl: true }]])).toEqual(['⏎', '^c']);
  });

  it('takes a bracketed paste as text, never as keys: its line breaks press nothing', () => {
    expect(readOnce([['[200~'], ['NPK7rzgd'], ['[201~']])).toEqual(['paste(NPK7rzgd)']);
    expect(readOnce([['[200~'], ['NPK7\r\nrzgd\r'], ['[201~'], ['\r']])).toEqual(['paste(NPK7rzgd)', '⏎']);
  });

  it('a paste that spans reads stays a paste; one that began after an Enter is dropped whole', () => {
    const reader = createKeyReader();
    expect(readOnce([['[200~'], ['NPK7']], reader)).toEqual(['paste(NPK7)']);
    expect(readOnce([['rzgd'], ['[201~'], ['q']], reader)).toEqual(['paste(rzgd)', 'q']);
    expect(readOnce([['\r'], ['[200~'], ['abc']], reader)).toEqual(['⏎']);
    expect(readOnce([['def\r'], ['[201~']], reader)).toEqual([]);
    expect(readOnce([['j']], reader)).toEqual(['j']);
  });
});
