/**
 * `<stateDir>/store-check.json`: the last `baton store check`, so `status` can say whether the
 * store enforces conditional writes without probing it on every read. Replaced atomically
 * (temp → fsync → rename → fsync dir): a status view never reads half a record.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { renameDurably, writeExclusive } from '../fs/durable-write.js';
import type { ConditionalWriteCheck } from './store.js';

export const STORE_CHECK_FILE = 'store-check.json';

export interface StoreCheckJson {
  /** The store URL as configured; status ignores a record made against another store. */
  readonly store: string;
  readonly enforced: boolean;
  /** The probes that failed (create-only, replace-if-unchanged); empty when enforced. */
  readonly failed?: readonly string[];
  readonly detail: string;
  /** RFC 3339. */
  readonly checked_at: string;
}

export async function writeStoreCheck(stateDir: string, storeUrl: string, check: ConditionalWriteCheck, now: Date): Promise<string> {
  await mkdir(stateDir, { recursive: true, mode: 0o700 });
  const record: StoreCheckJson = { store: storeUrl, enforced: check.enforced, failed: check.failed, detail: check.detail, checked_at: now.toISOString() };
  const file = path.join(stateDir, STORE_CHECK_FILE);
  const temp = path.join(stateDir, `.${STORE_CHECK_FILE}.tmp-${randomBytes(6).toString('hex')}`);
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
export async function readStoreCheck(stateDir: string, storeUrl: string): Promise<StoreCheckJson | undefined> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path.join(stateDir, STORE_CHECK_FILE), 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const record = raw as Record<string, unknown>;
  if (record.store !== storeUrl || typeof record.enforced !== 'boolean') return undefined;
  return {
    store: storeUrl,
    enforced: record.enforced,
    detail: typeof record.detail === 'string' ? record.detail : '',
    checked_at: typeof record.checked_at === 'string' ? record.checked_at : 'unknown',
  };
}
