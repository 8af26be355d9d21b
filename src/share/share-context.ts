/**
 * Builds the ShareContext the operations take from the resolved config: the one place the
 * CLI's commands (sync, failover) turn flags and baton.yaml into a store, a state dir, a seal
 * key and a clock, so two commands cannot read the same config two ways.
 */
import os from 'node:os';
import { systemClock } from '../authority/index.js';
import { requireDeployment, requireStore, stateDirFor, type ResolvedConfig } from '../config/config.js';
import { openStore } from '../store/open-store.js';
import type { ShareContext } from './operations.js';
import { readSealKey } from './seal.js';

export async function openShareContext(config: ResolvedConfig): Promise<ShareContext> {
  const deployment = requireDeployment(config);
  const store = await openStore(requireStore(config));
  const sealKey = config.sealKeyFile ? await readSealKey(config.sealKeyFile) : undefined;
  return {
    deployment,
    stateDir: stateDirFor(config),
    store,
    ...(sealKey ? { sealKey } : {}),
    clock: systemClock,
    host: os.hostname(),
  };
}
