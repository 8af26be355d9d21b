/**
 * What `mesh resume X` and `mesh rollback X` act on, read from the machines: every pair's
 * intent on its provider says which rotation is unfinished there. The journal adds what only
 * it keeps (the plan's selector, --revoke-previous); where it has nothing of X (another
 * controller's rotation, a lost journal) the machines' records alone describe X. A pair whose
 * provider names ANOTHER unfinished rotation refuses X (exit 2, naming the one that is): X's
 * files there are gone, and acting on them would take back someone else's.
 */
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { isUnfinished, pairOnMachines, type PairOnMachines } from '../mesh/intent.js';
import type { Inventory } from '../mesh/inventory.js';
import { readJournal, type JournalRecord } from '../mesh/journal.js';
import { readPlanEnds } from '../mesh/leftovers.js';
import { planRotation, type PlannedPair } from '../mesh/rotation-plan.js';
import type { TransportFor } from '../mesh/transport.js';
import type { OperationJournal } from './operation-ports.js';

export interface RotationOnMachines {
  /** The journal's records of X, or records built from the machines' intents when it has none. */
  readonly records: readonly JournalRecord[];
  /** Pairs of X no longer X's on the machines (finished, taken back, or rotated since): nothing to do there. */
  readonly settled: ReadonlySet<string>;
  /** Pairs of X whose provider holds X's intent unfinished. */
  readonly unfinished: ReadonlySet<string>;
  /** With no record of what X prepared anywhere: the pairs whose providers say X was still preparing them. */
  readonly preparing: readonly PlannedPair[];
  /**
   * With a record of what X prepared: pairs it does not list whose providers still say X was
   * preparing them. Baton died while writing the `prepared` intents (one machine's records are
   * written one after another), so their ends are staged and nothing of them is live: taking
   * them back is all that finishes them. Left out, a roll-back said "nothing is left to do" over
   * a staged pair, and status named the same roll-back again.
   */
  readonly strays: readonly PlannedPair[];
}

/** The journal's records of `id` (none when there is no journal: the machines may still know it). */
async function journalRecords(dir: string, id: string): Promise<JournalRecord[]> {
  try {
    return await readJournal(dir, id);
  } catch {
    return [];
  }
}

/** The records of `id`, checked against (or built from) what every machine of the inventory says. */
export async function rotationOnMachines(
  id: string,
  command: 'resume' | 'rollback',
  inventory: Inventory,
  journal: OperationJournal,
  transportFor: TransportFor,
  concurrency: number,
  self?: string,
): Promise<RotationOnMachines> {
  const everything = planRotation(inventory, { by: 'all' });
  const unread = new Map<string, string>();
  const ends = await readPlanEnds(everything, transportFor, concurrency, unread);
  const on = new Map<string, PairOnMachines>(
    everything.pairs.map((p) => [p.key, pairOnMachines(p, ends, self)]),
  );
  let records = await journalRecords(journal.dir, id);
  if (!records.some((r) => r.phase === 'prepared'))
    records = [...records, ...fromMachines(id, on, journal.mesh)];
  const prepared = records.find((r) => r.phase === 'prepared');
  const settled = new Set<string>();
  const unfinished = new Set<string>();
  const others = new Map<string, string>();
  for (const pair of prepared?.pairs ?? []) {
    const intent = on.get(pair.key)?.intent;
    if (!intent) continue;
    if (intent.rotation === id) (isUnfinished(intent.phase) ? unfinished : settled).add(pair.key);
    else if (isUnfinished(intent.phase)) others.set(pair.key, intent.rotation);
    else settled.add(pair.key);
  }
  if (others.size > 0) {
    const named = [...new Set(others.values())];
    throw new BatonError('usage', {
      what: `mesh ${command} ${id} refused: ${[...others].map(([pair, other]) => `${pair} belongs to rotation ${other}, which has not finished`).join('; ')} — rotation ${id}'s files there are gone.`,
      where: [...others.keys()].join(', '),
      next: named.flatMap((other, i) => [
        ...(i === 0 ? ['Finish it with '] : ['; or ']),
        nextStep(`mesh resume ${other}`),
        ' or take it back with ',
        nextStep(`mesh rollback ${other}`),
      ]),
      changed: 'Nothing was sent.',
    });
  }
  const preparing = prepared
    ? []
    : everything.pairs.filter((p) => {
        const intent = on.get(p.key)?.intent;
        return intent?.rotation === id && isUnfinished(intent.phase);
      });
  if (!prepared && preparing.length === 0) {
    const blind = unreadProviders(id, records, everything.pairs, unread);
    if (blind.length > 0) throw unknownOnMachines(id, command, blind);
  }
  const listed = new Set((prepared?.pairs ?? []).map((p) => p.key));
  const strays = prepared
    ? everything.pairs.filter((p) => {
        const intent = on.get(p.key)?.intent;
        return intent?.rotation === id && intent.phase === 'preparing' && !listed.has(p.key);
      })
    : [];
  return { records, settled, unfinished, preparing, strays };
}

