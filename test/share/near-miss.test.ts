/**
 * An empty read of a versioned store with earlier versions is a deleted document (a near miss:
 * minting would give the fleet a second authority) — unless one of those versions is the
 * latest, which means a second controller published between the empty read and the listing.
 */
import { describe, expect, it } from 'vitest';
import { lookAroundEmptyStore } from '../../src/share/near-miss.js';
import type { DocumentVersion, Store } from '../../src/store/store.js';

const version = (versionId: string, isLatest: boolean): DocumentVersion => ({
  versionId,
  isLatest,
  lastModified: new Date('2026-12-01T00:00:00Z'),
  body: undefined,
});

/** A store that can only list this key's versions (neighbours cannot be listed: no evidence). */
const storeWith = (versions: readonly DocumentVersion[]): Store =>
  ({
    location: 's3://bucket/fleet/authority.json',
    documentVersions: () => Promise.resolve({ listed: true as const, versions }),
  }) as unknown as Store;

describe('the earlier versions of an empty read', () => {
  it('versions hidden by a delete marker (none is the latest) are a near miss, counted', async () => {
    const look = await lookAroundEmptyStore(storeWith([version('v1', false), version('v2', false)]), 'd');
    expect(look.nearMiss).toEqual({ neighbours: [], earlierVersions: 2 });
  });

  it('a version that is the latest was published since the empty read: not a near miss', async () => {
    const look = await lookAroundEmptyStore(storeWith([version('v1', true)]), 'd');
    expect(look.nearMiss).toBeUndefined();
  });
});
