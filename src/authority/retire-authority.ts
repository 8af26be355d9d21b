import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
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
  /** An earlier retire had removed the key; this one removed the certificate it left. */
  | { readonly kind: 'finished'; readonly current: Fingerprint }
  | { readonly kind: 'nothing-to-retire'; readonly current: Fingerprint };

/**
 * Ends a rotation overlap under ca.lock: remove ca-previous.key → fsync → remove
 * ca-previous.crt → fsync.
 *
 * THE RETIRE GUARD. ca-previous.key is deleted only when the previous pair is provably this
 * deployment's predecessor — the current certificate's OU claim `baton-replaces:<fp>` equals
 * the previous fingerprint EXACTLY — and the current pair is whole, matching and ours (the
 * reader's 'whole', not repaired, nothing pending). Anything the reader could not read blocks:
 * "could not read" never counts as "absent", because the key deleted here may be the one half
 * the fleet still verifies against.
 *
 * A current certificate that names NO predecessor (an older billet rotated without writing
 * the claim) is no proof, and no reason to refuse for ever either: the delete then happens
 * only on the operator's word (`acceptUnproved`: the previous fingerprint they confirmed, or
 * 'any' for --yes). A claim naming ANOTHER authority is refused whatever the operator says.
 */
export async function retireAuthority(
  stateDir: string,
  deployment: string,
  opts?: {
    readonly onStep?: StepHook;
    readonly waitMs?: number;
    readonly acceptUnproved?: Fingerprint | 'any';
  },
): Promise<RetireResult> {
  return withAuthorityLock(
    stateDir,
    () =>
      retireLocked(stateDir, deployment, opts?.onStep, opts?.acceptUnproved).catch(
        stoppedPartWay('retire', layoutOf(stateDir).caDir, {
          next: [
            'Fix the cause, then run ',
            nextStep('ca retire'),
            ' again: it finishes a retire left part-way.',
          ],
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
  acceptUnproved: Fingerprint | 'any' | undefined,
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
  if (local.markerMissing) await writeMarker(stateDir, deployment);
  const current = local.current;
  if (local.pending === 'retire') {
    // The key is already gone and the reader proved ca-previous.crt is the predecessor the
    // current certificate names: removing it deletes no key.
    await removeDurably(l.previousCert);
    await onStep?.('removed ca-previous.crt');
    return { kind: 'finished', current: current.fingerprint };
  }
  const previous = local.previous;
  if (!previous) return { kind: 'nothing-to-retire', current: current.fingerprint };
  // The claim's TEXT is compared, exactly: a malformed claim names another authority, not none.
  const claim = current.claim ?? current.replaces;
  const unproved = claim === undefined;
  if (unproved && acceptUnproved !== 'any' && acceptUnproved !== previous.fingerprint) {
    throw unprovedRefusal(l.previousKey, previous.fingerprint, current.fingerprint, acceptUnproved);
  }
  if (!unproved && claim !== previous.fingerprint) {
    throw new BatonError('refused', {
      what: `The current certificate says it replaces ${claim}, not the previous authority ${previous.fingerprint}: ca-previous.* is not its predecessor, and no confirmation (--yes) overrides that.`,
      where: l.previousKey,
      next: 'Keep ca-previous.* until you know which nodes trust it; remove them by hand only when none do.',
      changed: 'Nothing was written.',
    });
  }
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

/** The words of an unproved predecessor: what is missing, and that the operator's word is the way on. */
export function unprovedRefusal(
  where: string,
  previous: Fingerprint,
  current: Fingerprint,
  confirmed?: Fingerprint | 'any',
): BatonError {
  const moved =
    confirmed !== undefined && confirmed !== 'any'
      ? ` (the confirmation was for ${confirmed}, and ca-previous.* is now ${previous})`
      : '';
  return new BatonError('refused', {
    what: `The current certificate ${current} names no predecessor (no billet-replaces: claim in its OU; an older billet minted it), so ${previous} in ca-previous.* cannot be proved to be the authority it replaced${moved}.`,
    where,
    next: [
      `If every node already trusts ${current}, `,
      nextStep('ca retire --yes'),
      ' (or ',
      nextStep('ca retire'),
      ' on a terminal, typing the first 8 characters of the previous fingerprint) deletes ca-previous.key and ca-previous.crt on your word.',
    ],
    changed: 'Nothing was written.',
  });
}
