import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton store`. */
export const registerStore: Register = () => {};
