/**
 * A map a pure reducer can change in O(1) (the receipt wait's state, receipt-wait-machine.ts):
 * every version shares one Map and the list of changes that built it; the newest version
 * changes that Map in place, while a version a newer one has passed (a test replaying from a
 * saved state) is rebuilt from the changes before it is read or changed, so every version
 * keeps reading what it held. Copying the wait's sets on every event made a wait of N pairs
 * cost O(N²): 123 ms of one thread at 1,000 pairs (docs/benchmarks.md, "Round 11: where a window goes").
 * The same idea as src/app/rotation-log.ts's append-only log, with deletes.
 */

interface Store<V> {
  /** Every change in order: [key, value] sets, [key] deletes. */
  readonly changes: ([string, V] | [string])[];
  /** The map after all of `changes`. */
  readonly head: Map<string, V>;
}

export interface SharedMap<V> {
  readonly version: number;
  readonly store: Store<V>;
}

/** The maps of versions a newer one has passed, rebuilt once each. */
const rebuilt = new WeakMap<SharedMap<unknown>, Map<string, unknown>>();

export function emptyShared<V>(): SharedMap<V> {
  return { version: 0, store: { changes: [], head: new Map() } };
}

/** What `map` holds, as a Map not to be changed (the shared one for the newest version). */
export function sharedView<V>(map: SharedMap<V>): ReadonlyMap<string, V> {
  if (map.version === map.store.changes.length) return map.store.head;
  let view = rebuilt.get(map) as Map<string, V> | undefined;
  if (!view) {
    view = new Map();
    for (const change of map.store.changes.slice(0, map.version))
      if (change.length === 2) view.set(change[0], change[1]);
      else view.delete(change[0]);
    rebuilt.set(map, view);
  }
  return view;
}

/** The store the newest version after `map` changes: the shared one, or a copy when `map` was passed. */
function ownStore<V>(map: SharedMap<V>): Store<V> {
  if (map.version === map.store.changes.length) return map.store;
  return { changes: map.store.changes.slice(0, map.version), head: new Map(sharedView(map)) };
}

export function sharedSet<V>(map: SharedMap<V>, key: string, value: V): SharedMap<V> {
  const store = ownStore(map);
  store.head.set(key, value);
  store.changes.push([key, value]);
  return { version: store.changes.length, store };
}

/** A new version without `key`; the same version when it does not hold `key`. */
export function sharedDelete<V>(map: SharedMap<V>, key: string): SharedMap<V> {
  if (!sharedView(map).has(key)) return map;
  const store = ownStore(map);
  store.head.delete(key);
  store.changes.push([key]);
  return { version: store.changes.length, store };
}
