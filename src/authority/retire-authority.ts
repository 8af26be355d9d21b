import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import { nextStep, retireStep } from '../next-step.js';
import { confirmationPrefix, typedMatch, type Fingerprint } from '../pki/fingerprint-type.js';
import { withAuthorityLock } from './authority-lock.js';
import { removeDurably, type StepHook } from '../fs/durable-write.js';
import { layoutOf } from './layout.js';
import { readAuthority } from './read-local-authority.js';
import { stoppedPartWay } from './stopped-part-way.js';
import { writeMarker } from './write-marker.js';

export type RetireResult =
  /** `unproved`: the current certificate names no predecessor and the operator confirmed the delete. */
  | {
      readonly kind: 'retired';
      readonly previous: Fingerprint;
      readonly current: Fingerprint;
      readonly unproved?: true;
    }
  /** An earlier retire stopped part-way; this one removed the file of the previous pair it left. */
  | {
      readonly kind: 'finished';
      readonly current: Fingerprint;
      readonly removed: 'ca-previous.crt' | 'ca-previous.key';
    }
  | { readonly kind: 'nothing-to-retire'; readonly current: Fingerprint };

/**
 * Ends a rotation overlap under ca.lock, in THE SEED'S BILLET'S ORDER (b2b42c1a, internal/wirecert
 * rotation.go `Retire`: the previous KEY first, then its certificate, each unlink synced):
 * remove ca-previous.key → fsync → remove ca-previous.crt → fsync. A crash between leaves a
 * lone ca-previous.crt, which b2b42c1a's start refuses with a store (ReadAuthority: half a
 * previous pair) and a later billet fails on, so it reads as interrupted with `ca retire` (no
 * key is left to confirm) as its way out, never whole. A lone key whose pair the published
 * document still carries is NOT finished here by the suggestions: it is an install that stopped
 * (src/share/partial-install.ts), and `ca retire` refuses it while the store carries the pair.
 *
 * BOUND TO THE DATA. Deleting the previous key cannot be undone, so it happens only when
 * `confirm` is the 8 characters after `SHA256:` of the fingerprint being deleted, compared here,
 * under the lock, with what is on disk now (a confirmation read before another rotation does
 * not carry over). The same value is the operator's word when the current certificate names no
 * predecessor.
 *
 * THE RETIRE GUARD. A claim naming ANOTHER authority is refused whatever is confirmed; the
 * current pair must be whole, matching and ours (the reader's 'whole', not repaired, no rotation
 * pending). Anything the reader could not read blocks: "could not read" never counts as
 * "absent", because the key deleted here may be the one half the fleet still verifies against.
 */
export async function retireAuthority(
  stateDir: string,
  deployment: string,
  opts?: {
    readonly onStep?: StepHook;
    readonly waitMs?: number;
    /** The typed (or --confirm) 8 characters after `SHA256:` of the previous fingerprint. */
    readonly confirm?: string | undefined;
  },
): Promise<RetireResult> {
  return withAuthorityLock(
    stateDir,
    () =>
      retireLocked(stateDir, deployment, opts?.onStep, opts?.confirm).catch(
        stoppedPartWay('retire', layoutOf(stateDir).caDir, {
          next: ['Fix the cause, then run ', retireStep(), ' again: it finishes a retire left part-way.'],
          changed: 'The current authority is untouched.',
        }),
      ),
    opts,
  );
}

