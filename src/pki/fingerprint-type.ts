/**
 * `SHA256:` + unpadded standard base64 of SHA-256 over the certificate's DER
 * SubjectPublicKeyInfo (the OpenSSH shape). Branded so a certificate digest or any other
 * string cannot be passed where a fingerprint is compared.
 */
export type Fingerprint = string & { readonly __brand: 'Fingerprint' };

export const FINGERPRINT_PATTERN = /^SHA256:[A-Za-z0-9+/]{43}$/;

/** Accepts only the exact shape; never trims or folds case (decisions compare exactly). */
export function asFingerprint(text: string): Fingerprint | undefined {
  return FINGERPRINT_PATTERN.test(text) ? (text as Fingerprint) : undefined;
}

/**
 * Human comparison (DESIGN.md §2): trims spaces and ignores case. Only for what an operator
 * types or reads; a decision that authorises deleting anything uses `===`.
 */
export function sameForHumans(a: string, b: string): boolean {
  const norm = (s: string) => s.replace(/\s+/g, '').toLowerCase();
  return norm(a) === norm(b);
}
