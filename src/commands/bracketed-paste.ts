/**
 * Bracketed paste (xterm's mode 2004), asked of the terminal for as long as a view can read
 * keys. Terminals wrap a paste in ESC[200~ … ESC[201~ ONLY when a program asks; without the
 * wrapper a pasted `EfD4cwwP⏎` is eight keys and an Enter, and the Enter confirms a force
 * gate. The key reader (components/keys.ts) takes the wrapped text as text for a field, its
 * line breaks pressing nothing.
 *
 * The mode outlives the process in the terminal (a shell after baton would get its pastes
 * wrapped), so it is turned off on every way out: a normal end, `process.exit`, an uncaught
 * error (Node emits 'exit' for both) and SIGINT/SIGTERM/SIGHUP. SIGKILL cannot be caught.
 */
import { writeSync } from 'node:fs';

export const BRACKETED_PASTE_ON = '\u001b[?2004h';
export const BRACKETED_PASTE_OFF = '\u001b[?2004l';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Turns bracketed paste on for `stdout` (a terminal only); returns what turns it off, once. */
export function holdBracketedPaste(stdout: { readonly isTTY?: boolean; readonly fd?: unknown }): () => void {
  const fd = stdout.fd;
  if (!stdout.isTTY || typeof fd !== 'number') return () => undefined;
  let on = true;
  const off = (): void => {
    if (!on) return;
    on = false;
    process.removeListener('exit', off);
    for (const [signal, handler] of handlers) process.removeListener(signal, handler);
    try {
      // Synchronous: on 'exit' and in a signal handler a queued stream write never lands.
      writeSync(fd, BRACKETED_PASTE_OFF);
    } catch {
      // The terminal is gone (SIGHUP of a dropped session): nothing is left to reset.
    }
  };
  const handlers = SIGNALS.map((signal) => {
    const handler = (): void => {
      off();
      // A listener takes the signal's default action away. When no one else handles it (the
      // drill and the rotation do), the process must still end by that signal, as it would have.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    return [signal, handler] as const;
  });
  try {
    writeSync(fd, BRACKETED_PASTE_ON);
  } catch {
    return () => undefined;
  }
  process.on('exit', off);
  for (const [signal, handler] of handlers) process.on(signal, handler);
  return off;
}
