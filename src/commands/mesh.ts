import type { Register } from './context.js';

/** Placeholder: replaced by the module that owns `baton mesh`. */
export const registerMesh: Register = () => {};
