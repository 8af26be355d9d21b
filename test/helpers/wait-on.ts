/**
 * A wait tied to the thing awaited, not to a wall-clock guess: `check` is polled for as long as
 * the process that can make it pass is running, and the wait fails at once (with the check's
 * last words) when that process is gone and the check still fails. A loaded machine then makes
 * the run slower, not red; the test's own timeout is the only bound on a process that hangs.
 */
import type { ChildProcess } from 'node:child_process';

export type Awaited = Pick<ChildProcess, 'exitCode' | 'signalCode'> | (() => boolean);

function running(source: Awaited): boolean {
  return typeof source === 'function' ? source() : source.exitCode === null && source.signalCode === null;
}

export async function waitOn<T>(
  check: () => T | Promise<T>,
  source: Awaited,
  what: string,
  intervalMs = 20,
): Promise<T> {
  for (;;) {
    // Read before checking: a check that fails after the process exited had its last chance.
    const alive = running(source);
    try {
      return await check();
    } catch (error) {
      if (!alive)
        throw new Error(`${what}: the process it waited on has exited (${(error as Error).message})`, {
          cause: error,
        });
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
