import { readFile } from 'node:fs/promises';
import { BatonError } from '../errors.js';
import { createFileDurably } from '../fs/durable-write.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { withAuthorityLock } from './authority-lock.js';
import { checkPair } from './check-pair.js';
import { CERT_MODE, layoutOf } from './layout.js';
import { readAuthority } from './read-local-authority.js';
import type { AuthorityFiles } from './types.js';

/**
 * RESUMES AN INSTALL OF A MID-OVERLAP AUTHORITY that stopped after ca-previous.key. An install
 * writes the previous key before its certificate (baton's own order, and billet's Adopt, which
 * writes ca.key and ca.crt over what baton left and then stops at the key it finds): a crash in
 * between leaves the current pair whole beside a lone ca-previous.key — which billet b2b42c1a
 * will not start on, and which once read as "a retire stopped part-way", whose Next deleted the
 * key the fleet's overlap still needed. The way out is the install finished: ca-previous.crt
 * written from the published document, and only when that document's previous pair is the very
 * key on disk and its current pair is this host's.
 */
export async function restorePreviousCertificate(
  stateDir: string,
  deployment: string,
  published: AuthorityFiles,
  expected: Fingerprint,
): Promise<Fingerprint> {
  return withAuthorityLock(stateDir, () =>
    restorePreviousCertificateLocked(stateDir, deployment, published, expected),
  );
}

/** The same, for a caller that already holds ca.lock (adopt, which re-decided under it). */
export async function restorePreviousCertificateLocked(
  stateDir: string,
  deployment: string,
  published: AuthorityFiles,
  expected: Fingerprint,
): Promise<Fingerprint> {
  const layout = layoutOf(stateDir);
  const { local } = await readAuthority(stateDir, deployment);
  const docCert = published['ca-previous.crt'];
  const docCurrent = published['ca.crt'];
  const refuse = (what: string) =>
    new BatonError('refused', {
      what,
      where: layout.previousKey,
      next: 'Look again: the state dir or the store changed since this was decided.',
      changed: 'Nothing was written.',
      reason: 'local-changed',
    });
  if (
    local.state !== 'whole' ||
    local.alone !== 'ca-previous.key' ||
    local.leftover?.fingerprint !== expected
  )
    throw refuse(
      'ca-previous.key is no longer alone beside a whole current pair, so there is no install to finish.',
    );
  if (!docCert || !docCurrent || !published['ca.key'])
    throw refuse('The published document no longer carries a previous pair.');
  const current = await checkPair(published['ca.key'], docCurrent, deployment, 'the published current pair');
  if (current.fingerprint !== local.current.fingerprint)
    throw refuse('The published current authority is not the one this host holds.');
  // THE KEY ON DISK must be the document's previous certificate's key: proved, not assumed.
  const onDisk = new Uint8Array(await readFile(layout.previousKey));
  const previous = await checkPair(
    onDisk,
    docCert,
    deployment,
    'ca-previous.key with the published ca-previous.crt',
  );
  if (previous.fingerprint !== expected)
    throw refuse('The published previous certificate is not the pair of ca-previous.key.');
  await createFileDurably(layout.caDir, 'ca-previous.crt', docCert, CERT_MODE);
  return previous.fingerprint;
}
