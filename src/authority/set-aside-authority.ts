import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { systemClock, type Clock } from './clock.js';
import { createFileDurably, renameDurably, type StepHook } from '../fs/durable-write.js';
import { layoutOf, MARKER_FILE, MARKER_MODE } from './layout.js';
import { writeMarker } from './write-marker.js';

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
 * Copies the marker to ca.superseded-<stamp>.authority-created, then renames ca/ →
 * ca.superseded-<stamp>/; returns the directory. NEVER DELETES: what a forced replace moves
 * aside may be the key a part of the fleet still trusts. A stamp already taken gets a suffix
 * (-2, -3, …) rather than a rename over it. Caller holds the lock.
 *
 * THE MARKER STAYS (it names this deployment, and the authority installed next is this
 * deployment's too), and it is written first when it was missing: a state dir with neither ca/
 * nor the marker is day one for billet's LoadOrCreateCA, which would mint while the fleet
 * trusts the authority being installed. A crash after the rename leaves "lost", which a sync
 * finishes by adopting.
 */
export async function setAsideAuthority(
  stateDir: string,
  clock: Clock = systemClock,
  opts?: { readonly onStep?: StepHook; readonly deployment?: string },
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
  if (hasMarker) {
    await createFileDurably(
      stateDir,
      path.basename(`${target}.${MARKER_FILE}`),
      await readFile(l.marker),
      MARKER_MODE,
    );
    await opts?.onStep?.('copied the marker aside');
  } else if (opts?.deployment !== undefined) {
    await writeMarker(stateDir, opts.deployment);
    await opts.onStep?.('wrote the missing marker');
  }
  if (hasCa) {
    await renameDurably(l.caDir, target);
    await opts?.onStep?.('set aside ca/');
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
