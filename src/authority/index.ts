/**
 * The public face of the authority on disk (DESIGN.md §4). Everything outside src/authority
 * imports from here. STUBS until the authority layer lands: the signatures are the contract
 * the rules (src/share), the flows (src/app) and the commands are written against.
 */
import type { Fingerprint } from '../pki/fingerprint-type.js';
import type { AuthorityFiles, LocalAuthority, PairSummary } from './types.js';

export type { AuthorityFiles, LocalAuthority, PairSummary } from './types.js';

export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };

function pending(name: string): never {
  throw new Error(`${name}: the authority layer has not landed yet`);
}

/** Reader for callers that hold ca.lock (may see the torn-read and pair it exactly). */
export async function readLocalAuthority(_stateDir: string, _deployment: string): Promise<LocalAuthority> {
  return pending('readLocalAuthority');
}

/** Unlocked reader for status: two identical reads, at most 3 tries, else 'changing'. */
export async function snapshotLocalAuthority(_stateDir: string, _deployment: string): Promise<LocalAuthority> {
  return pending('snapshotLocalAuthority');
}

/**
 * Runs `fn` holding ca.lock (flock, exclusive). A second holder — another process or this one
 * — gets BatonError('lock-busy') naming the lock file, at once unless `waitMs` is given.
 */
export async function withAuthorityLock<T>(_stateDir: string, _fn: () => Promise<T>, _opts?: { readonly waitMs?: number }): Promise<T> {
  return pending('withAuthorityLock');
}

/** The allowlisted files of a whole local authority, for publishing. Caller holds the lock. */
export async function readAuthorityFiles(_stateDir: string, _deployment: string): Promise<AuthorityFiles> {
  return pending('readAuthorityFiles');
}

/**
 * Checks a key+certificate pair exactly as the reader does (pairs, self-signed CA, O =
 * deployment) — the one implementation used for files on disk AND files in a document.
 * Throws BatonError('refused') naming the reason and `where`.
 */
export async function checkPair(_key: Uint8Array, _cert: Uint8Array, _deployment: string, _where: string): Promise<PairSummary> {
  return pending('checkPair');
}

/** Mints a new authority IN MEMORY (nothing written). `replaces` sets the OU claim. */
export async function mintAuthority(_deployment: string, _opts?: { readonly clock?: Clock; readonly replaces?: Fingerprint }): Promise<AuthorityFiles> {
  return pending('mintAuthority');
}

/**
 * Installs `files` into an EMPTY ca/ with O_EXCL (+ marker), fsyncs, re-reads and checks the
 * fingerprint equals `expected`. Caller holds the lock.
 */
export async function installAuthority(_stateDir: string, _deployment: string, _files: AuthorityFiles, _expected: Fingerprint): Promise<void> {
  return pending('installAuthority');
}

/** Renames ca/ and the marker to ca.superseded-<UTC stamp>/; returns that path. Never deletes. */
export async function setAsideAuthority(_stateDir: string, _clock?: Clock): Promise<string> {
  return pending('setAsideAuthority');
}
