import { unlink } from 'node:fs/promises';
import { BatonError } from '../errors.js';
import { nextStep, retireStep } from '../next-step.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { inspectPair } from '../pki/inspect-pair.js';
import { withAuthorityLock } from './authority-lock.js';
import { systemClock, type Clock } from './clock.js';
import {
  createFileDurably,
  fsyncDir,
  renameDurably,
  writeExclusive,
  type StepHook,
} from '../fs/durable-write.js';
import { CERT_MODE, KEY_MODE, layoutOf } from './layout.js';
import { mintAuthority } from './mint-authority.js';
import { readAuthority, sameBytes } from './read-local-authority.js';
import { readStrict } from './read-strict.js';
import { stoppedPartWay } from './stopped-part-way.js';
import { writeMarker } from './write-marker.js';

export interface RotateResult {
  readonly previous: Fingerprint;
  readonly current: Fingerprint;
  /** True when this call finished a rotation an earlier one left part-way. */
  readonly resumed: boolean;
}

/**
 * Rotates the local authority under ca.lock, in docs/authority-on-disk.md's order: the new pair aside
 * (`*.new`) → ca-previous.key → ca-previous.crt → rename the new key → rename the new cert. The
 * old pair is durable as ca-previous.* before anything current changes, and the key is renamed
 * before the certificate, so every instant leaves a state the reader answers correctly: the old
 * authority, "new key beside old cert" (repaired from ca-previous.key), or the new one.
 *
 * Each step is skipped when already done, so calling it again finishes a rotation a crash left
 * part-way instead of starting a second one.
 */
export async function rotateAuthority(
  stateDir: string,
  deployment: string,
  opts?: { readonly clock?: Clock; readonly onStep?: StepHook; readonly waitMs?: number },
): Promise<RotateResult> {
  return withAuthorityLock(
    stateDir,
    () =>
      rotateLocked(stateDir, deployment, opts?.clock ?? systemClock, opts?.onStep).catch(
        stoppedPartWay('rotation', layoutOf(stateDir).caDir, {
          next: [
            'Fix the cause, then run ',
            nextStep('ca rotate'),
            ' again: it finishes a rotation left part-way. ',
            nextStep('ca show'),
            ' says where it stands.',
          ],
          changed:
            'The current authority is still the one in use (or the rotation is part-way, which the reader repairs); no key anyone trusts was deleted.',
        }),
      ),
    opts,
  );
}

