/**
 * The verdict's words for status (TTY, plain, JSON), failover and the drill: the one table in
 * src/share/verdict-words.ts, which sync's lines and the refusals read too.
 */
import { verdictWords, type VerdictWords } from '../share/verdict-words.js';
import type { Verdict } from '../share/types.js';
import type { Suggester } from '../suggest-command.js';

export { lineageSentence, type VerdictTone, type VerdictWords } from '../share/verdict-words.js';

/** The table's words for a screen: fingerprints stay in their panels. */
export function describeVerdict(verdict: Verdict, baton: string | Suggester = 'baton'): VerdictWords {
  return verdictWords(verdict, { baton });
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
