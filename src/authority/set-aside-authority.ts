import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { systemClock, type Clock } from './clock.js';
import { renameDurably, type StepHook } from '../fs/durable-write.js';
import { layoutOf, MARKER_FILE } from './layout.js';

/** `YYYYMMDDTHHMMSSZ`, UTC. */
export function utcStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Where a force moves ca/ to: the one name the force gate shows BEFORE anything moves and the
 * set-aside then uses, so the path on the screen is the path on disk. `n` > 1 only when that
 * name is already taken — a suffix is added rather than renaming over anything.
 */
export function supersededDirFor(stateDir: string, at: Date, n = 1): string {
  return path.join(stateDir, `ca.superseded-${utcStamp(at)}${n === 1 ? '' : `-${n}`}`);
}

/**
 * Renames ca/ → ca.superseded-<stamp>/ and the marker → ca.superseded-<stamp>.authority-created;
 * returns the directory. NEVER DELETES: what a forced replace moves aside may be the key a
 * part of the fleet still trusts. A stamp already taken gets a suffix (-2, -3, …) rather than
 * a rename over it. Caller holds the lock.
 */
export async function setAsideAuthority(
  stateDir: string,
  clock: Clock = systemClock,
  opts?: { readonly onStep?: StepHook },
): Promise<string> {
  const l = layoutOf(stateDir);
  const [hasCa, hasMarker] = [await exists(l.caDir), await exists(l.marker)];
  if (!hasCa && !hasMarker) {
    throw new BatonError('refused', {
      what: 'There is no local authority to set aside.',
      where: l.caDir,
      next: ['Adopt the published authority with ', nextStep('sync'), '.'],
      changed: 'Nothing was written.',
    });
  }
  const at = clock.now();
  let target: string;
  for (let n = 1; ; n++) {
    target = supersededDirFor(stateDir, at, n);
    if (!(await exists(target)) && !(await exists(`${target}.${MARKER_FILE}`))) break;
  }
  if (hasCa) {
    await renameDurably(l.caDir, target);
    await opts?.onStep?.('set aside ca/');
  }
  if (hasMarker) {
    await renameDurably(l.marker, `${target}.${MARKER_FILE}`);
    await opts?.onStep?.('set aside the marker');
  }
  return target;
}

async function exists(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
