/**
 * What a new rotation or seed of a pair must not start over: a staged `.next` on either end, a
 * provider's previous file kept by a rotation that did not finish, or a rotation the journal
 * says is open. Rotating over any of them is how a database ends with a password no file holds.
 * Each leftover names the rotation that left it, so the refusal can say how to finish it
 * (`mesh resume`) or take it back (`mesh rollback`). Pure but for the reading.
 */
import { BatonError } from '../errors.js';
import { nextStep, renderStep } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import type { JournalHistory } from './journal-history.js';
import { mapBounded } from './map-bounded.js';
import type { PlannedPair, RotationPlan } from './rotation-plan.js';
import type { FileDigests, TransportFor } from './transport.js';

export interface Leftover {
  readonly pair: PlannedPair;
  /** The rotation that left it, when the journal knows. */
  readonly rotation: string | undefined;
  readonly what: string;
}

/** One pair's leftover, from what its two ends hold and the journal; undefined when it is clean. */
export function leftoverOf(pair: PlannedPair, provider: FileDigests | undefined, consumer: FileDigests | undefined, history: JournalHistory): Leftover | undefined {
  const open = history.unfinished(pair.key);
  const staged = provider?.next ?? consumer?.next;
  const rotation = open ?? (staged ? history.preparedBy(pair.key, staged) : undefined) ?? (provider?.live ? history.preparedBy(pair.key, provider.live) : undefined);
  if (provider?.next) return { pair, rotation, what: `${pair.providerMachine} has ${pair.providerPath}.next staged` };
  if (consumer?.next) return { pair, rotation, what: `${pair.consumerMachine} has ${pair.consumerPath}.next staged` };
  // A previous file beside a finished pair (both ends equal) is only one a clean-up missed.
  const finished = provider?.live !== undefined && provider.live === consumer?.live;
  if (provider?.prev && !finished) return { pair, rotation, what: `${pair.providerMachine} keeps the previous provider file of a rotation that did not finish` };
  if (open) return { pair, rotation, what: `rotation ${open} has not finished it` };
  return undefined;
}

/** Reads both ends of every pair (one call per machine); a machine that cannot be read is left to the gate. */
export async function findLeftovers(plan: RotationPlan, transportFor: TransportFor, history: JournalHistory, concurrency: number): Promise<Leftover[]> {
  const ends = new Map<string, FileDigests>();
  await mapBounded(plan.holders, concurrency, async (holder) => {
    try {
      const read = await transportFor(holder.machine).digests(holder.receives.map((d) => d.path));
      holder.receives.forEach((d, i) => ends.set(`${holder.machine}\0${d.path}`, read[i]!));
    } catch {
      // Unreadable: the rotation's gate names it and sends nothing.
    }
  });
  return plan.pairs.flatMap((pair) => {
    const found = leftoverOf(pair, ends.get(`${pair.providerMachine}\0${pair.providerPath}`), ends.get(`${pair.consumerMachine}\0${pair.consumerPath}`), history);
    return found ? [found] : [];
  });
}

/** The two ways out of a leftover, as suggested commands. */
export function waysOut(leftover: Leftover, s: Suggester = PLAIN_SUGGESTER): string {
  return leftover.rotation
    ? `finish it with ${renderStep(s, nextStep(`mesh resume ${leftover.rotation}`))} or roll it back with ${renderStep(s, nextStep(`mesh rollback ${leftover.rotation}`))}`
    : `no rotation in this mesh's journal left it: remove the staged or kept file on the machine by hand (it is never read), then run ${renderStep(s, nextStep('mesh status'))}`;
}

/** The refusal `mesh rotate` and `mesh seed` give before generating anything. */
export function leftoversRefusal(command: 'rotate' | 'seed', leftovers: readonly Leftover[], s: Suggester = PLAIN_SUGGESTER): BatonError {
  return new BatonError('refused', {
    what: `mesh ${command} refused: ${leftovers.length === 1 ? '1 pair has' : `${leftovers.length} pairs have`} a rotation that did not finish — ${leftovers.map((l) => `${l.pair.key}${l.rotation ? ` (rotation ${l.rotation})` : ''}: ${l.what}`).join('; ')}.`,
    next: leftovers.map((l) => `${l.pair.key}: ${waysOut(l, s)}`).join('; '),
    changed: 'Nothing was generated and nothing was sent.',
  });
}