async function retireLocked(
  stateDir: string,
  deployment: string,
  onStep: StepHook | undefined,
  confirm: string | undefined,
): Promise<RetireResult> {
  const l = layoutOf(stateDir);
  const local = (await readAuthority(stateDir, deployment)).local;
  if (local.state === 'blocked') throw local.error;
  if (local.state !== 'whole') {
    throw new BatonError('refused', {
      what: `There is no authority to retire from: this host holds none (${local.state}).`,
      where: l.caDir,
      next: ['Nothing to do here; ', nextStep('status'), ' shows what this host holds.'],
      changed: 'Nothing was written.',
    });
  }
  if (local.repairedTear || local.pending === 'rotate') {
    throw new BatonError('refused', {
      what: 'A rotation was interrupted part-way; the previous key is still the current one.',
      where: l.caDir,
      next: ['Finish the rotation with ', nextStep('ca rotate'), ' first.'],
      changed: 'Nothing was written.',
    });
  }
  const current = local.current;
  if (local.pending === 'retire' && local.leftover) {
    // The reader proved the file left is of the predecessor the current certificate names.
    const { file, fingerprint } = local.leftover;
    if (file === 'ca-previous.key') requireConfirmed(l.previousKey, fingerprint, confirm);
    if (local.markerMissing) await writeMarker(stateDir, deployment);
    await removeDurably(file === 'ca-previous.key' ? l.previousKey : l.previousCert);
    await onStep?.(`removed ${file}`);
    return { kind: 'finished', current: current.fingerprint, removed: file };
  }
  const previous = local.previous;
  if (!previous) return { kind: 'nothing-to-retire', current: current.fingerprint };
  // The claim's TEXT is compared, exactly: a malformed claim names another authority, not none.
  const claim = current.claim ?? current.replaces;
  const unproved = claim === undefined;
  if (!unproved && claim !== previous.fingerprint) {
    throw new BatonError('refused', {
      what: `The current certificate says it replaces ${shown(claim)}, not the previous authority ${previous.fingerprint}: ca-previous.* is not its predecessor, and no confirmation overrides that.`,
      where: l.previousKey,
      next: 'Keep ca-previous.* until you know which nodes trust it; remove them by hand only when none do.',
      changed: 'Nothing was written.',
    });
  }
  if (
    unproved &&
    (confirm === undefined || typedMatch(confirm, confirmationPrefix(previous.fingerprint)) !== 'match')
  )
    throw unprovedRefusal(l.previousKey, previous.fingerprint, current.fingerprint, confirm !== undefined);
  requireConfirmed(l.previousKey, previous.fingerprint, confirm);
  if (local.markerMissing) await writeMarker(stateDir, deployment);
  // THE KEY FIRST, then the certificate: billet b2b42c1a's own Retire (rotation.go), the mirror of
  // its rotation publishing the certificate before the key.
  await removeDurably(l.previousKey);
  await onStep?.('removed ca-previous.key');
  await removeDurably(l.previousCert);
  await onStep?.('removed ca-previous.crt');
  return {
    kind: 'retired',
    previous: previous.fingerprint,
    current: current.fingerprint,
    ...(unproved ? { unproved: true as const } : {}),
  };
}

/**
 * Usage (exit 2) unless `confirm` is the 8 characters after `SHA256:` of `previous`. The
 * refusal names where to read the value, never the value.
 */
function requireConfirmed(where: string, previous: Fingerprint, confirm: string | undefined): void {
  const match = confirm === undefined ? undefined : typedMatch(confirm, confirmationPrefix(previous));
  if (match === 'match') return;
  throw new BatonError('usage', {
    what: `Retiring deletes the previous key for good, so it needs --confirm with the 8 characters after "SHA256:" of the previous fingerprint. ${
      confirm === undefined
        ? 'No --confirm was given.'
        : match === 'wrong-case'
          ? 'The --confirm given has the right characters but not the same case: case counts (base64).'
          : 'The --confirm given does not match the previous authority on this host now.'
    }`,
    where,
    next: ['Read the previous fingerprint (', nextStep('ca show'), '), then run ', retireStep(), '.'],
    changed: 'Nothing was written.',
  });
}

/** The words of an unproved predecessor: what is missing, and that the operator's word is the way on. */
export function unprovedRefusal(
  where: string,
  previous: Fingerprint,
  current: Fingerprint,
  mismatched = false,
): BatonError {
  return new BatonError(mismatched ? 'usage' : 'refused', {
    what: `The current certificate ${current} names no predecessor (no billet-replaces: claim in its OU; an older billet minted it), so ${previous} in ca-previous.* cannot be proved to be the authority it replaced${mismatched ? ', and the --confirm given does not match it' : ''}.`,
    where,
    next: [
      `If every node already trusts ${current}, `,
      retireStep(),
      ' (or ',
      nextStep('ca retire'),
      ' on a terminal, typing the same 8 characters) deletes ca-previous.crt and ca-previous.key on your word.',
    ],
    changed: 'Nothing was written.',
  });
}
