import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton ca`. */
export const registerCa: Register = () => {};
