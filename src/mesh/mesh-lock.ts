/**
 * One operator at a time per mesh: rotate, resume, seed and rollback hold
 * `<journal dir>/mesh-<identity>.lock` (a kernel flock, src/fs/flock.ts) for their whole run.
 * Two rotations of one pair would each take the other's committed files for leftovers. A
 * second gets exit 5 naming the holder (pid, host, since), which the holder writes into the
 * lock file; `mesh status` and `mesh plan` only read, and never take it.
 */
import { constants, readFileSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { flockExclusive, nativeModuleProblem } from '../fs/flock.js';
import { errorCode } from '../fs/system-error.js';
import { parseJsonRecord } from './json-record.js';

export interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly since: string;
  readonly command: string;
}

export function meshLockPath(journalDir: string, mesh: string): string {
  return path.join(journalDir, `${mesh}.lock`);
}

export async function withMeshLock<T>(
  journalDir: string,
  mesh: string,
  command: string,
  fn: () => Promise<T>,
): Promise<T> {
  const lock = meshLockPath(journalDir, mesh);
  let handle;
  try {
    await mkdir(journalDir, { recursive: true, mode: 0o700 });
    handle = await open(lock, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw new BatonError('failed', {
      what: `The mesh lock cannot be opened (${errorCode(error)}).`,
      where: lock,
      next: 'Set journal_dir in baton.yaml to a writable directory, or pass --state-dir.',
      changed: 'Nothing was generated and nothing was sent.',
      cause: error,
    });
  }
  try {
    let taken;
    try {
      taken = await flockExclusive(handle.fd, 0);
    } catch (error) {
      // A native module built for another Node.js is not the file system's fault: say which.
      const native = nativeModuleProblem(error);
      throw new BatonError('failed', {
        what: native
          ? `The mesh lock cannot be taken: ${native.what}`
          : `The mesh lock cannot be taken (${errorCode(error)}).`,
        where: lock,
        next: native?.next ?? 'Put journal_dir on a file system that supports flock.',
        changed: 'Nothing was generated and nothing was sent.',
        cause: error,
      });
    }
    if (taken === 'busy') {
      const holder = parseLockHolder(await handle.readFile('utf8').catch(() => ''));
      throw new BatonError('lock-busy', {
        what: holder
          ? `Another baton is working on this mesh: ${holder.command}, pid ${holder.pid} on ${holder.host}${holder.since === undefined ? '' : ` since ${holder.since}`}.`
          : 'Another baton is working on this mesh (it has not said who yet).',
        where: lock,
        next: ['Wait for it to finish, then run ', nextStep('mesh status'), ' to see where the pairs stand.'],
        changed: 'Nothing was generated and nothing was sent.',
      });
    }
    const me: LockHolder = {
      pid: process.pid,
      host: os.hostname(),
      since: new Date().toISOString(),
      command: command,
    };
    await handle.truncate(0);
    await handle.write(`${JSON.stringify(me)}\n`, 0);
    try {
      return await fn();
    } finally {
      await handle.truncate(0).catch(() => undefined);
    }
  } finally {
    // Closing the descriptor releases the flock. The file stays: unlinking a lock another
    // process has opened would let two holders lock two different files.
    await handle.close();
  }
}

/**
 * Who holds the mesh lock now, read without taking it (status and plan never take it): the
 * holder written in the lock file, unless it was on this host and its process is gone (a
 * baton killed while holding it; the kernel released the lock, the words stayed).
 */
export function meshLockHolder(journalDir: string, mesh: string): HolderRead | undefined {
  let text: string;
  try {
    text = readFileSync(meshLockPath(journalDir, mesh), 'utf8');
  } catch {
    return undefined;
  }
  const holder = parseLockHolder(text);
  if (!holder || holder.host !== os.hostname()) return holder;
  try {
    process.kill(holder.pid, 0);
    return holder;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? holder : undefined;
  }
}

/** A holder as read back: `since` is absent when an older writer left none. */
export type HolderRead = Omit<LockHolder, 'since'> & { readonly since?: string };

/**
 * What a lock's holder writes (this file's mesh lock and the provider locks of
 * src/operations/provider-locks.ts alike), made on first use. A `since` of another type is
 * dropped, not the holder: who holds the lock is still worth saying.
 */
let holderSchema: z.ZodType<HolderRead> | undefined;
function schemaOfHolder(): z.ZodType<HolderRead> {
  return (holderSchema ??= z.object({
    command: z.string(),
    pid: z.number(),
    host: z.string(),
    since: z.string().optional().catch(undefined),
  }));
}

/** The holder a lock file names, or undefined when its text is not a holder baton wrote. */
export function parseLockHolder(text: string): HolderRead | undefined {
  return parseJsonRecord(schemaOfHolder(), text);
}
