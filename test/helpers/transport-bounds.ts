/** The bound the in-process tests give their transports: long enough never to fire on a slow CI box. */
export const TEST_BOUNDS = { timeoutMs: 30_000 } as const;

/** A signal that never aborts, for calling an adapter directly. */
export const NEVER = new AbortController().signal;
