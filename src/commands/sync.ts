import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton sync`. */
export const registerSync: Register = () => {};
