import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton key`. */
export const registerKey: Register = () => {};
