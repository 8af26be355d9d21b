/**
 * The ShareContext every action takes, and its builder from the resolved config: the one place
 * the CLI's commands (sync, failover) turn flags and baton.yaml into a store, a state dir, a
 * seal key and a clock, so two commands cannot read the same config two ways.
 */
import os from 'node:os';
import { systemClock, type Clock } from '../authority/index.js';
import {
  requireDeployment,
  requireStore,
  stateDirFor,
  storeOptionsOf,
  type ResolvedConfig,
} from '../config/config.js';
import { BatonError } from '../errors.js';
import { openStore } from '../store/open-store.js';
import type { S3StoreOptions } from '../store/s3-store.js';
import type { Store } from '../store/store.js';
import { parseStoreUrl } from '../store/store-url.js';
import type { Suggester } from '../suggest-command.js';
import { readSealKey } from './seal.js';
import { storeWriteGuard } from './store-guard.js';

/** Everything an action needs, built once by the composition root (CLI or console). */
export interface ShareContext {
  readonly stateDir: string;
  readonly deployment: string;
  readonly store: Store;
  /** The 32-byte seal key when the deployment seals its document (seal_key_file). */
  readonly sealKey?: Uint8Array;
  /**
   * True when the operator said this deployment publishes unsealed (`seal: none` or
   * --no-seal). Without it and without a seal key, nothing is ever written in the clear: the
   * store cannot tell us whether the deployment seals, since anyone who can write it can
   * corrupt or delete a sealed document.
   */
  readonly noSeal: boolean;
  /**
   * Runs before every write of the document (src/share/store-guard.ts): refuses a store known
   * not to enforce conditional writes. The CLI's composer always sets it; an in-process caller
   * on a store it knows enforces (memory, directory) may leave it out.
   */
  readonly beforeWrite?: () => Promise<void>;
  readonly clock: Clock;
  /** This host's name, written into the document as published_by (diagnostic only). */
  readonly host: string;
  /**
   * The one builder of suggested commands (src/suggest-command.ts), with the global flags the
   * operator gave: a next step written as a bare `baton sync` would read another config and
   * act on another host. Default: plain `baton`.
   */
  readonly suggester?: Suggester;
}

export interface ShareContextOptions {
  /** The S3 adapter's timeouts and attempts, when the composer injects them (tests). */
  readonly storeOptions?: S3StoreOptions;
}

export async function openShareContext(
  config: ResolvedConfig,
  options: ShareContextOptions = {},
): Promise<ShareContext> {
  const deployment = requireDeployment(config);
  const storeUrl = requireStore(config);
  // ON SSM THE AT-REST SEAL IS KMS: the document is a SecureString, and billet reads it with
  // no seal key of baton's, so a document sealed by baton could never be adopted by billet.
  const onSsm = parseStoreUrl(storeUrl).kind === 'ssm';
  if (onSsm && config.sealKeyFile) throw batonSealOnSsmError(config.source);
  const store = await openStore(storeUrl, options.storeOptions ?? storeOptionsOf(config));
  const stateDir = stateDirFor(config);
  const sealKey = config.sealKeyFile ? await readSealKey(config.sealKeyFile) : undefined;
  return {
    deployment,
    stateDir,
    store,
    beforeWrite: storeWriteGuard({ stateDir, storeUrl, store, override: config.storeUnenforced }),
    ...(sealKey ? { sealKey } : {}),
    // Stated by the store itself: an ssm:// store keeps the document encrypted under KMS.
    noSeal: config.seal === 'none' || onSsm,
    clock: systemClock,
    host: os.hostname(),
  };
}

/** seal_key_file with an ssm:// store: refused, because billet could not read what it seals. */
export function batonSealOnSsmError(source: string | undefined): BatonError {
  return new BatonError('config', {
    what: "seal_key_file is set, but the store is SSM Parameter Store: there the document is a SecureString sealed by KMS, and billet reads it without baton's seal key, so a document sealed by baton could never be adopted by billet.",
    where: source ?? 'the command line (--seal-key-file)',
    next: 'Remove seal_key_file (or --seal-key-file) for this deployment; to choose the KMS key, add ?kms_key_id=<key id or alias> to the ssm:// store URL (billet: identity.aws_ssm.kms_key_id).',
    changed: 'Nothing was read or written.',
  });
}
