/**
 * How each consumer's app picks up a new password is SAID in the inventory, never assumed
 * (docs/inventory.md, `reads:`). A single pair moves its one login's password: an app that read
 * its file once and is never told keeps the old password, which the database no longer takes —
 * seen as `✓ applied`, exit 0, over 40,666 failed queries. So a rotation (and `mesh plan`) of a
 * pair whose consumer says nothing, or says `reads: once` on a single pair with no `reload:`, is
 * refused before anything is read or sent. The three ways that work:
 *
 * - `reads: each-connection`: the app re-reads its file for every new connection (or pool refill);
 * - `reads: once` with `reload:`: baton restarts or signals it right after its file moved;
 * - `reads: once` on an alternating pair: the login it left keeps working, and the app-behind
 *   guard holds the next rotation until the app moved (app-behind-guard.ts).
 */
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import type { Consumer, Inventory } from './inventory.js';
import type { PlannedPair } from './rotation-plan.js';

/** One consumer a rotation of `pairs` may not move, and why. */
export interface ReadsProblem {
  readonly consumer: string;
  readonly kind: 'unsaid' | 'once-without-reload';
  /** The line to add under the consumer, exactly. */
  readonly line: string;
}

/** The line a consumer that says nothing should add: what it already has decides the likely answer. */
function migrationLine(consumer: Consumer): string {
  return consumer.reload ? 'reads: once' : 'reads: each-connection';
}

/** The consumers of `pairs` whose app's way of taking a new password is unsaid or cannot work. */
export function readsProblems(pairs: readonly PlannedPair[], inventory: Inventory): ReadsProblem[] {
  const byName = new Map(inventory.consumers.map((c) => [c.name, c]));
  const out = new Map<string, ReadsProblem>();
  for (const pair of pairs) {
    const consumer = byName.get(pair.consumer);
    if (!consumer || out.has(consumer.name)) continue;
    if (consumer.reads === undefined)
      out.set(consumer.name, { consumer: consumer.name, kind: 'unsaid', line: migrationLine(consumer) });
    else if (consumer.reads === 'once' && !consumer.reload && pair.credential !== 'alternating')
      out.set(consumer.name, {
        consumer: consumer.name,
        kind: 'once-without-reload',
        line: 'reload: <the command that restarts or signals the app>',
      });
  }
  return [...out.values()];
}

const THREE_WAYS =
  '`reads: each-connection` (the app re-reads its file for every new connection), `reads: once` with `reload:` (baton restarts or signals it right after its file moves), or `reads: once` on a `credential: alternating` pair (the login it left keeps working; the next rotation waits for the app)';

/** The plan-time refusal (exit 2, nothing read or sent), or undefined when every consumer says how. */
export function readsRefusal(pairs: readonly PlannedPair[], inventory: Inventory): BatonError | undefined {
  const problems = readsProblems(pairs, inventory);
  if (problems.length === 0) return undefined;
  const unsaid = problems.filter((p) => p.kind === 'unsaid');
  const once = problems.filter((p) => p.kind === 'once-without-reload');
  const what = [
    ...(unsaid.length > 0
      ? [
          `The inventory does not say how ${unsaid.map((p) => `consumer "${shown(p.consumer)}"`).join(', ')} ${unsaid.length === 1 ? 'picks' : 'pick'} up a new password (reads:).`,
        ]
      : []),
    ...once.map(
      (p) =>
        `Consumer "${shown(p.consumer)}" reads its password once (reads: once) on a single pair with no reload:: after a rotation its app would keep the old password, which the database no longer accepts.`,
    ),
  ].join(' ');
  const lines = problems.map((p) => `under consumer "${shown(p.consumer)}" add \`${p.line}\``);
  return new BatonError('config', {
    what,
    where: inventory.source,
    next: `${lines.join('; ')}. The three ways that work: ${THREE_WAYS}.${unsaid.length > 0 ? ' (An inventory written before reads: existed: add the line that is true of the app; baton no longer assumes it.)' : ''}`,
    changed: 'Nothing was read or sent.',
  });
}