async function rotateLocked(
  stateDir: string,
  deployment: string,
  clock: Clock,
  onStep: StepHook | undefined,
): Promise<RotateResult> {
  const l = layoutOf(stateDir);
  const read = await readAuthority(stateDir, deployment);
  const local = read.local;
  if (local.state === 'blocked') throw local.error;
  if (local.state !== 'whole') {
    throw new BatonError('refused', {
      what: `There is no authority to rotate: this host holds none (${local.state}).`,
      where: l.caDir,
      next:
        local.state === 'lost'
          ? ['Adopt the published authority with ', nextStep('sync'), ', or restore ca/ from a backup.']
          : [
              'Create one with ',
              nextStep('ca init'),
              ', or adopt the published one with ',
              nextStep('sync'),
              '.',
            ],
      changed: 'Nothing was written.',
    });
  }
  if (local.previous) {
    throw new BatonError('refused', {
      what: `A rotation overlap is already in progress: ${local.previous.fingerprint} is still the previous authority.`,
      where: l.previousKey,
      next: ['Once every node trusts the current authority, run ', retireStep(), ', then rotate again.'],
      changed: 'Nothing was written.',
    });
  }
  if (local.pending === 'retire') {
    throw new BatonError('refused', {
      what: `A retire was interrupted: ${local.leftover?.file ?? 'ca-previous.crt'} is still there without its other half.`,
      where: local.leftover?.file === 'ca-previous.key' ? l.previousKey : l.previousCert,
      next: [
        'Finish it with ',
        local.leftover?.file === 'ca-previous.key' ? retireStep() : nextStep('ca retire'),
        ', then rotate.',
      ],
      changed: 'Nothing was written.',
    });
  }
  if (local.markerMissing) await writeMarker(stateDir, deployment);
  const old = local.current.fingerprint;
  const oldCert = read.raw.cert.kind === 'bytes' ? read.raw.cert.bytes : undefined;
  const oldKey = read.currentKey;
  if (!oldCert || !oldKey) throw new Error('rotate: a whole authority without its bytes');
  const resumed = local.pending === 'rotate';

  // 1. The new pair aside. Only the tear (key already renamed) must reuse what is there.
  if (local.repairedTear) {
    await checkFinishable(l.newCert, read.raw.key, deployment, old);
  } else if (!(await usableAside(l.newKey, l.newCert, deployment, old))) {
    // A *.new pair that is not a complete, valid successor never left this directory and no
    // node trusts it: it is the one private key baton may drop, and it is replaced whole.
    await unlink(l.newKey).catch(ignoreMissing);
    await unlink(l.newCert).catch(ignoreMissing);
    const minted = await mintAuthority(deployment, { clock, replaces: old });
    await writeExclusive(l.newKey, minted['ca.key']!, KEY_MODE);
    await fsyncDir(l.caDir);
    await onStep?.('wrote ca.key.new');
    await writeExclusive(l.newCert, minted['ca.crt']!, CERT_MODE);
    await fsyncDir(l.caDir);
    await onStep?.('wrote ca.crt.new');
  }

  // 2–3. The old pair, durable as ca-previous.* before anything current changes. The KEY
  // first: billet's ServingCA reads ca-previous.crt and then needs its key, so a certificate
  // alone stops every billet from starting; a key alone is ignored by a later billet but not
  // by the seed's (b2b42c1a), so it reads as an interrupted rotation (billet stops) until this
  // rotation, run again, writes the certificate beside it.
  if (read.raw.previousKey.kind !== 'bytes') {
    await createFileDurably(l.caDir, 'ca-previous.key', oldKey, KEY_MODE);
    await onStep?.('wrote ca-previous.key');
  }
  if (read.raw.previousCert.kind !== 'bytes') {
    await createFileDurably(l.caDir, 'ca-previous.crt', oldCert, CERT_MODE);
    await onStep?.('wrote ca-previous.crt');
  } else if (!sameBytes(read.raw.previousCert.bytes, oldCert)) {
    throw new Error('rotate: ca-previous.crt is not the current certificate'); // the reader refuses this state
  }

  // 4–5. The key is renamed before the certificate: a crash between the two leaves "new key
  // beside old cert", the one tear the reader knows how to repair.
  if (!local.repairedTear) {
    await renameDurably(l.newKey, l.key);
    await onStep?.('renamed ca.key.new');
  }
  await renameDurably(l.newCert, l.cert);
  await onStep?.('renamed ca.crt.new');

  const after = (await readAuthority(stateDir, deployment)).local;
  if (after.state !== 'whole' || after.previous?.fingerprint !== old || after.pending) {
    throw new BatonError('failed', {
      what: `The rotation was written but ca/ reads back as ${after.state === 'whole' ? `current ${after.current.fingerprint}, previous ${after.previous?.fingerprint ?? 'none'}` : after.state}.`,
      where: l.caDir,
      next: ['Inspect it with ', nextStep('ca show'), ' before publishing anything.'],
      changed: `Files in ${l.caDir} were changed.`,
    });
  }
  return { previous: old, current: after.current.fingerprint, resumed };
}

/** The *.new pair, when it is whole, valid, ours and claims to replace `old` exactly. */
async function usableAside(
  newKeyFile: string,
  newCertFile: string,
  deployment: string,
  old: Fingerprint,
): Promise<boolean> {
  const key = await readStrict(newKeyFile, { secret: true });
  const cert = await readStrict(newCertFile, { secret: false });
  if (key.kind !== 'bytes' || cert.kind !== 'bytes') {
    for (const f of [key, cert])
      if (f.kind === 'error')
        throw cannotResume(
          `${f === key ? newKeyFile : newCertFile} cannot be read (${f.reason})`,
          newKeyFile,
        );
    return false;
  }
  const inspection = await inspectPair(key.bytes, cert.bytes, deployment);
  return inspection.ok && inspection.facts.replaces === old;
}

/** After the key rename, only the aside certificate can finish: it must pair with ca.key. */
async function checkFinishable(
  newCertFile: string,
  keyRead: { kind: string; bytes?: Uint8Array },
  deployment: string,
  old: Fingerprint,
): Promise<void> {
  const cert = await readStrict(newCertFile, { secret: false });
  if (cert.kind === 'bytes' && keyRead.bytes) {
    const inspection = await inspectPair(keyRead.bytes, cert.bytes, deployment);
    if (inspection.ok && inspection.facts.replaces === old) return;
  }
  throw cannotResume(
    'ca/ca.key is a new key, but ca/ca.crt.new is missing or is not its certificate',
    newCertFile,
  );
}

function cannotResume(why: string, where: string): BatonError {
  return new BatonError('refused', {
    what: `An interrupted rotation cannot be finished: ${why}.`,
    where,
    next: 'The current authority is intact (ca.crt with ca-previous.key). Restore ca/ from a backup or inspect it by hand; nothing was deleted.',
    changed: 'Nothing was written.',
  });
}

function ignoreMissing(error: unknown): void {
  if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
}
