import { sha256Base64 } from '../sha256.js';
import type { Fingerprint } from './fingerprint-type.js';

/**
 * `SHA256:` + unpadded base64 of SHA-256 over the DER SubjectPublicKeyInfo — the key's
 * fingerprint, not the certificate's, so a re-issued certificate for the same key keeps it.
 * The bytes are the certificate's own SPKI element, hashed as encoded (openssl's
 * `x509 -pubkey | pkey -pubin -outform DER` gives the same bytes; test/pki proves it).
 */
export function fingerprintOfSpki(spkiDer: Uint8Array): Fingerprint {
  // In JavaScript (src/sha256.ts): status reads fingerprints without loading node:crypto.
  return `SHA256:${sha256Base64(spkiDer).replace(/=+$/, '')}` as Fingerprint;
}
