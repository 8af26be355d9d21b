/**
 * How baton touches a holder. Every operation takes a batch of paths for ONE machine, so a
 * provider with a hundred consumers costs one round trip per phase, not a hundred.
 *
 * Writes are atomic (temp file → fsync → rename) with umask 077: a reader of `<role>` sees
 * the old secret or the new one, never half of one, and never a file others can read.
 */
import type { SecretDigest } from './digest.js';
import type { Secret } from './secret.js';

/** Where a transport stages a file beside its live path; the commit renames it into place. */
export const STAGED_SUFFIX = '.next';

export interface StagedFile {
  /** The LIVE path; the transport writes `<path>.next`. */
  readonly path: string;
  readonly secret: Secret;
}

/** What a holder has at one live path. */
export interface FileDigests {
  readonly live: SecretDigest | undefined;
  readonly next: SecretDigest | undefined;
}

export interface Transport {
  readonly machine: string;
  /** Resolves when the machine answers now; rejects with a TransportError saying why not. */
  resolve(): Promise<void>;
  /**
   * Writes each secret to `<path>.next` (0600, parents 0700) and returns the digest of what
   * landed in each, read back from the holder in the same round trip. All or an error.
   */
  stage(files: readonly StagedFile[]): Promise<readonly (SecretDigest | undefined)[]>;
  /** Renames `<path>.next` → `<path>` for each path; fails if a staged file is missing. */
  commit(paths: readonly string[]): Promise<void>;
  /** Removes `<path>.next` (and any temp file) for each path; absent is fine. */
  unstage(paths: readonly string[]): Promise<void>;
  /** Digests of the live and staged files (never their content). */
  digests(paths: readonly string[]): Promise<readonly FileDigests[]>;
  /** The text of small non-secret files (receipts); undefined where absent. */
  readTexts(paths: readonly string[]): Promise<readonly (string | undefined)[]>;
}

/** The transport of a machine, by inventory name (built by the commands, passed down). */
export type TransportFor = (machine: string) => Transport;

/** A transport failure, in words an operator can act on; never carries a secret. */
export class TransportError extends Error {
  constructor(
    readonly machine: string,
    readonly reason: string,
  ) {
    super(`${machine}: ${reason}`);
    this.name = 'TransportError';
  }
}

export function reasonOf(error: unknown): string {
  if (error instanceof TransportError) return error.reason;
  if (error instanceof Error) return error.message;
  return String(error);
}