/**
 * The provider machines of X's pairs (every provider's, with no record of X) that could not be
 * read. With no record of what X prepared, THEIR intents are all that says what X left there:
 * a slow machine (slower than --timeout) is not one that holds nothing.
 */
function unreadProviders(
  id: string,
  records: readonly JournalRecord[],
  every: readonly PlannedPair[],
  unread: ReadonlyMap<string, string>,
): { machine: string; reason: string }[] {
  const named = records.flatMap((r) => (r.id === id ? r.pairs.map((p) => p.provider_machine) : []));
  const machines = new Set(named.length > 0 ? named : every.map((p) => p.providerMachine));
  return [...machines].flatMap((machine) => {
    const reason = unread.get(machine);
    return reason === undefined ? [] : [{ machine, reason }];
  });
}

/**
 * Before, this fell through to "never finished preparing … Start a new rotation", while the
 * unread provider held X's `preparing` intent and every rotate of the pair was refused over it:
 * a loop with no way out. What X left there is unknown, so nothing is done, and the way out is
 * the same command once the machine answers.
 */
function unknownOnMachines(
  id: string,
  command: 'resume' | 'rollback',
  blind: readonly { machine: string; reason: string }[],
): BatonError {
  return new BatonError('action-needed', {
    what: `mesh ${command} ${id} cannot tell what rotation ${id} left on ${blind.map((b) => `${b.machine} (${b.reason})`).join(', ')}: its provider intents could not be read.`,
    where: blind.map((b) => b.machine).join(', '),
    next: [
      'Once it answers (a slow machine: give a longer --timeout), run ',
      nextStep(`mesh ${command} ${id}`),
      ' again.',
    ],
    changed: 'Nothing was changed on any machine.',
  });
}

/** The records the machines' intents of `id` amount to: what it prepared, and which pairs it finished. */
function fromMachines(id: string, on: ReadonlyMap<string, PairOnMachines>, mesh: string): JournalRecord[] {
  const intents = [...on.values()].flatMap((o) => (o.intent?.rotation === id ? [o.intent] : []));
  const pairs = intents.flatMap((i) => (i.prepared ? [i.prepared] : []));
  if (pairs.length === 0) return [];
  const at = intents.map((i) => i.at).sort()[0]!;
  const base = {
    id,
    at,
    operator: 'unknown (read from the machines)',
    selector: 'the pairs whose providers hold its intent',
    holders: [],
    results: [],
    pairs,
    mesh,
  };
  const finished = intents.filter((i) => i.phase === 'finished').map((i) => i.pair);
  return [
    { ...base, phase: 'prepared' },
    ...(finished.length > 0 ? [{ ...base, phase: 'applied' as const, applied: finished }] : []),
  ];
}
