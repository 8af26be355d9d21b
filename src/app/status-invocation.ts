/**
 * The `baton` an operator typed, with the global flags that pick the deployment, state dir and
 * store — the prefix of src/suggest-command.ts, the one builder of suggested commands.
 */
import { suggester, type GivenFlags } from '../suggest-command.js';

export { shellWord } from '../suggest-command.js';

export type InvocationFlags = GivenFlags;

export function batonInvocation(flags: InvocationFlags): string {
  return suggester(flags, true).prefix;
}
