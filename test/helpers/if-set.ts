/**
 * A value a `beforeAll` sets, read in `afterAll`: when the set-up threw it was never set, and
 * the clean-up must not throw a TypeError over the real failure. Its declared type says
 * "always set"; `ifSet(tmp)?.cleanup()` says "maybe", which is what it is at run time.
 */
export function ifSet<T>(value: T): T | undefined {
  return value;
}
