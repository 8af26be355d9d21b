/**
 * A kernel `flock(LOCK_EX|LOCK_NB)` on a descriptor of its own, retried until `waitMs`. flock
 * belongs to the open file description, so a second holder in THIS process is refused exactly
 * like one in another process, and the kernel releases it when the holder dies: a lock a
 * crashed baton kept for ever would block every operator after it.
 */
export type FlockResult = 'taken' | 'busy';

/** Takes the lock on `fd`; 'busy' once `waitMs` has passed; other errors (no flock support) throw. */
export async function flockExclusive(fd: number, waitMs: number, retryMs = 25): Promise<FlockResult> {
  const fsExt = await import('fs-ext');
  const flockSync =
    (fsExt as Partial<typeof fsExt>).flockSync ??
    (fsExt as unknown as { default: typeof fsExt }).default.flockSync;
  const deadline = Date.now() + Math.max(0, waitMs);
  for (;;) {
    try {
      flockSync(fd, 'exnb');
      return 'taken';
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw error;
      if (Date.now() >= deadline) return 'busy';
      await new Promise((resolve) => setTimeout(resolve, retryMs));
    }
  }
}
