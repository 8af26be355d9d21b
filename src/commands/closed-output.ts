/**
 * Output nobody reads any more — a closed pipe (`baton mesh plan | head -3`, EPIPE) or a
 * terminal that went away (tmux killed, the ssh session dropped: EIO on every read, write and
 * ioctl of the pty) — is dropped, never fatal. Unhandled, Node ends the process on the stream's
 * 'error' event, in the middle of a rotation, after a provider commit, with nothing rolled
 * back. Here the command carries on to its own end: a rotation still finishes or rolls back
 * each pair (all or nothing, and the journal records which), which is safer than stopping
 * half-way.
 */
import { closeSync } from 'node:fs';
import { isatty } from 'node:tty';

/**
 * The codes a stream reports once its reader or its terminal is gone. EIO is a hung-up pty;
 * ENXIO and EBADF a terminal revoked or closed under us; the rest a pipe or socket closed.
 */
const GONE = new Set(['EPIPE', 'EIO', 'ENXIO', 'EBADF', 'ECONNRESET', 'ENOTCONN', 'ERR_STREAM_DESTROYED']);

/** Whether `error` says the other end of an output (or input) is gone, rather than a fault to report. */
export function isGoneEndError(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return typeof code === 'string' && GONE.has(code);
}

interface Marked {
  batonClosedOutput?: boolean;
}

const watchers = new WeakMap<NodeJS.EventEmitter, { closed: boolean; listeners: Set<() => void> }>();

/**
 * Drops the errors of an output (or input) whose other end is gone, once per stream however
 * often it is asked, and remembers that it closed: `closed()` tells a writer to stop writing,
 * `onClose` (once) tells a rotation on a terminal that nobody will press q.
 */
export function keepGoingWhenOutputCloses(
  stream: NodeJS.EventEmitter,
  onClose?: () => void,
): { readonly closed: () => boolean } {
  let watch = watchers.get(stream);
  if (!watch) {
    const state = { closed: false, listeners: new Set<() => void>() };
    watch = state;
    watchers.set(stream, state);
    const onError = (error: NodeJS.ErrnoException) => {
      if (!isGoneEndError(error)) throw error;
      if (state.closed) return;
      state.closed = true;
      for (const listener of state.listeners) listener();
    };
    if (!stream.listeners('error').some((l) => (l as Marked).batonClosedOutput)) {
      Object.assign(onError, { batonClosedOutput: true });
      stream.on('error', onError);
    }
  }
  if (onClose) {
    if (watch.closed) onClose();
    else watch.listeners.add(onClose);
  }
  const seen = watch;
  return { closed: () => seen.closed };
}

/**
 * Installed once by the entry point, for every command: stdout, stderr and stdin drop the
 * errors of a terminal or pipe that went away (Ink reads stdin and sets raw mode; both fail
 * with EIO on a hung-up pty), and at exit a standard descriptor that was a terminal and is one
 * no more is closed. Node restores the terminal's mode at exit and ABORTS ("Assertion failed …
 * ResetStdio") when that fails with EIO; it skips a descriptor the program closed. Closing
 * only at exit keeps the descriptor number from being reused by a file while output still goes
 * to it.
 */
export function surviveLostTerminal(
  proc: Pick<NodeJS.Process, 'stdout' | 'stderr' | 'stdin' | 'on'> = process,
): void {
  const wasTerminal = [0, 1, 2].map((fd) => isatty(fd));
  keepGoingWhenOutputCloses(proc.stdout);
  keepGoingWhenOutputCloses(proc.stderr);
  // A terminal's stdin only: reading process.stdin opens a stream on it (a socket for a pipe).
  if (wasTerminal[0]) keepGoingWhenOutputCloses(proc.stdin);
  proc.on('exit', () => {
    for (const fd of [0, 1, 2])
      if (wasTerminal[fd] && !isatty(fd))
        try {
          closeSync(fd);
        } catch {
          // Already closed: nothing for Node to restore either.
        }
  });
}
