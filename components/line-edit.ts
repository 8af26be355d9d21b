/**
 * Line editing for the typed gates, as a pure function of (text, key): what a shell's line
 * discipline does, because that is what an operator's fingers expect. Over SSH a held
 * Backspace arrives as several DEL bytes in ONE read, which Ink hands over as a single
 * unnamed input: each byte must erase one character, or the field silently ignores them.
 */
import type { Key } from 'ink';

const ERASE = new Set(['\x7f', '\b']);
const KILL_LINE = '\x15'; // Ctrl-U
const KILL_WORD = '\x17'; // Ctrl-W

/** Removes the last word and the spaces after it (Ctrl-W). */
function killWord(text: string): string {
  return text.replace(/\S*\s*$/, '');
}

/**
 * The field's text after one key, or undefined when the key is not an edit (Enter, Esc,
 * arrows: they belong to the screen). `accept` filters what may be typed (digits for a count).
 */
export function editLine(
  text: string,
  input: string,
  key: Key,
  accept: (char: string) => boolean = () => true,
): string | undefined {
  if (
    key.return ||
    key.escape ||
    key.upArrow ||
    key.downArrow ||
    key.leftArrow ||
    key.rightArrow ||
    key.tab ||
    key.pageUp ||
    key.pageDown
  )
    return undefined;
  if (key.ctrl && input === 'u') return '';
  if (key.ctrl && input === 'w') return killWord(text);
  if (key.backspace || key.delete) return text.slice(0, -1);
  if (key.ctrl || key.meta) return undefined;
  let next = text;
  let edited = false;
  for (const char of input) {
    if (ERASE.has(char)) next = next.slice(0, -1);
    else if (char === KILL_LINE) next = '';
    else if (char === KILL_WORD) next = killWord(next);
    else if (char >= ' ' && char <= '~' && accept(char)) next += char;
    else continue;
    edited = true;
  }
  return edited ? next : undefined;
}
