/**
 * The verifiers the provisioner applied, per login: `<provider dir>/.provisioner/verifiers/<login>`
 * (docs/provisioner-service.md, "Applied verifiers"). A pooler that keeps its logins in an
 * auth_file on ANOTHER machine than the database must be given the database's own verifier,
 * salt included (pgbouncer logs in to PostgreSQL with it), and only the provisioner knows it;
 * the controller reads it here without ever seeing a password (docs/mesh-rotation.md, "A
 * pooler on another machine"). One line an application, newest first: `<digest of the
 * credential> <SCRAM verifier>`, the current and the one before it (a roll-back puts the one
 * before back, and the provisioner applies it again with that very verifier). 0600, in a 0700
 * directory beside the delivered password files, which are themselves more than a verifier.
 */
import type { SecretDigest } from './digest.js';
import { HEARTBEAT_DIR } from './provisioner-heartbeat.js';

/** Where the verifiers applied to `login` are kept, under the provider's directory on its machine. */
export function appliedVerifierPath(providerDir: string, login: string): string {
  return `${providerDir.replace(/\/+$/, '')}/${HEARTBEAT_DIR}/verifiers/${login}`;
}

export interface AppliedVerifier {
  readonly digest: SecretDigest;
  readonly verifier: string;
}

/** How many applications are kept: the current one and the one a roll-back returns to. */
export const APPLIED_VERIFIERS_KEPT = 2;

const DIGEST = /^sha256:[0-9a-f]{64}$/;
/** PostgreSQL's SCRAM-SHA-256 verifier: `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`. */
const VERIFIER =
  /^SCRAM-SHA-256\$[0-9]{1,7}:[A-Za-z0-9+/]+={0,2}\$[A-Za-z0-9+/]+={0,2}:[A-Za-z0-9+/]+={0,2}$/;

/** The kept applications, newest first; a line of another shape is dropped (the machine's text). */
export function parseAppliedVerifiers(text: string): AppliedVerifier[] {
  const out: AppliedVerifier[] = [];
  for (const line of text.split('\n')) {
    const [digest, verifier, ...rest] = line.trim().split(' ');
    if (rest.length === 0 && digest && verifier && DIGEST.test(digest) && VERIFIER.test(verifier))
      out.push({ digest: digest as SecretDigest, verifier });
  }
  return out;
}

/** `applied` first, then the kept ones of other credentials, at most APPLIED_VERIFIERS_KEPT. */
export function formatAppliedVerifiers(applied: AppliedVerifier, kept: readonly AppliedVerifier[]): string {
  const lines = [applied, ...kept.filter((k) => k.digest !== applied.digest)].slice(
    0,
    APPLIED_VERIFIERS_KEPT,
  );
  return lines.map((l) => `${l.digest} ${l.verifier}\n`).join('');
}
