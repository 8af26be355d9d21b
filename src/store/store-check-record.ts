/**
 * The last `baton store check` of a store, kept PER STORE and shared by every state dir beside
 * this one: `<state root>/store-checks/<sha256 of the store URL, 32 hex>.json`, where the
 * state root is the state dir's parent (/var/lib/baton for the default layout). Two state dirs
 * on one host that publish to the same store must agree on whether it enforces conditional
 * writes: a result kept per state dir let one host publish blindly to a store another had found
 * wanting. Replaced atomically (temp → fsync → rename → fsync dir): a reader never sees half
 * a record. docs/configuration.md#store-check describes the file.
 */
import { sha256Hex } from '../sha256.js';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { randomHex, renameDurably, writeExclusive } from '../fs/durable-write.js';
import type { ConditionalWriteCheck, ProbeName } from './store.js';

/** The record older versions kept inside the state dir; still read when no shared one exists. */
export const STORE_CHECK_FILE = 'store-check.json';
export const STORE_CHECKS_DIR = 'store-checks';

export interface StoreCheckJson {
  /** The store URL as configured; a record made against another store is never used. */
  readonly store: string;
  readonly enforced: boolean;
  /** The probes that failed (create-only, replace-if-unchanged); empty when enforced. */
  readonly failed?: readonly ProbeName[];
  readonly detail: string;
  /** RFC 3339. */
  readonly checked_at: string;
}

/**
 * A CHECK EXPIRES. A store that enforced conditional writes when it was checked can stop (a
 * proxy put in front of it, an emulator swapped in, a bucket moved): a result kept for good let
 * two pushes both win on such a store. After this long the record no longer vouches for the
 * store, and the next write probes it again (src/share/store-guard.ts).
 */
export const STORE_CHECK_MAX_AGE_MS = 24 * 60 * 60 * 1000;
export const STORE_CHECK_MAX_AGE_WORDS = '24 hours';

/** True when the record is older than STORE_CHECK_MAX_AGE_MS (or its time cannot be read, or lies ahead). */
export function storeCheckExpired(record: Pick<StoreCheckJson, 'checked_at'>, now: Date): boolean {
  const at = Date.parse(record.checked_at);
  if (Number.isNaN(at)) return true;
  const age = now.getTime() - at;
  // A record from the future (a clock set back since) vouches for nothing either.
  return age > STORE_CHECK_MAX_AGE_MS || age < -5 * 60_000;
}

/** The store's id: the hex SHA-256 of its URL. Its first 8 characters bind the unenforced-store override. */
export function storeId(storeUrl: string): string {
  return sha256Hex(storeUrl); // in JavaScript: status finds the record without node:crypto
}

/** Where the shared record of `storeUrl` lives for the state dir `stateDir`. */
export function storeCheckFile(stateDir: string, storeUrl: string): string {
  return path.join(
    path.dirname(path.resolve(stateDir)),
    STORE_CHECKS_DIR,
    `${storeId(storeUrl).slice(0, 32)}.json`,
  );
}

export async function writeStoreCheck(
  stateDir: string,
  storeUrl: string,
  check: ConditionalWriteCheck,
  now: Date,
): Promise<string> {
  const file = storeCheckFile(stateDir, storeUrl);
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const record: StoreCheckJson = {
    store: storeUrl,
    enforced: check.enforced,
    failed: check.failed,
    detail: check.detail,
    checked_at: now.toISOString(),
  };
  const temp = path.join(dir, `.${path.basename(file)}.tmp-${randomHex(6)}`);
  try {
    await writeExclusive(temp, new TextEncoder().encode(`${JSON.stringify(record, null, 2)}\n`), 0o644);
    await renameDurably(temp, file);
  } finally {
    await rm(temp, { force: true });
  }
  return file;
}

/**
 * The last check, only when it was made against THIS store: a check of another store says
 * nothing about this one. Missing or malformed reads as "not checked", never as an error —
 * status must still show both fingerprints.
 */
export async function readStoreCheck(
  stateDir: string,
  storeUrl: string,
): Promise<StoreCheckJson | undefined> {
  return (
    (await readRecord(storeCheckFile(stateDir, storeUrl), storeUrl)) ??
    (await readRecord(path.join(stateDir, STORE_CHECK_FILE), storeUrl))
  );
}

async function readRecord(file: string, storeUrl: string): Promise<StoreCheckJson | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const record = raw as Record<string, unknown>;
  if (record.store !== storeUrl || typeof record.enforced !== 'boolean') return undefined;
  const failed = Array.isArray(record.failed)
    ? record.failed.filter((p): p is ProbeName => p === 'create-only' || p === 'replace-if-unchanged')
    : [];
  return {
    store: storeUrl,
    enforced: record.enforced,
    failed,
    detail: typeof record.detail === 'string' ? record.detail : '',
    checked_at: typeof record.checked_at === 'string' ? record.checked_at : 'unknown',
  };
}
