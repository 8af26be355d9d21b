/**
 * A STORE THAT DOES NOT ENFORCE IS NEVER WRITTEN BLINDLY. Before this host writes the published
 * document it knows whether the store honours If-None-Match and If-Match: from the shared
 * record of the last `store check` of that store, or by running the check itself the first
 * time. On a store known not to enforce, two controllers publishing at once would overwrite
 * each other and both say "Published", so the write is refused naming the probe that failed —
 * unless the operator binds the override to this store (`--store-unenforced VALUE`).
 */
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import type { ProbeName, Store } from '../store/store.js';
import {
  readStoreCheck,
  storeCheckExpired,
  storeId,
  writeStoreCheck,
  type StoreCheckJson,
} from '../store/store-check-record.js';

export interface StoreGuardOptions {
  readonly stateDir: string;
  /** The store URL as configured: the record's key. */
  readonly storeUrl: string;
  readonly store: Store;
  /** What --store-unenforced was given, if anything. */
  readonly override?: string | undefined;
  readonly now?: () => Date;
}

/** The value that binds the override to one store: the first 8 characters of its id (`store check` prints it). */
export function unenforcedOverrideValue(storeUrl: string): string {
  return storeId(storeUrl).slice(0, 8);
}

/**
 * The one check of the override's value, kept in one function so a shared confirmation
 * mechanism can replace it: exact and case-sensitive; a wrong value is a usage error naming
 * what was expected and where to read it, never the value itself.
 */
export function checkUnenforcedOverride(given: string | undefined, storeUrl: string, where: string): boolean {
  if (given === undefined) return false;
  if (given === unenforcedOverrideValue(storeUrl)) return true;
  throw new BatonError('usage', {
    what: `--store-unenforced "${given}" is not this store's value: it must be the 8 characters \`store check\` prints as "override value" for this store.`,
    where,
    changed: 'Nothing was written.',
    next: [
      'Run ',
      nextStep('store check'),
      ' (with the same global flags) and read its "override value" line; pass exactly that after --store-unenforced.',
    ],
  });
}

/** Words for each probe, as the refusal names them. */
const PROBE_WORDS: Record<ProbeName, string> = {
  'create-only': 'create-only (If-None-Match: *)',
  'replace-if-unchanged': 'replace-if-unchanged (If-Match)',
};

/**
 * Runs before every write of the document. Returns when the write may go ahead; throws a
 * refusal (exit 3) on a store known not to enforce, unless the bound override was given.
 */
export function storeWriteGuard(options: StoreGuardOptions): () => Promise<void> {
  const now = options.now ?? (() => new Date());
  return async () => {
    const where = options.store.location;
    // Checked first: a wrong value is refused even where the store turns out to enforce.
    if (checkUnenforcedOverride(options.override, options.storeUrl, where)) return;
    const kept = await readStoreCheck(options.stateDir, options.storeUrl);
    // An expired record is probed again: a store can stop enforcing after it was checked.
    let record: Pick<StoreCheckJson, 'enforced' | 'failed' | 'detail'> | undefined =
      kept && !storeCheckExpired(kept, now()) ? kept : undefined;
    if (!record) {
      const check = await options.store.checkConditionalWrites();
      record = check;
      // The answer stands even when it cannot be kept; the next write simply checks again.
      await writeStoreCheck(options.stateDir, options.storeUrl, check, now()).catch(() => undefined);
    }
    if (record.enforced) return;
    const failed = (record.failed ?? []).map((p) => PROBE_WORDS[p]).join(' and ') || 'a conditional-write';
    throw new BatonError('refused', {
      what: `The store does not enforce conditional writes (the ${failed} probe failed), so another controller publishing at the same time could be overwritten without either noticing. ${record.detail}`.trim(),
      where,
      changed: 'Nothing was written.',
      next: [
        'Use a store (or a path to it) that honours If-None-Match and If-Match, then run ',
        nextStep('store check'),
        ' again. To publish to this store anyway, knowing the risk, add --store-unenforced with the "override value" ',
        nextStep('store check'),
        ' prints for it.',
      ],
      reason: 'store-unenforced',
    });
  };
}
