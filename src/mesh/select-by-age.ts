/**
 * `mesh rotate --older-than 90d`: of the pairs the selector names, those last rotated longer
 * ago than the limit — by the same reading `mesh status` does (journal first, else the provider
 * end's mtime). A pair with no known age has never been rotated as far as baton can tell, so it
 * counts as older: skipping it would leave the oldest credential of all in place.
 */
import { pairKey, type Inventory } from './inventory.js';
import type { JournalHistory } from './journal-history.js';
import { readMeshStatus } from './read-mesh-status.js';
import { planRotation, type RotationPlan } from './rotation-plan.js';
import type { Selector } from './selector.js';
import type { TransportFor } from './transport.js';
import { formatAge } from './credential-age.js';

export interface AgeSelection {
  /** The narrowed plan, or undefined when no pair is older than the limit. */
  readonly plan: RotationPlan | undefined;
  /** How many pairs the selector named before the age filter. */
  readonly considered: number;
}

export async function selectOlderThan(
  inventory: Inventory,
  selector: Selector,
  limitText: string,
  limitMs: number,
  transportFor: TransportFor,
  history: JournalHistory,
  options: { readonly concurrency: number; readonly nowMs: number },
): Promise<AgeSelection> {
  const all = planRotation(inventory, selector);
  const statuses = await readMeshStatus(all, transportFor, history, { ...options, maxAgeMs: limitMs });
  const ages = new Map<string, string>();
  for (const s of statuses) {
    if (!s.tooOld) continue;
    ages.set(
      s.pair.key,
      s.ageMs === undefined
        ? 'never rotated'
        : `${formatAge(s.ageMs)}${s.lastRotated?.source === 'file-mtime' ? ' (file mtime)' : ''}`,
    );
  }
  if (ages.size === 0) return { plan: undefined, considered: all.pairs.length };
  const narrowed = planRotation(inventory, selector, (pair) => ages.has(pairKey(pair)));
  const selectorText =
    selector.by === 'all'
      ? `--older-than ${limitText}`
      : `${narrowed.selectorText} --older-than ${limitText}`;
  return { plan: { ...narrowed, selectorText, ages }, considered: all.pairs.length };
}
