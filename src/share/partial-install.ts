/**
 * A LONE ca-previous.key BESIDE A WHOLE CURRENT PAIR, WHILE THE STORE STILL CARRIES THAT PAIR,
 * is an install that stopped, not a retire to finish. An install of a mid-overlap authority
 * writes the previous key before its certificate (baton's order; billet's Adopt then writes the
 * current pair over what was left and stops at the key it finds), so a crash leaves exactly
 * this — and deleting the key ("finish the retire") ends the overlap the fleet still needs. So
 * no suggested command removes it while the published document carries it: adopt finishes the
 * install instead (src/authority/restore-previous.ts), and `ca retire` refuses.
 */
import type { SetAsideAuthority } from '../authority/set-aside-authorities.js';
import type { LocalAuthority } from '../authority/types.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import type { Look, PublishedAuthority } from './types.js';

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

/**
 * A `sync --force --confirm <LOCAL 8>` CUT SHORT, run again exactly as typed: the local side is
 * what the force leaves part-way (ca/ moved aside and nothing installed yet: lost; part of the
 * published authority installed: a stopped install; or all of it: in sync), and an authority it
 * set aside is not the published one. Those set-aside authorities, newest first — the ones the
 * re-run may be bound to (its LOCAL 8 names the authority that was local when it was typed).
 * Empty when this is not such a state: a force then applies only to a refusal, as ever.
 *
 * Resuming never sets anything aside again: it does exactly what plain `sync` does on this
 * state (adopt, finish the install byte for byte, or nothing), and names where the old went.
 */
export type ResumableForce = SetAsideAuthority & { readonly fingerprint: Fingerprint };

export function forceResumable(
  look: Look,
  setAside: readonly SetAsideAuthority[],
): readonly ResumableForce[] {
  const { local, published, verdict } = look;
  if (published.state !== 'present') return [];
  const partWay =
    local.state === 'lost' ||
    isStoppedInstall(local, published) ||
    overlapStillPublished(local, published) !== undefined ||
    verdict.kind === 'in-sync';
  if (!partWay) return [];
  return setAside.filter(
    (s): s is ResumableForce => s.fingerprint !== undefined && s.fingerprint !== published.header.fingerprint,
  );
}
