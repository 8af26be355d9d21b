/**
 * The receipt wait's shared map (src/mesh/shared-map.ts) against a plain Map copied at every
 * change: whatever versions are changed, in whatever order — the newest, or one a newer
 * version has passed (a test replaying from a saved state) — every version keeps reading
 * exactly what it held when it was made, in the same order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  emptyShared,
  sharedDelete,
  sharedSet,
  sharedView,
  type SharedMap,
} from '../../src/mesh/shared-map.js';

type Op = { from: number; key: string; value?: number };

const op = fc.record(
  {
    from: fc.nat(),
    key: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
    value: fc.integer({ min: 0, max: 9 }),
  },
  { requiredKeys: ['from', 'key'] },
);

describe('the shared map', () => {
  it('every version reads what a copied Map would, however versions are changed and branched', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops: Op[]) => {
        const versions: SharedMap<number>[] = [emptyShared()];
        const models: Map<string, number>[] = [new Map()];
        for (const o of ops) {
          const i = o.from % versions.length;
          const model = new Map(models[i]);
          if (o.value === undefined) {
            model.delete(o.key);
            versions.push(sharedDelete(versions[i]!, o.key));
          } else {
            model.set(o.key, o.value);
            versions.push(sharedSet(versions[i]!, o.key, o.value));
          }
          models.push(model);
          // Every version, old and new, still reads as its model, entries in the same order.
          versions.forEach((v, j) => expect([...sharedView(v)]).toEqual([...models[j]!]));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a line of versions shares one map, changed in place; deleting what it does not hold is the same version', () => {
    let map = emptyShared<number>();
    const first = map;
    for (let i = 0; i < 1000; i++) map = sharedSet(map, `k${i % 50}`, i);
    expect(map.store).toBe(first.store);
    expect(sharedView(map)).toBe(first.store.head);
    expect(sharedDelete(map, 'absent')).toBe(map);
    // A passed version changed: it branches off, and the newest is untouched.
    const branch = sharedSet(first, 'x', 1);
    expect([...sharedView(branch)]).toEqual([['x', 1]]);
    expect(sharedView(map).size).toBe(50);
    expect(sharedView(first).size).toBe(0);
  });
});
