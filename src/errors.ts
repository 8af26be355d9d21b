/**
 * The one error type of baton. Every refusal and failure an operator can meet is a
 * BatonError with a `code` (what a script branches on, mapped to an exit code below) and a
 * message in three parts: WHAT is wrong, WHERE (file, bucket/key, machine), and what to do
 * NEXT — plus whether anything changed, because at 3 a.m. "Nothing was written." is the
 * sentence that lets an operator breathe.
 *
 * No key material and no secret ever goes into any field of this type.
 */
import { renderSaid, saidText, type Said } from './next-step.js';
import type { Suggester } from './suggest-command.js';

/** The codes a caller (a script, a test, a view) can branch on. */
export type ErrorCode =
  /** Bad flag, bad config field, unknown command. */
  | 'usage'
  /** A config or inventory file that is missing, unparsable or invalid. */
  | 'config'
  /** Something could not be done (I/O error, unreachable store, database down…). */
  | 'failed'
  /** A rule refused the action (lost, half, mismatched, foreign, diverged…). */
  | 'refused'
  /** Read-only answer: not in sync, the operator has something to do. */
  | 'action-needed'
  /** The all-or-nothing gate closed: nothing generated, nothing sent. */
  | 'gate-closed'
  /** Another holder has the authority lock. */
  | 'lock-busy'
  /** A conditional write failed: the store changed since it was read. */
  | 'store-changed'
  /** The operator backed out (typed confirm not given, Ctrl-C). */
  | 'aborted';

/**
 * docs/cli.md exit codes. A Record so a new code that is not mapped fails to compile
 * instead of silently exiting 1.
 */
export const EXIT_CODES: Record<ErrorCode, number> = {
  usage: 2,
  config: 2,
  failed: 1,
  refused: 3,
  'action-needed': 3,
  'gate-closed': 4,
  'lock-busy': 5,
  'store-changed': 6,
  aborted: 3,
};

export const EXIT_OK = 0;

/**
 * What each exit code means: `--help` prints it and docs/cli.md's table is generated from it
 * (`npm run docs:tables`; test/docs/tables.test.ts fails when they differ). Every code
 * EXIT_CODES uses must have its words here, or the help would say "see the docs".
 */
export const EXIT_CODE_MEANINGS: Readonly<Record<number, string>> = {
  [EXIT_OK]: 'ok (status: in sync)',
  [EXIT_CODES.failed]: 'failed (status: could not read)',
  [EXIT_CODES.usage]: 'usage or config error',
  [EXIT_CODES.refused]:
    'refused, action needed, or backed out (a typed confirm not given, Ctrl-C, q part-way)',
  [EXIT_CODES['gate-closed']]: 'aborted by the all-or-nothing gate (nothing sent)',
  [EXIT_CODES['lock-busy']]: 'a lock is busy (the authority lock, the mesh lock)',
  [EXIT_CODES['store-changed']]: 'the store changed underneath (precondition failed)',
};

/** Every exit code the CLI uses, in order, with its words. */
export function exitCodeRows(): { readonly code: number; readonly meaning: string }[] {
  const codes = [...new Set([EXIT_OK, ...Object.values(EXIT_CODES)])].sort((a, b) => a - b);
  return codes.map((code) => ({ code, meaning: EXIT_CODE_MEANINGS[code] ?? 'see docs/cli.md' }));
}

/** The exit codes for `--help`: a script's author reads them there, not in the source. */
export function exitCodeHelp(): string {
  return ['Exit codes:', ...exitCodeRows().map(({ code, meaning }) => `  ${code}  ${meaning}`)].join('\n');
}

/**
 * Why a conditional write was refused ('store-changed'): each has its own words, and a caller
 * that re-words the refusal (publish) reads this field, never the sentence it was built into.
 */
