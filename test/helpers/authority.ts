import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  installAuthority,
  mintAuthority,
  rotateAuthority,
  withAuthorityLock,
  type AuthorityFiles,
  type Clock,
} from '../../src/authority/index.js';
import { checkPair } from '../../src/authority/check-pair.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';

export const TEST_DEPLOYMENT = '0123456789abcdef0123456789abcdef';

/**
 * A private temp dir on tmpfs when the machine has one: every authority write fsyncs the file
 * and its directory (that is the point of them), which costs ~50 ms a rotation on a disk and
 * nothing on tmpfs. What the tests assert is order and content, not the disk's cache.
 */
export function authorityTempDir(prefix = 'baton-authority-'): { dir: string; cleanup: () => void } {
  let base = os.tmpdir();
  try {
    accessSync('/dev/shm', constants.W_OK);
    base = '/dev/shm';
  } catch {
    // no tmpfs: the ordinary temp dir
  }
  const dir = mkdtempSync(path.join(base, prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A clock fixed at `at` (default 2026-11-30T10:00:00Z) — no test depends on wall time. */
export function fixedClock(at: Date = new Date(Date.UTC(2026, 10, 30, 10, 0, 0))): Clock {
  return { now: () => new Date(at.getTime()) };
}

export interface MadeAuthority {
  readonly stateDir: string;
  readonly caDir: string;
  readonly fingerprint: Fingerprint;
  /** Set when `rotated`: the authority the current one replaced (still in ca-previous.*). */
  readonly previous: Fingerprint | undefined;
}

/**
 * A real authority installed the way baton installs one (mint in memory → O_EXCL install →
 * marker), in `stateDir` or a fresh temp dir. `rotated: true` then rotates once, leaving the
 * overlap (ca-previous.*) in place. Fixtures are made, never pasted: a pasted certificate
 * expires and hides which field a test depends on.
 */
export async function makeAuthority(
  options: {
    readonly deployment?: string;
    readonly stateDir?: string;
    readonly clock?: Clock;
    readonly rotated?: boolean;
  } = {},
): Promise<MadeAuthority & { readonly cleanup: () => void }> {
  const deployment = options.deployment ?? TEST_DEPLOYMENT;
  const clock = options.clock ?? fixedClock();
  let cleanup = () => {};
  let stateDir = options.stateDir;
  if (!stateDir) {
    const temp = authorityTempDir();
    stateDir = path.join(temp.dir, 'state');
    cleanup = temp.cleanup;
  }
  const files = await mintAuthority(deployment, { clock });
  const fingerprint = await fingerprintOfFiles(files, deployment);
  const dir = stateDir;
  await withAuthorityLock(dir, () => installAuthority(dir, deployment, files, fingerprint));
  if (!options.rotated)
    return { stateDir, caDir: path.join(stateDir, 'ca'), fingerprint, previous: undefined, cleanup };
  const rotated = await rotateAuthority(stateDir, deployment, { clock });
  return {
    stateDir,
    caDir: path.join(stateDir, 'ca'),
    fingerprint: rotated.current,
    previous: fingerprint,
    cleanup,
  };
}

/** The fingerprint of a minted (in-memory) authority's current pair. */
export async function fingerprintOfFiles(
  files: AuthorityFiles,
  deployment: string = TEST_DEPLOYMENT,
): Promise<Fingerprint> {
  return (await checkPair(files['ca.key']!, files['ca.crt']!, deployment, 'test fixture')).fingerprint;
}
