import { createHash } from 'node:crypto';
import type * as pkijs from 'pkijs';
import type { Fingerprint } from './fingerprint-type.js';

/**
 * `SHA256:` + unpadded base64 of SHA-256 over the DER SubjectPublicKeyInfo — the key's
 * fingerprint, not the certificate's, so a re-issued certificate for the same key keeps it
 * (pkijs' getKeyHash() hashes only the key bits and would not match openssl's).
 */
export function fingerprintOf(certificate: pkijs.Certificate): Fingerprint {
  const spki = new Uint8Array(certificate.subjectPublicKeyInfo.toSchema().toBER(false));
  return fingerprintOfSpki(spki);
}

export function fingerprintOfSpki(spkiDer: Uint8Array): Fingerprint {
  return `SHA256:${createHash('sha256').update(spkiDer).digest('base64').replace(/=+$/, '')}` as Fingerprint;
}
