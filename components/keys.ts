/**
 * The keys of docs/cli.md, in one table. `q` quits (never while typing), Ctrl-C always quits
 * (Ink's own handler), Esc goes back and NEVER quits, and no single key writes anything: every
 * write sits behind a confirm screen.
 */
import type { Key } from 'ink';

export type KeyIntent = 'quit' | 'back' | 'help' | 'refresh' | 'up' | 'down' | 'select';

export interface KeyHelp {
  readonly keys: string;
  readonly does: string;
}

/** The same two keys on every screen that has them, in the same words. */
export const QUIT_KEY: KeyHelp = { keys: 'q', does: 'quit (not while typing)' };
export const CTRL_C_KEY: KeyHelp = { keys: 'Ctrl-C', does: 'quit' };
/**
 * `q` inside a view the drill opened: it closes that view and the drill goes on. Saying "quit"
 * there makes the operator fear losing the walk, or expect q to end it and be surprised.
 */
export const CLOSE_KEY: KeyHelp = { keys: 'q', does: 'close this view (not while typing)' };

/** A footer's words for `q`: `q quit` becomes `q close` in a closing view. */
export function qWords(text: string, closes: boolean): string {
  return closes ? text.replace(/\bq quit\b/g, 'q close') : text;
}

export function keyIntent(input: string, key: Key): KeyIntent | undefined {
  if (key.escape) return 'back';
  if (key.return) return 'select';
  if (key.upArrow || input === 'k') return 'up';
  if (key.downArrow || input === 'j') return 'down';
  // Esc then q typed quickly (over SSH they arrive in one read) reaches Ink as Meta-q: the
  // operator asked to go back and quit, and quitting is where both end.
  if (key.meta && input === 'q') return 'quit';
  if (key.ctrl || key.meta) return undefined;
  if (input === 'q') return 'quit';
  if (input === '?') return 'help';
  if (input === 'r') return 'refresh';
  return undefined;
}

/** One key, as Ink describes a single key press. */
export interface KeyPress {
  readonly kind: 'key';
  readonly input: string;
  readonly key: Key;
}

/**
 * Text that arrived between the bracketed-paste marks: only what can be typed (line breaks
 * and control bytes are dropped), so a paste never presses Enter, Esc or Ctrl-anything.
 */
export interface Paste {
  readonly kind: 'paste';
  readonly text: string;
}

export type KeyEvent = KeyPress | Paste;

