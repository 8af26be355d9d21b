import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton provision`. */
export const registerProvision: Register = () => {};
