/**
 * A LONE ca-previous.key BESIDE A WHOLE CURRENT PAIR, WHILE THE STORE STILL CARRIES THAT PAIR,
 * is an install that stopped, not a retire to finish. An install of a mid-overlap authority
 * writes the previous key before its certificate (baton's order; billet's Adopt then writes the
 * current pair over what was left and stops at the key it finds), so a crash leaves exactly
 * this — and deleting the key ("finish the retire") ends the overlap the fleet still needs. So
 * no suggested command removes it while the published document carries it: adopt finishes the
 * install instead (src/authority/restore-previous.ts), and `ca retire` refuses.
 */
import type { LocalAuthority } from '../authority/types.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import type { PublishedAuthority } from './types.js';

/** The previous fingerprint when `local` is such a stopped install of what is published; else undefined. */
export function overlapStillPublished(
  local: LocalAuthority,
  published: PublishedAuthority,
): Fingerprint | undefined {
  if (local.state !== 'whole' || local.alone !== 'ca-previous.key' || !local.leftover) return undefined;
  if (published.state !== 'present') return undefined;
  if (published.header.fingerprint !== local.current.fingerprint) return undefined;
  return published.header.previousFingerprint === local.leftover.fingerprint
    ? local.leftover.fingerprint
    : undefined;
}

/**
 * A half-initialised ca/ beside a published document: possibly an adopt or a force cut short
 * (their install writes the previous pair, then ca.key, then ca.crt). Only a candidate — the
 * install proves it byte for byte under the lock (installAuthority's `resume`) and refuses
 * anything else; the words offer the same `sync` and, failing that, the backup.
 */
export function isStoppedInstall(local: LocalAuthority, published: PublishedAuthority): boolean {
  return local.state === 'blocked' && local.problem === 'half-initialised' && published.state === 'present';
}
