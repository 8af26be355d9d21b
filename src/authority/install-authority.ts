import { lstat, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { checkPair } from './check-pair.js';
import { createFileDurably, fsyncDir, type StepHook } from '../fs/durable-write.js';
import { errorCode, isSystemError } from '../fs/system-error.js';
import { CERT_MODE, DIR_MODE, KEY_MODE, layoutOf } from './layout.js';
import { readLocalAuthority } from './read-local-authority.js';
import { readSetAsideAuthorities } from './set-aside-authorities.js';
import type { AuthorityFileName, AuthorityFiles } from './types.js';
import { markerDeployment, writeMarker } from './write-marker.js';

/**
 * Install order, after the marker: the previous pair (if any), then key → cert. The previous
 * pair's key before its certificate: billet's ServingCA reads ca-previous.crt and then NEEDS its
 * key, so a certificate alone would stop billet from starting while a key alone is ignored.
 */
const INSTALL_ORDER: ReadonlyArray<readonly [AuthorityFileName, number]> = [
  ['ca-previous.key', KEY_MODE],
  ['ca-previous.crt', CERT_MODE],
  ['ca.key', KEY_MODE],
  ['ca.crt', CERT_MODE],
];

async function absent(file: string): Promise<boolean> {
  try {
    await lstat(file);
    return false;
  } catch (error) {
    if (isSystemError(error) && errorCode(error) === 'ENOENT') return true;
    throw error;
  }
}

/**
 * True when every authority file present in ca/ is a regular file byte for byte equal to the
 * one `files` carries, and the current certificate (written last) is not among them: what an
 * install of `files` leaves when it is cut short. Never true for a file of another authority.
 */
async function isInstallPrefix(caDir: string, files: AuthorityFiles): Promise<boolean> {
  if (!(await absent(path.join(caDir, 'ca.crt')))) return false;
  for (const [name] of INSTALL_ORDER) {
    const file = path.join(caDir, name);
    if (await absent(file)) continue;
    const st = await lstat(file);
    const want = files[name];
    if (!st.isFile() || !want) return false;
    if (!Buffer.from(await readFile(file)).equals(Buffer.from(want))) return false;
  }
  return true;
}

/**
 * Installs `files` into a ca/ that holds no authority (fresh or lost): the marker FIRST, then each
 * file created with O_EXCL so nothing that appeared meanwhile is overwritten, then RE-READS and
 * checks the fingerprint equals `expected`. Caller holds the lock.
 *
 * THE MARKER FIRST: billet's LoadOrCreateCA reads "no ca.crt, no ca.key, no marker" as day one
 * and mints, whatever else is in ca/. With the marker written before any file, a crash (ENOSPC,
 * SIGKILL) part-way leaves a dir billet refuses ("lost" or half-initialised) and baton reads as
 * lost or half, whose way out is the same adopt again — never a second authority.
 * The previous pair goes before the current one and the current certificate last: a crash
 * part-way never leaves a current pair that looks whole but lacks its overlap.
 */
export async function installAuthority(
  stateDir: string,
  deployment: string,
  files: AuthorityFiles,
  expected: Fingerprint,
  opts?: {
    readonly onStep?: StepHook;
    /**
     * Finish an install that stopped part-way (adopt or force cut short): a half-initialised
     * ca/ is accepted when every file in it is byte for byte the one `files` carries, and only
     * the missing files are written. Anything else is refused as before.
     */
    readonly resume?: boolean;
  },
): Promise<void> {
  const l = layoutOf(stateDir);
  const where = `the authority being installed into ${l.caDir}`;
  const cert = files['ca.crt'];
  const key = files['ca.key'];
  if (!cert || !key) {
    throw new BatonError('refused', {
      what: `The authority to install is incomplete: ${!cert ? 'ca.crt' : 'ca.key'} is missing.`,
      where,
      next: 'Publish the whole authority from a controller that holds it, then adopt again.',
      changed: 'Nothing was written.',
    });
  }
  const current = await checkPair(key, cert, deployment, `${where} (ca.key + ca.crt)`);
  if (current.fingerprint !== expected) {
    throw new BatonError('refused', {
      what: `The authority to install is ${current.fingerprint}, not the ${expected} that was decided on.`,
      where,
      next: ['Look again (', nextStep('status'), ') and decide on what is there now.'],
      changed: 'Nothing was written.',
    });
  }
  const previousCert = files['ca-previous.crt'];
  const previousKey = files['ca-previous.key'];
  if (!previousCert !== !previousKey) {
    throw new BatonError('refused', {
      what: `The authority to install carries half a previous pair: ${previousCert ? 'ca-previous.key' : 'ca-previous.crt'} is missing.`,
      where,
      next: 'Publish the whole authority from a controller that holds it, then adopt again.',
      changed: 'Nothing was written.',
    });
  }
  if (previousCert && previousKey)
    await checkPair(previousKey, previousCert, deployment, `${where} (ca-previous.key + ca-previous.crt)`);
  const marker = files['authority-created'];
  const markerNames = marker && markerDeployment(marker);
  if (markerNames !== undefined && markerNames !== deployment) {
    throw new BatonError('refused', {
      what: `The authority to install carries a marker for another deployment ("${markerNames}").`,
      where,
      next: 'Check the store and the deployment id.',
      changed: 'Nothing was written.',
    });
  }

  const before = await readLocalAuthority(stateDir, deployment);
  const resuming =
    opts?.resume === true &&
    before.state === 'blocked' &&
    before.problem === 'half-initialised' &&
    (await isInstallPrefix(l.caDir, files));
  if (before.state === 'blocked' && before.problem === 'half-initialised' && opts?.resume && !resuming) {
    const [setAside] = await readSetAsideAuthorities(stateDir);
    throw new BatonError('refused', {
      what: 'ca/ holds part of an authority that is not the published one (a file in it differs from the document, byte for byte), so this is not an install to finish.',
      where: l.caDir,
      // Not the words of the half-initialised state, which offer this same command again.
      next: `Neither sync nor a force run again finishes it. Restore ca/ from a backup${setAside ? `, or move ca/ aside by hand and put back the authority a force set aside in ${setAside.dir} if that is the one this host should hold` : ''}; baton never repairs half an authority by minting.`,
      changed: 'Nothing was written.',
      reason: 'blocked',
    });
  }
  if (!resuming && before.state !== 'fresh' && before.state !== 'lost') {
    throw new BatonError('refused', {
      what:
        before.state === 'whole'
          ? `This host already holds an authority (${before.current.fingerprint}); baton never installs over one.`
          : `This host's authority is blocked: ${before.error.what}`,
      where: l.caDir,
      next:
        before.state === 'whole'
          ? ['Set it aside on purpose with ', nextStep('sync --force'), ' if it must be replaced.']
          : (before.error.said ?? before.error.next ?? 'Repair it by hand first.'),
      changed: 'Nothing was written.',
    });
  }

  const written: string[] = [];
  let writing = 'ca/';
  try {
    if (before.state === 'fresh' || (resuming && (await absent(l.marker)))) {
      writing = 'authority-created';
      await writeMarker(stateDir, deployment);
      written.push(writing);
      await opts?.onStep?.('installed authority-created');
    }
    writing = 'ca/';
    await mkdir(l.caDir, { recursive: true, mode: DIR_MODE });
    await fsyncDir(stateDir);
    for (const [name, mode] of INSTALL_ORDER) {
      const bytes = files[name];
      if (!bytes) continue;
      // Resuming: what the cut-short install wrote is already here, proved identical.
      if (resuming && !(await absent(path.join(l.caDir, name)))) continue;
      writing = `ca/${name}`;
      await createFileDurably(l.caDir, name, bytes, mode);
      written.push(writing);
      await opts?.onStep?.(`installed ${name}`);
    }
  } catch (error) {
    if (!isSystemError(error)) throw error;
    throw new BatonError('failed', {
      what: `Installing the authority failed while writing ${writing} (${errorCode(error)}).`,
      where: l.caDir,
      next: [
        'Look at it with ',
        nextStep('ca show'),
        '. baton removed nothing it wrote; clear ca/ by hand only once you know no node trusts what is there.',
      ],
      changed:
        written.length > 0 ? `Written before the failure: ${written.join(', ')}.` : 'Nothing was written.',
      cause: error,
    });
  }

  const after = await readLocalAuthority(stateDir, deployment);
  if (after.state !== 'whole' || after.current.fingerprint !== expected) {
    throw new BatonError('failed', {
      what: `The authority was written but reads back as ${after.state === 'whole' ? after.current.fingerprint : after.state}, not ${expected}.`,
      where: l.caDir,
      next: ['Do not serve from this host; inspect ca/ by hand (', nextStep('ca show'), ').'],
      changed: `Files were written into ${l.caDir}.`,
    });
  }
}
