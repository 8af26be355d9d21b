import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton status`. */
export const registerStatus: Register = () => {};
