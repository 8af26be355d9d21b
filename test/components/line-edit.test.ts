import { describe, expect, it } from 'vitest';
import type { Key } from 'ink';
import { editLine } from '../../components/line-edit.js';
import { wrapWords } from '../../components/layout.js';
import { cursorAddressable } from '../../src/commands/terminal-kind.js';

const NO_KEY: Key = {
  upArrow: false,
  downArrow: false,
  leftArrow: false,
  rightArrow: false,
  pageDown: false,
  pageUp: false,
  home: false,
  end: false,
  return: false,
  escape: false,
  ctrl: false,
  shift: false,
  tab: false,
  backspace: false,
  delete: false,
  meta: false,
  super: false,
  hyper: false,
  capsLock: false,
  numLock: false,
};
const key = (over: Partial<Key> = {}): Key => ({ ...NO_KEY, ...over });

describe('a gate field edits like a shell line', () => {
  it('erases one character per DEL or BS byte, even when several arrive in one read', () => {
    expect(editLine('abcdefgh', '\x7f\x7f\x7f', key())).toBe('abcde');
    expect(editLine('abc', '\b\b', key())).toBe('a');
    expect(editLine('abc', '', key({ backspace: true }))).toBe('ab');
    expect(editLine('', '\x7f', key())).toBe('');
  });

  it('Ctrl-U clears the field and Ctrl-W erases the last word; neither types a letter', () => {
    expect(editLine('abcd efgh', 'u', key({ ctrl: true }))).toBe('');
    expect(editLine('abcd efgh', 'w', key({ ctrl: true }))).toBe('abcd ');
    expect(editLine('abcd efgh  ', 'w', key({ ctrl: true }))).toBe('abcd ');
    expect(editLine('abcd', '\x15', key())).toBe('');
  });

  it('types printable text, takes only what `accept` allows, and leaves Enter, Esc and arrows to the screen', () => {
    expect(editLine('ab', 'cd', key())).toBe('abcd');
    expect(editLine('1', 'a9', key(), (c) => /\d/.test(c))).toBe('19');
    expect(editLine('1', 'q', key(), (c) => /\d/.test(c))).toBeUndefined();
    expect(editLine('ab', '', key({ return: true }))).toBeUndefined();
    expect(editLine('ab', '', key({ escape: true }))).toBeUndefined();
    expect(editLine('ab', '', key({ upArrow: true }))).toBeUndefined();
    expect(editLine('ab', 'x', key({ meta: true }))).toBeUndefined();
  });
});

describe('the renderer decision and the middle ellipsis', () => {
  it('draws with Ink only on a TTY that names a terminal able to address the cursor and reports a size', () => {
    const tty = { isTTY: true, columns: 80, rows: 24 };
    expect(cursorAddressable(tty, { TERM: 'xterm-256color' })).toBe(true);
    expect(cursorAddressable(tty, { TERM: 'dumb' })).toBe(false);
    expect(cursorAddressable(tty, {})).toBe(false);
    expect(cursorAddressable({ isTTY: true, columns: 0, rows: 0 }, { TERM: 'xterm' })).toBe(false);
    expect(cursorAddressable({ isTTY: false, columns: 80, rows: 24 }, { TERM: 'xterm' })).toBe(false);
  });

  it('wraps a path longer than the line onto the next, never cutting it', () => {
    const p = '/var/lib/baton/worker1/.baton/ca.superseded-20261130T103102Z';
    const lines = wrapWords(p, 30, 2);
    expect(lines.every((line) => [...line].length <= 30)).toBe(true);
    expect(lines.map((line) => line.trim()).join('')).toBe(p);
    expect(lines.join('')).not.toContain('…');
    expect(wrapWords('/short', 30)).toEqual(['/short']);
  });
});