export const NO_KEY: Key = {
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

const press = (input: string, over: Partial<Key> = {}): KeyPress => ({
  kind: 'key',
  input,
  key: { ...NO_KEY, ...over },
});
const ENTER = press('', { return: true });
const ESCAPE = press('', { escape: true, meta: true });

/** Ink hands the bracketed-paste marks (ESC[200~, ESC[201~) over with the ESC taken off. */
const PASTE_START = '[200~';
const PASTE_END = '[201~';

/** One character of a run of plain text, as Ink would describe it had it arrived alone. */
function charKey(char: string): KeyPress | undefined {
  if (char === '\r' || char === '\n') return ENTER;
  if (char === '\t') return press('', { tab: true });
  if (char === '\b') return press('', { backspace: true });
  if (char === '\x7f') return press('', { delete: true });
  const code = char.charCodeAt(0);
  if (code === 0 || code === 0x1b) return undefined;
  if (code <= 0x1a) return press(String.fromCharCode(code + 96), { ctrl: true });
  if (code < 0x20) return undefined;
  return press(char, /[A-Z]/.test(char) ? { shift: true } : {});
}

const isNamed = (key: Key) =>
  key.upArrow ||
  key.downArrow ||
  key.leftArrow ||
  key.rightArrow ||
  key.pageDown ||
  key.pageUp ||
  key.home ||
  key.end ||
  key.return ||
  key.escape ||
  key.tab ||
  key.backspace ||
  key.delete;

/**
 * The keys one of Ink's input events holds, in order. Ink already cuts escape sequences
 * (arrows, PgUp, a lone Esc) into events of their own, but hands a run of plain characters
 * over whole: `j\r`, `jj`, `NPK7rzgd\r`, three DEL bytes of a held Backspace. Each character
 * of such a run is a key. Esc and a character typed quickly after it reach Ink as one "Meta"
 * key: that is Esc, then the character (Esc-q stays the one key that quits from anywhere).
 */
export function splitKeys(input: string, key: Key): readonly KeyPress[] {
  if (key.meta && !key.escape && !key.ctrl) {
    const arrow =
      key.upArrow ||
      key.downArrow ||
      key.leftArrow ||
      key.rightArrow ||
      key.pageDown ||
      key.pageUp ||
      key.home ||
      key.end;
    if (arrow || key.backspace || key.delete || input === 'q') return [{ kind: 'key', input, key }];
    const after = key.return ? ENTER : input.length === 1 ? charKey(input) : undefined;
    return after ? [ESCAPE, after] : [ESCAPE];
  }
  // Ink names a lone \n "enter" without setting `return`; a terminal's Enter is either byte.
  if (input === '\n' && !key.ctrl) return [ENTER];
  if (isNamed(key) || key.ctrl || input === '') return [{ kind: 'key', input, key }];
  const keys: KeyPress[] = [];
  for (const char of input) {
    const one = charKey(char);
    if (one) keys.push(one);
  }
  return keys;
}

export function isCtrlC(press: KeyPress): boolean {
  return press.key.ctrl && press.input === 'c';
}

/** Whether a key ends what the operator can have meant in one read: Enter and Esc change screens. */
export function endsRead(press: KeyPress): boolean {
  return press.key.return || press.key.escape;
}

/**
 * The one key reader every view's input goes through, one per input hook. It turns Ink's
 * input events into keys in order (`splitKeys`) and pastes, and keeps two rules:
 *
 * - Enter and Esc end a read: the keys after them in the same read are dropped. Enter on a
 *   menu can open a typed gate, and what followed it was typed before the operator saw that
 *   gate; it must never land in it (nor confirm what the Enter opened). Keys are never handed
 *   to the screen an Enter opened, only dropped. Ctrl-C is the exception: it always quits.
 * - A bracketed paste is text for a field, never keys: pasted line breaks do not press Enter.
 *   A paste that began in a dropped part of a read is dropped whole.
 *
 * `endRead` is called once the read is over (the hook queues it when a read was cut short).
 */
export interface KeyReader {
  read(input: string, key: Key): readonly KeyEvent[];
  /** Whether the rest of the current read is being dropped. */
  readonly cutShort: boolean;
  endRead(): void;
}

export function createKeyReader(): KeyReader {
  let cutShort = false;
  let paste: 'none' | 'taking' | 'dropping' = 'none';
  return {
    get cutShort() {
      return cutShort;
    },
    endRead() {
      cutShort = false;
    },
    read(input, key) {
      const plain = !key.ctrl && !key.meta && !isNamed(key);
      if (plain && input === PASTE_START) {
        paste = cutShort ? 'dropping' : 'taking';
        return [];
      }
      if (plain && input === PASTE_END) {
        paste = 'none';
        return [];
      }
      if (paste === 'dropping') return [];
      if (paste === 'taking') {
        const text = [...input].filter((char) => char >= ' ' && char !== '\x7f').join('');
        return text === '' ? [] : [{ kind: 'paste', text }];
      }
      // Ctrl-C is never dropped: it quits from anywhere, even after an Enter in the same read.
      if (cutShort) return splitKeys(input, key).filter(isCtrlC);
      const delivered: KeyEvent[] = [];
      for (const one of splitKeys(input, key)) {
        if (!cutShort || isCtrlC(one)) delivered.push(one);
        if (endsRead(one)) cutShort = true;
      }
      return delivered;
    },
  };
}
