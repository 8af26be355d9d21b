/**
 * The `baton` an operator typed, with the global flags that pick the deployment, state dir and
 * store. The next step a screen prints is meant to be pasted: a bare `baton sync` would read
 * another config and act on another state dir.
 */
export interface InvocationFlags {
  readonly config?: string;
  readonly deployment?: string;
  readonly stateDir?: string;
  readonly store?: string;
}

export function batonInvocation(flags: InvocationFlags): string {
  const parts = ['baton'];
  if (flags.config) parts.push('--config', shellWord(flags.config));
  if (flags.deployment) parts.push('--deployment', shellWord(flags.deployment));
  if (flags.stateDir) parts.push('--state-dir', shellWord(flags.stateDir));
  if (flags.store) parts.push('--store', shellWord(flags.store));
  return parts.join(' ');
}

/** Quotes a word for a POSIX shell only when it needs it. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
