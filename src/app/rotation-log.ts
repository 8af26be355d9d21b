/**
 * An append-only keyed log that a pure reducer can extend in O(1): every version shares one
 * backing store and sees only its first `size` entries, so adding to the newest version pushes
 * in place, while adding to an older one (a test replaying from a saved state) copies first.
 * Copying the per-holder record on every holder event made a 1,000-holder rotation quadratic.
 */

interface Backing<V> {
  readonly keys: string[];
  readonly values: V[];
  /** Position of each key in `keys`; a version holds a key only if its position is below its size. */
  readonly at: Map<string, number>;
}

export interface KeyedLog<V> {
  readonly size: number;
  readonly backing: Backing<V>;
}

export function emptyLog<V>(): KeyedLog<V> {
  return { size: 0, backing: { keys: [], values: [], at: new Map() } };
}

function position<V>(log: KeyedLog<V>, key: string): number | undefined {
  const at = log.backing.at.get(key);
  return at !== undefined && at < log.size ? at : undefined;
}

export function logHas<V>(log: KeyedLog<V>, key: string): boolean {
  return position(log, key) !== undefined;
}

export function logGet<V>(log: KeyedLog<V>, key: string): V | undefined {
  const at = position(log, key);
  return at === undefined ? undefined : log.backing.values[at];
}

/** A new version with `key` added; the same version when it already holds `key` (the first entry wins). */
export function logAdd<V>(log: KeyedLog<V>, key: string, value: V): KeyedLog<V> {
  if (logHas(log, key)) return log;
  let backing = log.backing;
  if (backing.keys.length !== log.size) {
    // A newer version already extended the shared store: this one branches off with a copy.
    const keys = backing.keys.slice(0, log.size);
    backing = { keys, values: backing.values.slice(0, log.size), at: new Map(keys.map((k, i) => [k, i])) };
  }
  backing.at.set(key, backing.keys.length);
  backing.keys.push(key);
  backing.values.push(value);
  return { size: log.size + 1, backing };
}

/** The keys in the order they were added. */
export function logKeys<V>(log: KeyedLog<V>): string[] {
  return log.backing.keys.slice(0, log.size);
}
