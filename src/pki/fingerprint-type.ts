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

/** How what an operator typed at a gate compares with what the gate asks for. */
export type TypedMatch = 'match' | 'wrong-case' | 'different';

/**
 * A typed gate's comparison: spaces are ignored (a paste brings some), case is NOT. Base64 is
 * case-sensitive — two fingerprints can differ only in case — so `npk7rzgd` is not `NPK7rzgd`;
 * 'wrong-case' lets the gate say why instead of a bare "does not match".
 */
export function typedMatch(typed: string, expected: string): TypedMatch {
  const bare = (s: string) => s.replace(/\s+/g, '');
  const [a, b] = [bare(typed), bare(expected)];
  if (a === b) return 'match';
  return a.toLowerCase() === b.toLowerCase() ? 'wrong-case' : 'different';
}

/**
 * What an operator types to confirm setting an authority aside: the first 8 characters after
 * `SHA256:` of the fingerprint being set aside. One rule for the console's force gate and
 * `sync --force` on a terminal, so the two can never ask for different things.
 */
export function confirmationPrefix(fingerprint: Fingerprint): string {
  return fingerprint.slice('SHA256:'.length, 'SHA256:'.length + 8);
}
