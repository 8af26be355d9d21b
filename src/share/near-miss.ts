/**
 * NOTHING HERE IS NOT ALWAYS "NOTHING PUBLISHED". Two empty reads are near misses, and minting
 * on either gives the fleet a second authority (every node then drops off one of them):
 *
 * - a document of THIS deployment at a neighbouring prefix: the store URL is mistyped
 *   (`…/wier` for `…/wire`), and the deployment's real document is one directory over;
 * - earlier versions of this very key in a versioned store: the document was deleted (a delete
 *   marker hides them), and this deployment has published here before.
 *
 * Read loosely (the `deployment` field of a neighbour, a count of versions) and only ever used
 * to REFUSE minting, never to install: a planted neighbour can block a mint, never cause one.
 */
import type { Store } from '../store/store.js';
import { findNeighbours, type Neighbour } from './neighbours.js';
import type { NearMiss } from './types.js';

export interface EmptyStoreLook {
  /** Every document at a neighbouring prefix, with the deployment each names (shown by status). */
  readonly neighbours: readonly Neighbour[];
  /** Set when the empty read must not be taken as a fresh deployment. */
  readonly nearMiss: NearMiss | undefined;
}

/** Looks around an empty store. Never throws: what cannot be listed is simply not evidence. */
export async function lookAroundEmptyStore(store: Store, deployment: string): Promise<EmptyStoreLook> {
  const [neighbours, earlierVersions] = await Promise.all([
    findNeighbours(store).catch(() => [] as readonly Neighbour[]),
    countEarlierVersions(store),
  ]);
  const ours = neighbours.filter((n) => n.deployment === deployment).map((n) => n.location);
  return {
    neighbours,
    nearMiss: ours.length > 0 || earlierVersions > 0 ? { neighbours: ours, earlierVersions } : undefined,
  };
}

async function countEarlierVersions(store: Store): Promise<number> {
  if (!store.documentVersions) return 0;
  try {
    const listed = await store.documentVersions();
    // A version that is the LATEST is hidden by no delete marker: it was published between the
    // empty read and this listing (a second controller winning the first-controller race), not
    // deleted. Counting it blocked the loser with "the document was deleted" (seen on moto).
    return listed.listed && !listed.versions.some((v) => v.isLatest) ? listed.versions.length : 0;
  } catch {
    return 0;
  }
}
