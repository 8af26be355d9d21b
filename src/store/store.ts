/**
 * Where a deployment's authority is published (docs/publishing.md). A CHANNEL, NOT THE SOURCE OF
 * TRUTH: the files on each host are the truth, and this holds a copy of one of them.
 *
 * AN INTERFACE SO THE RULES ARE TESTABLE WITHOUT AWS (the seed's words): the rules run on the
 * in-memory fake; the S3 and directory adapters are proven against real parts.
 */

/** The published document's bytes and the ETag they were read with. */
export interface StoredDocument {
  readonly body: Uint8Array;
  readonly etag: string;
}

/**
 * A conditional write. A first publish is create-only (If-None-Match: *); a replace is
 * if-match on the ETag read for this decision — never a blind overwrite.
 */
export type Precondition =
  { readonly kind: 'create-only' } | { readonly kind: 'if-match'; readonly etag: string };

/** The two preconditions `baton store check` probes. */
export type ProbeName = 'create-only' | 'replace-if-unchanged';

export interface ConditionalWriteCheck {
  /** True when both probes passed (create-only refused twice; stale If-Match refused, right one accepted). */
  readonly enforced: boolean;
  /** The probes that failed; empty when enforced. */
  readonly failed: readonly ProbeName[];
  /** One sentence for status and `store check`. */
  readonly detail: string;
  /** True when the store gave one unchanged object different ETags (a publish's replace would always be refused). */
  readonly etagUnstable?: true;
}

export interface NeighbourDocument {
  readonly location: string;
  readonly body: Uint8Array;
}

/** At most this many neighbouring documents are read, each under 64 KiB: a bounded look, not a crawl. */
export const NEIGHBOUR_LIMIT = 5;
export const NEIGHBOUR_MAX_BYTES = 64 * 1024;

export interface Store {
  /** Human-readable location of the document, e.g. s3://bucket/prefix/authority.json. */
  readonly location: string;
  /** The published document, or undefined when nothing is published (an ordinary state). */
  get(): Promise<StoredDocument | undefined>;
  /**
   * Writes the document. A failed precondition throws BatonError('store-changed') — its own
   * error, distinct from every other failure (BatonError('failed') naming the location).
   */
  put(body: Uint8Array, precondition?: Precondition): Promise<{ readonly etag: string }>;
  /**
   * Documents at neighbouring prefixes (other children of this prefix's parent), a few at most,
   * for naming them when nothing is published here (a mistyped --store). Never throws: a store
   * whose credentials may not list answers [].
   */
  neighbours?(): Promise<readonly NeighbourDocument[]>;
  /** `baton store check`: probes create-only and replace-if-unchanged on a probe object, removes it, reports. */
  checkConditionalWrites(): Promise<ConditionalWriteCheck>;
  /**
   * Every stored version of the document (a versioned bucket keeps each one published), for
   * `store check` to find old versions that hold key material in the clear. Absent on stores
   * that keep no versions.
   */
  documentVersions?(): Promise<DocumentVersions>;
  /**
   * The store's clock as its last answer's `Date` header gave it, beside this host's clock at
   * that moment; undefined before any answer, or for a store on this host's own clock (a
   * directory). Minting compares the two (src/share/clock-check.ts).
   */
  lastClockReading?(): ClockReading | undefined;
  /**
   * What seals the document at rest when the STORE does it (SSM: a SecureString under KMS),
   * in words for status; absent where only baton's own seal (seal_key_file) can.
   */
  atRestSeal?(): string;
}

export interface ClockReading {
  /** The store's `Date` (one-second precision). */
  readonly store: Date;
  /** This host's clock when the answer arrived. */
  readonly local: Date;
}

export type DocumentVersions =
  | { readonly listed: true; readonly versions: readonly DocumentVersion[] }
  /** The store would not list them (permission, or no versions API): `why` says which. */
  | { readonly listed: false; readonly why: string };

export interface DocumentVersion {
  readonly versionId: string;
  readonly lastModified: Date | undefined;
  readonly isLatest: boolean;
  /** The version's bytes, or undefined when it is over the size limit or could not be read. */
  readonly body: Uint8Array | undefined;
  /**
   * How the store keeps this version at rest, where it says (SSM: SecureString under a KMS key,
   * or a plain String). A version the store encrypts is not "in the clear" to `store check`.
   */
  readonly atRest?: { readonly encrypted: boolean; readonly words: string };
}
