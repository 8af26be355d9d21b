/**
 * A FILE-SYSTEM FAILURE IS NOT A BUG IN BATON. A read-only mount (EROFS), a name too long for
 * the file system (ENAMETOOLONG), a permission (EACCES, EPERM) or a full disk (ENOSPC, EDQUOT)
 * once reached the operator as "unexpected error … a bug in baton": the code, the path and what
 * to do are what they need. The path comes from outside (a flag, the config, a file name), so it
 * is shown through src/outside-text.ts.
 */
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import { isSystemError } from './system-error.js';

const WHAT_TO_DO: Readonly<Record<string, { readonly what: string; readonly next: string }>> = {
  EROFS: {
    what: 'the file system is mounted read-only',
    next: 'Remount it read-write (or point --state-dir / the path at a writable file system), then run the command again.',
  },
  ENAMETOOLONG: {
    what: 'the path, or one name in it, is longer than the file system allows',
    next: 'Use a shorter path (--state-dir, store URL, seal_key_file), then run the command again.',
  },
  EACCES: {
    what: 'permission was denied',
    next: 'Run baton as the user that owns the state dir (often root), or fix the permissions of the path, then run the command again.',
  },
  EPERM: {
    what: 'the operation is not permitted',
    next: 'Check the ownership and attributes (chattr, mount options) of the path, and the user baton runs as.',
  },
  ENOSPC: {
    what: 'the file system is full',
    next: 'Free space on that file system (df -h shows it), then run the command again; every write is temp-then-rename, so nothing half-written was left in place.',
  },
  EDQUOT: {
    what: "the user's disk quota is exhausted",
    next: 'Free space or raise the quota, then run the command again.',
  },
  ENOTDIR: {
    what: 'a part of the path is a file, not a directory',
    next: 'Check the path (--state-dir, the store URL), then run the command again.',
  },
  EISDIR: {
    what: 'the path is a directory where a file was expected',
    next: 'Check the path, then run the command again.',
  },
  EMFILE: {
    what: 'this process has too many files open',
    next: 'Raise the limit (ulimit -n), then run the command again.',
  },
};

/** The BatonError for a file-system failure baton knows the way out of, else undefined. */
export function fileSystemError(error: unknown): BatonError | undefined {
  if (!isSystemError(error) || error.code === undefined) return undefined;
  const known = WHAT_TO_DO[error.code];
  if (!known) return undefined;
  const where = typeof error.path === 'string' ? shown(error.path) : undefined;
  return new BatonError('failed', {
    what: `A file-system call failed (${error.code}, ${error.syscall ?? 'unknown call'}): ${known.what}.`,
    ...(where ? { where } : {}),
    changed: 'What was being written did not complete; nothing already in place was replaced.',
    next: known.next,
    reason: 'io',
    cause: error,
  });
}
