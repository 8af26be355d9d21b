/**
 * The real adapters behind a status read: the unlocked snapshot reader, the store, the last
 * `store check`. NOTHING HERE WRITES OR TAKES THE LOCK by default — status can be left
 * running or polled by monitoring beside a failover without ever getting in its way. The lock
 * probe (failover only) touches ca.lock only when it already exists, and only to flock it.
 */
import { probeAuthorityLock, snapshotLocalAuthority } from '../authority/index.js';
import { readSealKey } from '../share/seal.js';
import { readPublished } from '../share/published.js';
import type { Store } from '../store/store.js';
import { readStoreCheck, STORE_CHECK_MAX_AGE_WORDS, storeCheckExpired } from '../store/store-check-record.js';
import type { StatusSources, StoreCheckRecord } from './status-report.js';

export interface StatusSourceConfig {
  readonly deployment: string;
  readonly stateDir: string;
  readonly storeUrl: string;
  readonly store: Store;
  readonly sealKeyFile: string | undefined;
}

export function statusSources(
  config: StatusSourceConfig,
  options: { readonly probeLock?: boolean } = {},
): StatusSources {
  return {
    deployment: config.deployment,
    stateDir: config.stateDir,
    storeUrl: config.storeUrl,
    readLocal: () => snapshotLocalAuthority(config.stateDir, config.deployment),
    async readPublished() {
      // Without the key a sealed document still shows its header; a key that cannot be read
      // must not hide the fingerprints a status view exists to compare.
      const sealKey = config.sealKeyFile
        ? await readSealKey(config.sealKeyFile).catch(() => undefined)
        : undefined;
      // Nothing here: the read itself names what sits at neighbouring prefixes (the typo case).
      return readPublished(config.store, config.deployment, sealKey);
    },
    readStoreCheck: () => lastStoreCheck(config.stateDir, config.storeUrl),
    ...(options.probeLock ? { probeLock: () => probeAuthorityLock(config.stateDir) } : {}),
    now: () => new Date(),
  };
}

/** The status view's shape of the last `store check` (the file format lives beside its writer). */
async function lastStoreCheck(stateDir: string, storeUrl: string): Promise<StoreCheckRecord | undefined> {
  const record = await readStoreCheck(stateDir, storeUrl);
  return (
    record && {
      store: record.store,
      enforced: record.enforced,
      detail: storeCheckExpired(record, new Date())
        ? `${record.detail} (older than ${STORE_CHECK_MAX_AGE_WORDS}: no longer trusted; the next write probes the store again)`.trim()
        : record.detail,
      checkedAt: record.checked_at,
    }
  );
}