export type StoreChangedReason =
  /** A create-only write met an object published after the store was read as empty. */
  | 'published-meanwhile'
  /** The object is not the one that was read (if-match on a stale ETag). */
  | 'replaced'
  /** The object that was read has been removed. */
  | 'removed'
  /** Another write to the same object was in progress (S3's 409). */
  | 'write-in-progress';

/**
 * Why the store failed or refused to be read or written. A field and not words because
 * callers act on it: a cut-short or timed-out write may have been applied by the store and is
 * re-read before it is reported, while a denied one certainly was not. Rewording a message
 * must never change what baton does.
 */
export type StoreFailureReason =
  /** The endpoint refused the connection, could not be resolved or reached. */
  | 'unreachable'
  /** The store did not answer in time. */
  | 'timed-out'
  /** The connection closed before the whole answer arrived. */
  | 'cut-short'
  /** The endpoint answered plain HTTP where TLS was asked for. */
  | 'plain-http'
  /** The endpoint answered 404 without S3's own error: not known to be an S3 API. */
  | 'not-s3'
  /** Access denied (403, bad key, bad signature, expired token). */
  | 'denied'
  /** The store refused the request's time: this host's clock is off (RequestTimeTooSkewed). */
  | 'clock-skew'
  /** No credentials were found. */
  | 'no-credentials'
  /** No region is set. */
  | 'no-region'
  /** The bucket lives in another region. */
  | 'wrong-region'
  /** The bucket does not exist. */
  | 'no-bucket'
  /** The store throttled requests and the retries ran out. */
  | 'throttled'
  /** The store failed on its side (HTTP 5xx). */
  | 'server-error'
  /** The store answered without an ETag: a replace could not be conditional. */
  | 'no-etag'
  /** The store gives the same bytes a different ETag: a replace if-match is refused though nothing changed. */
  | 'etag-unstable'
  /** The published document is over the size limit (refused before it is buffered). */
  | 'oversize'
  /** The published document is not a regular file (directory store). */
  | 'not-a-file'
  /** Another writer holds the directory store's lock. */
  | 'lock-busy'
  /** A file-system call on the directory store failed (open, read, write, mkdir). */
  | 'io'
  /** Any other failure of the store. */
  | 'other';

/** Every store error's reason: a failed precondition or a failure. */
export type StoreReason = StoreChangedReason | StoreFailureReason;

/**
 * Why an action on the deployment's authority was refused (src/share/refusals.ts): the same
 * code ('refused') covers rules that have different ways out, and a caller or a test tells
 * them apart by this field, never by the sentence.
 */
export type RefusalReason =
  /** The decision table does not allow this action on this verdict. */
  | 'not-allowed'
  /** The verdict is blocked: this host or the published document must be repaired first. */
  | 'blocked'
  /** This host's authority differs from the published one (the REFUSE row). */
  | 'diverged'
  /** A publish over a different document by a host that is not ahead of it. */
  | 'not-ahead'
  /** This host's authority changed between the look and the lock. */
  | 'local-changed'
  /** The published authority has expired. */
  | 'expired'
  /** The published authority is not valid yet (a clock runs ahead). */
  | 'not-yet-valid'
  /** Publishing would replace a sealed document with one in the clear. */
  | 'would-unseal'
  /** This host has no seal key and the operator has not said to publish in the clear. */
  | 'seal-unstated'
  /** The store is known not to enforce conditional writes, and no bound override was given. */
  | 'store-unenforced'
  /** The published document belongs to another deployment: the wrong store. */
  | 'foreign-deployment'
  /** The published document was written by a newer baton. */
  | 'newer-format'
  /** This host holds no whole authority to publish. */
  | 'nothing-to-publish'
  /** The published document's handover signature does not verify. */
  | 'tampered'
  /**
   * The decoder refused the published document (damaged, another deployment's, a newer
   * format, a seal that does not open); the read's `problem` says which way out applies.
   */
  | 'document-refused'
  /**
   * The document is a valid one of this deployment by its header, sealed, and does not open
   * with this host's seal key: the key differs from the fleet's (or the document was altered).
   */
  | 'sealed-with-another-key'
  /** A document of this deployment sits at a neighbouring prefix, or the store keeps earlier versions of it. */
  | 'near-miss'
  /** The published document is an older version replayed over a later rotation of it. */
  | 'replayed'
  /** This host's clock is too far from the store's to mint a certificate. */
  | 'clock-off';

