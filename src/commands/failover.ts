import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton failover`. */
export const registerFailover: Register = () => {};
