/**
 * The keys of DESIGN.md §9, in one table. `q` quits (never while typing), Ctrl-C always quits
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
