import { createHash } from 'node:crypto';
import type { Fingerprint } from './fingerprint-type.js';

/**
 * `SHA256:` + unpadded base64 of SHA-256 over the DER SubjectPublicKeyInfo — the key's
 * fingerprint, not the certificate's, so a re-issued certificate for the same key keeps it.
 * The bytes are the certificate's own SPKI element, hashed as encoded (openssl's
 * `x509 -pubkey | pkey -pubin -outform DER` gives the same bytes; test/pki proves it).
 */
export function fingerprintOfSpki(spkiDer: Uint8Array): Fingerprint {
  return `SHA256:${createHash('sha256').update(spkiDer).digest('base64').replace(/=+$/, '')}` as Fingerprint;
}
