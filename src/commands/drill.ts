import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton drill`. */
export const registerDrill: Register = () => {};
