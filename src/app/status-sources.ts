/**
 * The real adapters behind a status read: the unlocked snapshot reader, the store, the last
 * `store check`. NOTHING HERE WRITES OR TAKES THE LOCK by default — status can be left
 * running or polled by monitoring beside a failover without ever getting in its way. The lock
 * probe (failover only) touches ca.lock only when it already exists, and only to flock it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { layoutOf, snapshotLocalAuthority, withAuthorityLock } from '../authority/index.js';
import { isBatonError } from '../errors.js';
import { readSealKey } from '../share/seal.js';
import { readPublished } from '../share/published.js';
import type { Store } from '../store/store.js';
import type { LockProbe, StatusSources, StoreCheckRecord } from './status-report.js';

export interface StatusSourceConfig {
  readonly deployment: string;
  readonly stateDir: string;
  readonly storeUrl: string;
  readonly store: Store;
  readonly sealKeyFile: string | undefined;
}

/** `<stateDir>/store-check.json`, written by `baton store check`. */
export const STORE_CHECK_FILE = 'store-check.json';

export function statusSources(config: StatusSourceConfig, options: { readonly probeLock?: boolean } = {}): StatusSources {
  return {
    deployment: config.deployment,
    stateDir: config.stateDir,
    storeUrl: config.storeUrl,
    readLocal: () => snapshotLocalAuthority(config.stateDir, config.deployment),
    async readPublished() {
      // Without the key a sealed document still shows its header; a key that cannot be read
      // must not hide the fingerprints a status view exists to compare.
      const sealKey = config.sealKeyFile ? await readSealKey(config.sealKeyFile).catch(() => undefined) : undefined;
      return readPublished(config.store, config.deployment, sealKey);
    },
    readStoreCheck: () => readStoreCheck(config.stateDir, config.storeUrl),
    ...(options.probeLock ? { probeLock: () => probeLock(config.stateDir) } : {}),
    now: () => new Date(),
  };
}

/** The last check, only when it was made against THIS store (a check of another store says nothing). */
export async function readStoreCheck(stateDir: string, storeUrl: string): Promise<StoreCheckRecord | undefined> {
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
    checkedAt: typeof record.checked_at === 'string' ? record.checked_at : 'unknown',
  };
}

/**
 * Is another process holding ca.lock? A lock file that does not exist is held by nobody, and
 * is NOT created here: the walk writes nothing before the final confirm.
 */
export async function probeLock(stateDir: string): Promise<LockProbe> {
  if (!existsSync(layoutOf(stateDir).lock)) return { state: 'free' };
  try {
    await withAuthorityLock(stateDir, async () => undefined);
    return { state: 'free' };
  } catch (error) {
    if (isBatonError(error) && error.code === 'lock-busy') return { state: 'busy', error };
    return { state: 'not-probed' };
  }
}
