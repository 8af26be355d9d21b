/**
 * Credentials are compared by digest and never by content (mesh seed): a secret does not
 * belong in a long-lived variable when a hash answers the same question. The one digest
 * function of the mesh, the journal, the provisioner and its receipts.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { parseJsonRecord } from './json-record.js';

/** `sha256:<64 hex>` of the secret's exact bytes. */
export type SecretDigest = string & { readonly __brand: 'SecretDigest' };

export function secretDigest(secret: Uint8Array | string): SecretDigest {
  return `sha256:${createHash('sha256').update(secret).digest('hex')}` as SecretDigest;
}

/** A short prefix for logs and screens: enough to tell two apart, nothing to brute-force. */
export function digestPrefix(digest: SecretDigest): string {
  return digest.slice(0, 'sha256:'.length + 12);
}

/** Whether `digest` is the one a journal names by its prefix (digestPrefix); nothing matches an absent one. */
export function isDigestOf(prefix: string | undefined, digest: SecretDigest | undefined): boolean {
  return prefix !== undefined && digest !== undefined && digest.startsWith(prefix);
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

const DIGEST_TEXT = /^sha256:[0-9a-f]{64}$/;

/**
 * The receipt as read back, stated once: `role` and a well-formed `digest` make a receipt; every
 * other field a provisioner of another version may have written differently is dropped on its
 * own (the receipt then reads as one written before that field existed), never taken half-typed:
 * a check of an unknown shape, a session that is not one (dropped one by one; at most
 * RECEIPT_SESSIONS_MAX kept), a count that is not a whole number. Fields this version does not
 * know are not kept. Made on first use, as the other records' schemas.
 */
let receiptSchema: z.ZodType<Receipt> | undefined;
function schemaOfReceipt(): z.ZodType<Receipt> {
  if (receiptSchema) return receiptSchema;
  const dropped = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
  const wholeNumber = z.number().refine(Number.isSafeInteger);
  const session = z.object({
    pid: wholeNumber,
    application_name: z.string(),
    client_addr: z.string().nullable(),
    backend_start: z.string(),
  });
  const database = z.object({
    found: z.enum(DATABASE_FINDINGS),
    since: z.string(),
    problem: dropped(z.string()),
    restored: dropped(z.enum(DATABASE_FINDINGS).exclude(['as-set'])),
    verifier: dropped(z.string().regex(DIGEST_TEXT)),
  });
  const schema = z
    .object({
      role: z.string(),
      digest: z.string().regex(DIGEST_TEXT),
      // Diagnostic only: whatever was written is kept as text (absent: empty).
      applied_at: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional().catch(undefined),
      database: dropped(database),
      login: dropped(z.string()),
      sessions: dropped(
        z.array(z.unknown()).transform((items) =>
          items
            .flatMap((item) => {
              const read = session.safeParse(item);
              return read.success ? [read.data] : [];
            })
            .slice(0, RECEIPT_SESSIONS_MAX),
        ),
      ),
      ended_sessions: dropped(wholeNumber.refine((n) => n >= 0)),
    })
    // A field dropped is absent, not present as undefined: a receipt rewritten from this one
    // (the provisioner's) says exactly what was read.
    .transform(
      ({ role, digest, applied_at, ...rest }) =>
        withoutAbsent({ role, digest, applied_at: String(applied_at ?? ''), ...rest }) as Receipt,
    );
  return (receiptSchema = schema);
}

function withoutAbsent<T extends object>(value: T): T {
  const copy = { ...value } as Record<string, unknown>;
  for (const [key, field] of Object.entries(copy)) {
    if (field === undefined) delete copy[key];
    else if (typeof field === 'object' && field !== null && !Array.isArray(field))
      copy[key] = withoutAbsent(field);
  }
  return copy as T;
}

/** The one reader of a receipt: text that is not one is "not applied yet", never an error that stops a rotation. */
export function parseReceipt(text: string): Receipt | undefined {
  return parseJsonRecord(schemaOfReceipt(), text);
}

/** True when the receipt says the database no longer holds what was applied. */
export function changedInDatabase(receipt: Receipt | undefined): boolean {
  return receipt?.database !== undefined && receipt.database.found !== 'as-set';
}

export function formatReceipt(receipt: Receipt): string {
  return `${JSON.stringify(receipt)}\n`;
}
