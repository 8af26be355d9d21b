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

/**
 * What an operator types to confirm setting an authority aside: the first 8 characters after
 * `SHA256:` of the fingerprint being set aside. One rule for the console's force gate and
 * `sync --force` on a terminal, so the two can never ask for different things.
 */
export function confirmationPrefix(fingerprint: Fingerprint): string {
  return fingerprint.slice('SHA256:'.length, 'SHA256:'.length + 8);
}
