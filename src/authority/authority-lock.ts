import { constants } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
import { BatonError, isBatonError } from '../errors.js';
import { DIR_MODE, KEY_MODE, layoutOf } from './layout.js';
import { errorCode } from '../fs/system-error.js';
import { flockExclusive, nativeModuleProblem, type FlockResult } from '../fs/flock.js';

const RETRY_MS = 25;

/**
 * Runs `fn` holding ca.lock: flock(LOCK_EX|LOCK_NB) on a descriptor of its own. flock belongs to
 * the open file description, so a second holder in THIS process (another descriptor) is refused
 * exactly like one in another process, and the kernel releases it when the holder dies — a lock
 * a crashed baton kept forever would block every failover after it. Busy fails at once with
 * BatonError('lock-busy') naming the lock file, unless `waitMs` bounds a wait.
 */
export async function withAuthorityLock<T>(
  stateDir: string,
  fn: () => Promise<T>,
  opts?: { readonly waitMs?: number },
): Promise<T> {
  const { lock } = layoutOf(stateDir);
  const existed = await stat(lock).then(
    () => true,
    () => false,
  );
  const createdDir = await mkdir(stateDir, { recursive: true, mode: DIR_MODE });
  let handle;
  try {
    handle = await open(lock, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, KEY_MODE);
  } catch (error) {
    throw new BatonError('failed', {
      what: `The authority lock cannot be opened (${errorCode(error)}).`,
      where: lock,
      next: 'Check that the state dir is writable by this user and that ca.lock is a regular file.',
      changed: 'Nothing was written.',
      cause: error,
    });
  }
  try {
    if (((await handle.stat()).mode & 0o777) !== KEY_MODE) await handle.chmod(KEY_MODE);
    await acquire(handle.fd, lock, opts?.waitMs ?? 0);
    return await fn();
  } catch (error) {
    // Whatever the error says changed ("Nothing was written" is true of the authority), taking
    // the lock created the lock file (and the state dir): say so rather than claim an
    // untouched disk. The lock file is not removed: unlinking a lock another process may have
    // opened would let two holders lock two different files.
    if (!existed && isBatonError(error)) {
      const lockNote = createdDir
        ? `the state dir ${stateDir} and its lock file ca.lock; they hold nothing`
        : `the lock file ${lock}; it holds nothing`;
      throw new BatonError(error.code, {
        what: error.what,
        ...(error.where === undefined ? {} : { where: error.where }),
        ...(error.next === undefined ? {} : { next: error.said ?? error.next }),
        ...(error.reason === undefined ? {} : { reason: error.reason }),
        changed:
          error.changed === undefined
            ? `Taking the lock created ${lockNote}.`
            : `${error.changed} (Taking the lock created ${lockNote}.)`,
        cause: error,
      });
    }
    throw error;
  } finally {
    // Closing the descriptor releases the flock; nothing else holds it.
    await handle.close();
  }
}

async function acquire(fd: number, lock: string, waitMs: number): Promise<void> {
  let taken: FlockResult;
  try {
    taken = await flockExclusive(fd, waitMs, RETRY_MS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A native module built for another Node.js is not the file system's fault: say which.
    const native = nativeModuleProblem(error);
    throw new BatonError('failed', {
      what: native
        ? `The authority lock cannot be taken: ${native.what}`
        : `The authority lock cannot be taken (${code ?? String(error)}).`,
      where: lock,
      next: native?.next ?? 'Check the file system that holds the state dir supports flock.',
      changed: 'Nothing was written.',
      cause: error,
    });
  }
  if (taken === 'busy') {
    throw new BatonError('lock-busy', {
      what: 'The authority lock is held by another baton (or another operation in this one).',
      where: lock,
      next:
        'Wait for the other operation to finish and try again; `fuser -v ' + lock + '` shows who holds it.',
      changed: 'Nothing was written.',
    });
  }
}

/** Whether another process holds ca.lock right now (failover probes it; status never does). */
export type AuthorityLockProbe =
  | { readonly state: 'free' }
  | { readonly state: 'busy'; readonly error: BatonError }
  | { readonly state: 'not-probed' };

/**
 * Is another process holding ca.lock? A lock file that does not exist is held by nobody, and
 * is NOT created here: the failover walk writes nothing before the final confirm.
 */
export async function probeAuthorityLock(stateDir: string): Promise<AuthorityLockProbe> {
  const exists = await stat(layoutOf(stateDir).lock).then(
    () => true,
    () => false,
  );
  if (!exists) return { state: 'free' };
  try {
    await withAuthorityLock(stateDir, async () => undefined);
    return { state: 'free' };
  } catch (error) {
    if (isBatonError(error) && error.code === 'lock-busy') return { state: 'busy', error };
    return { state: 'not-probed' };
  }
}
