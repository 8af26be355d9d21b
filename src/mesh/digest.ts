/**
 * Credentials are compared by digest and never by content (mesh seed): a secret does not
 * belong in a long-lived variable when a hash answers the same question. The one digest
 * function of the mesh, the journal, the provisioner and its receipts.
 */
import { createHash } from 'node:crypto';

/** `sha256:<64 hex>` of the secret's exact bytes. */
export type SecretDigest = string & { readonly __brand: 'SecretDigest' };

export function secretDigest(secret: Uint8Array | string): SecretDigest {
  return `sha256:${createHash('sha256').update(secret).digest('hex')}` as SecretDigest;
}

/** A short prefix for logs and screens: enough to tell two apart, nothing to brute-force. */
export function digestPrefix(digest: SecretDigest): string {
  return digest.slice(0, 'sha256:'.length + 12);
}

/**
 * Where receipts live beside a provider's delivered files: the provisioner writes there and
 * `baton mesh rotate` reads there, so the name is written once.
 */
export const RECEIPTS_DIR = '.applied';

/**
 * Where `mesh rotate --end-sessions` asks the provisioner to end a login's sessions:
 * `provides/<provider>/.end-sessions/<login file>`, holding the digest of the login file it is for.
 */
export const END_SESSIONS_DIR = '.end-sessions';

/**
 * What the provisioner last found in the database for a role it had applied, kept in its
 * receipt: `as-set` while the role exists, can log in, is not expired and still holds the
 * verifier of the delivered password; otherwise what changed underneath it.
 */
export const DATABASE_FINDINGS = [
  'as-set',
  'password-changed',
  'dropped',
  'nologin',
  'expired',
  'not-member',
] as const;
export type DatabaseFinding = (typeof DATABASE_FINDINGS)[number];

/** Each finding as a clause, for the provisioner's log and `mesh status`. */
export const DATABASE_FINDING_WORDS: Record<DatabaseFinding, string> = {
  'as-set': 'the database holds the delivered password',
  'password-changed': 'its password was changed in the database',
  dropped: 'the role was dropped',
  nologin: 'the role was set NOLOGIN',
  expired: "the role's VALID UNTIL has passed",
  'not-member': 'the login is no longer a member of its group',
};

export interface DatabaseCheck {
  readonly found: DatabaseFinding;
  /** RFC 3339: when this finding was first made (the receipt is rewritten only when it changes). */
  readonly since: string;
  /** Why the provisioner could not put the delivered password back, when it tried and failed. */
  readonly problem?: string;
  /** On `as-set` after a repair: what the provisioner found and put right. */
  readonly restored?: Exclude<DatabaseFinding, 'as-set'>;
  /**
   * `sha256:<hex>` of the SCRAM verifier the provisioner set (never the verifier: it is as good
   * as the password against a server that accepts it). Lets a restarted provisioner recognise
   * its own verifier without deriving keys again; absent, it derives them.
   */
  readonly verifier?: string;
}

/**
 * The provisioner's receipt, `<mesh_dir>/provides/<provider>/.applied/<role>` (0600): written
 * after the database accepted a credential; `baton mesh rotate` reads it as "applied".
 * `database` is absent in receipts written before the provisioner checked the database; such a
 * receipt reads as before. It never holds a secret or a verifier.
 */
export interface Receipt {
  /** The delivered file's name: a role, or a login file (`web1_app+a`). */
  readonly role: string;
  readonly digest: SecretDigest;
  /** RFC 3339; diagnostic. */
  readonly applied_at: string;
  readonly database?: DatabaseCheck;
  /** For a login file: the login role its secret is the password of (`web1_app_a`). */
  readonly login?: string;
  /** For a login: its open sessions when the receipt was written (at most RECEIPT_SESSIONS_MAX). */
  readonly sessions?: readonly LoginSession[];
  /** For a login: how many of its sessions the provisioner ended on an end-sessions request. */
  readonly ended_sessions?: number;
}

/** One open session of a login, as `pg_stat_activity` shows it (never what it runs). */
export interface LoginSession {
  readonly pid: number;
  readonly application_name: string;
  /** null for a local socket. */
  readonly client_addr: string | null;
  /** RFC 3339. */
  readonly backend_start: string;
}

/** A receipt names at most this many sessions: enough to find the holders, never a flood. */
export const RECEIPT_SESSIONS_MAX = 20;

export function parseReceipt(text: string): Receipt | undefined {
  try {
    const value = JSON.parse(text) as Partial<Receipt>;
    if (
      typeof value.role === 'string' &&
      typeof value.digest === 'string' &&
      /^sha256:[0-9a-f]{64}$/.test(value.digest)
    ) {
      const database = parseDatabaseCheck(value.database);
      const sessions = parseSessions(value.sessions);
      return {
        role: value.role,
        digest: value.digest,
        applied_at: String(value.applied_at ?? ''),
        ...(database ? { database } : {}),
        ...(typeof value.login === 'string' ? { login: value.login } : {}),
        ...(sessions ? { sessions } : {}),
        ...(Number.isSafeInteger(value.ended_sessions) && value.ended_sessions! >= 0
          ? { ended_sessions: value.ended_sessions }
          : {}),
      };
    }
  } catch {
    // An unreadable receipt is "not applied yet", never an error that stops a rotation.
  }
  return undefined;
}

/** Sessions of an unknown shape are dropped one by one; a list that is not one is dropped whole. */
function parseSessions(value: unknown): LoginSession[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value
    .flatMap((item): LoginSession[] => {
      if (typeof item !== 'object' || item === null) return [];
      const { pid, application_name, client_addr, backend_start } = item as Record<string, unknown>;
      if (
        !Number.isSafeInteger(pid) ||
        typeof application_name !== 'string' ||
        typeof backend_start !== 'string'
      )
        return [];
      if (client_addr !== null && typeof client_addr !== 'string') return [];
      return [{ pid: pid as number, application_name, client_addr, backend_start }];
    })
    .slice(0, RECEIPT_SESSIONS_MAX);
}

/** A check of a shape this version does not know is dropped (the receipt reads as an old one). */
function parseDatabaseCheck(value: unknown): DatabaseCheck | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { found, since, problem, restored, verifier } = value as Record<string, unknown>;
  if (!DATABASE_FINDINGS.includes(found as DatabaseFinding) || typeof since !== 'string') return undefined;
  return {
    found: found as DatabaseFinding,
    since,
    ...(typeof problem === 'string' ? { problem } : {}),
    ...(DATABASE_FINDINGS.includes(restored as DatabaseFinding) && restored !== 'as-set'
      ? { restored: restored as Exclude<DatabaseFinding, 'as-set'> }
      : {}),
    ...(typeof verifier === 'string' && /^sha256:[0-9a-f]{64}$/.test(verifier) ? { verifier } : {}),
  };
}

/** True when the receipt says the database no longer holds what was applied. */
export function changedInDatabase(receipt: Receipt | undefined): boolean {
  return receipt?.database !== undefined && receipt.database.found !== 'as-set';
}

export function formatReceipt(receipt: Receipt): string {
  return `${JSON.stringify(receipt)}\n`;
}
