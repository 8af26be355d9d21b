/**
 * A kernel `flock(LOCK_EX|LOCK_NB)` on a descriptor of its own, retried until `waitMs`. flock
 * belongs to the open file description, so a second holder in THIS process is refused exactly
 * like one in another process, and the kernel releases it when the holder dies: a lock a
 * crashed baton kept for ever would block every operator after it.
 */
export type FlockResult = 'taken' | 'busy';

type FlockSync = (fd: number, flags: 'exnb' | 'un') => void;

async function flockSyncOf(): Promise<FlockSync> {
  const fsExt = await import('fs-ext');
  return (
    (fsExt as Partial<typeof fsExt>).flockSync ??
    (fsExt as unknown as { default: typeof fsExt }).default.flockSync
  );
}

/** Takes the lock on `fd`; 'busy' once `waitMs` has passed; other errors (no flock support) throw. */
export async function flockExclusive(fd: number, waitMs: number, retryMs = 25): Promise<FlockResult> {
  const flockSync = await flockSyncOf();
  const deadline = Date.now() + Math.max(0, waitMs);
  for (;;) {
    if (tryFlock(flockSync, fd)) return 'taken';
    if (Date.now() >= deadline) return 'busy';
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

/**
 * Whether another description holds the lock of `fd`, by taking it and letting it go in the
 * same synchronous step. A probe that let go only by closing would hold the lock until its
 * close ran — a close queued behind other file work on libuv's four threads can take longer
 * than a taker's grace, and the taker was refused by a probe that never said who it was.
 */
export async function flockHeldElsewhere(fd: number): Promise<boolean> {
  const flockSync = await flockSyncOf();
  if (!tryFlock(flockSync, fd)) return true;
  flockSync(fd, 'un');
  return false;
}

/** Lets the lock of `fd` go now, not when a queued close gets to it (see flockHeldElsewhere). */
export async function flockRelease(fd: number): Promise<void> {
  (await flockSyncOf())(fd, 'un');
}

function tryFlock(flockSync: FlockSync, fd: number): boolean {
  try {
    flockSync(fd, 'exnb');
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') throw error;
    return false;
  }
}