/** The structured why of an error: a store's failure or a rule's refusal. */
export type ErrorReason = StoreReason | RefusalReason;

export interface BatonErrorParts {
  /** What is wrong, one sentence. */
  readonly what: string;
  /** Where: the file, directory, bucket/key, machine. */
  readonly where?: string;
  /**
   * What the operator can do next: a sentence, or a Said (text and NextSteps) when it names a
   * command, which the edge renders with the operator's global flags.
   */
  readonly next?: string | Said;
  /** Whether anything changed, e.g. "Nothing was written." */
  readonly changed?: string;
  /** The underlying error, for diagnostics only (never shown with key material). */
  readonly cause?: unknown;
  /** Set on every store error and share refusal: what a caller branches on instead of the wording. */
  readonly reason?: ErrorReason;
}

export class BatonError extends Error {
  readonly code: ErrorCode;
  readonly what: string;
  readonly where: string | undefined;
  /** The next step as text, its commands with plain `baton`. */
  readonly next: string | undefined;
  /** The next step as structure, when it names commands: render it with `lines(suggester)`. */
  readonly said: Said | undefined;
  readonly changed: string | undefined;
  readonly reason: ErrorReason | undefined;

  constructor(code: ErrorCode, parts: BatonErrorParts) {
    const next =
      parts.next === undefined || typeof parts.next === 'string' ? parts.next : saidText(parts.next);
    super(joinParts({ ...parts, next }), parts.cause === undefined ? undefined : { cause: parts.cause });
    this.name = 'BatonError';
    this.code = code;
    this.what = parts.what;
    this.where = parts.where;
    this.next = next;
    this.said = parts.next === undefined || typeof parts.next === 'string' ? undefined : parts.next;
    this.changed = parts.changed;
    this.reason = parts.reason;
  }

  get exitCode(): number {
    return EXIT_CODES[this.code];
  }

  /** The three parts as lines; with a suggester, the commands of `said` carry the global flags. */
  lines(s?: Suggester): string[] {
    return partsToLines({ ...this, next: s && this.said ? renderSaid(s, this.said) : this.next });
  }
}

function partsToLines(
  parts: Omit<BatonErrorParts, 'next'> & { readonly next?: string | undefined },
): string[] {
  const lines = [parts.what];
  if (parts.where) lines.push(`Where: ${parts.where}`);
  if (parts.changed) lines.push(parts.changed);
  if (parts.next) lines.push(`Next: ${parts.next}`);
  return lines;
}

function joinParts(parts: Omit<BatonErrorParts, 'next'> & { readonly next?: string | undefined }): string {
  return partsToLines(parts).join('\n');
}

export function isBatonError(error: unknown): error is BatonError {
  return error instanceof BatonError;
}

/**
 * Wraps anything thrown into a BatonError so a view or the CLI never shows a stack trace.
 * `context` says what was being done, e.g. "Reading /var/lib/baton/x/ca/ca.crt".
 */
export function asBatonError(error: unknown, context: Omit<BatonErrorParts, 'cause'>): BatonError {
  if (isBatonError(error)) return error;
  const detail = error instanceof Error ? error.message : String(error);
  return new BatonError('failed', { ...context, what: `${context.what} (${detail})`, cause: error });
}

/** The exit code for anything thrown: a BatonError's mapping, else 1. */
export function exitCodeOf(error: unknown): number {
  return isBatonError(error) ? error.exitCode : EXIT_CODES.failed;
}
