import { BatonError } from '../errors.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { withAuthorityLock } from './authority-lock.js';
import { isSystemError, removeDurably, type StepHook } from '../fs/durable-write.js';
import { layoutOf } from './layout.js';
import { readAuthority } from './read-local-authority.js';
import { writeMarker } from './write-marker.js';

export type RetireResult =
  | { readonly kind: 'retired'; readonly previous: Fingerprint; readonly current: Fingerprint }
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
 */
export async function retireAuthority(
  stateDir: string,
  deployment: string,
  opts?: { readonly onStep?: StepHook; readonly waitMs?: number },
): Promise<RetireResult> {
  return withAuthorityLock(
    stateDir,
    () =>
      retireLocked(stateDir, deployment, opts?.onStep).catch((error: unknown) => {
        if (!isSystemError(error)) throw error;
        throw new BatonError('failed', {
          what: `The retire stopped: ${error.syscall} ${error.path ?? ''} failed (${error.code}).`,
          where: layoutOf(stateDir).caDir,
          next: 'Fix the cause, then run `baton ca retire` again: it finishes a retire left part-way.',
          changed: 'The current authority is untouched.',
          cause: error,
        });
      }),
    opts,
  );
}

async function retireLocked(stateDir: string, deployment: string, onStep: StepHook | undefined): Promise<RetireResult> {
  const l = layoutOf(stateDir);
  const local = (await readAuthority(stateDir, deployment)).local;
  if (local.state === 'blocked') throw local.error;
  if (local.state !== 'whole') {
    throw new BatonError('refused', {
      what: `There is no authority to retire from: this host holds none (${local.state}).`,
      where: l.caDir,
      next: 'Nothing to do here; `baton status` shows what this host holds.',
      changed: 'Nothing was written.',
    });
  }
  if (local.repairedTear || local.pending === 'rotate') {
    throw new BatonError('refused', {
      what: 'A rotation was interrupted part-way; the previous key is still the current one.',
      where: l.caDir,
      next: 'Finish the rotation with `baton ca rotate` first.',
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
  if (current.replaces !== previous.fingerprint) {
    throw new BatonError('refused', {
      what:
        current.replaces === undefined
          ? `The current certificate does not say which authority it replaces, so ${previous.fingerprint} cannot be proved its predecessor.`
          : `The current certificate replaces ${current.replaces}, not the previous authority ${previous.fingerprint}.`,
      where: l.previousKey,
      next: 'Keep ca-previous.* until you know which nodes trust it; remove them by hand only when none do.',
      changed: 'Nothing was written.',
    });
  }
  await removeDurably(l.previousKey);
  await onStep?.('removed ca-previous.key');
  await removeDurably(l.previousCert);
  await onStep?.('removed ca-previous.crt');
  return { kind: 'retired', previous: previous.fingerprint, current: current.fingerprint };
}
