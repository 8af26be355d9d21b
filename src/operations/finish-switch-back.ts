/**
 * `mesh resume X` where all X left unfinished is a switch back to single cut short after its
 * consumer commit (src/mesh/switch-back.ts): the consumer already reads the bare secret, so
 * nothing is renamed and no receipt is awaited — the logins' files go (with their receipts), the
 * provider's intent says `finished`, and the provisioner, finding the group delivered plain with
 * no login file beside it, sets both logins NOLOGIN. Read from the machines, under the providers'
 * locks, so it works with another controller's journal or none.
 */
import { EXIT_OK } from '../errors.js';
import { MARKS } from '../app/marks.js';
import { recordOutcome, pairOnMachines } from '../mesh/intent.js';
import type { Inventory } from '../mesh/inventory.js';
import { appendJournal, readJournal } from '../mesh/journal.js';
import { readPlanEnds } from '../mesh/leftovers.js';
import { LOGIN_SLOTS, loginRole } from '../mesh/alternating.js';
import { planRotation, settledPairs, type PlannedPair } from '../mesh/rotation-plan.js';
import { switchBackLeftBehind } from '../mesh/switch-back.js';
import { retireSwitched } from '../mesh/switch-mode.js';
import type { TransportFor } from '../mesh/transport.js';
import type { OperationPorts } from './operation-ports.js';
import { holdProviderLocks } from './provider-locks.js';

/** The pairs whose provider names rotation `id` and whose switch back it left unfinished, each with the files to retire. */
export async function switchBacksLeftBy(
  id: string,
  inventory: Inventory,
  transportFor: TransportFor,
  concurrency: number,
  self?: string,
): Promise<PlannedPair[]> {
  const everything = planRotation(inventory, { by: 'all' });
  const ends = await readPlanEnds(everything, transportFor, concurrency);
  return settledPairs(everything.pairs, ends).flatMap((pair) => {
    const on = pairOnMachines(pair, ends, self);
    if (on.intent?.rotation !== id || on.lockedBy !== undefined) return [];
    const files = switchBackLeftBehind(
      pair,
      ends.get(`${pair.providerMachine}\0${pair.providerPath}`),
      ends.get(`${pair.consumerMachine}\0${pair.consumerPath}`),
    );
    return files ? [{ ...pair, retire: files }] : [];
  });
}

/**
 * Finishes the switch backs of `pairs` (found by switchBacksLeftBy, read again here under the
 * locks): retire, intent `finished`, the kept previous file dropped, one journal line. Returns
 * the exit code, or undefined when, under the locks, nothing of the kind was left (the caller
 * goes on with the ordinary resume).
 */
export async function finishSwitchBacks(
  ports: OperationPorts,
  id: string,
  pairs: readonly PlannedPair[],
  concurrency: number,
): Promise<number | undefined> {
  const transportFor = ports.transports.transportFor;
  const locks = await holdProviderLocks(pairs, transportFor, `mesh resume ${id}`);
  try {
    const left = await switchBacksLeftBy(id, ports.inventory, transportFor, concurrency, locks.holder);
    if (left.length === 0) return undefined;
    await retireSwitched(left, transportFor);
    await recordOutcome(id, left, 'finished', transportFor, concurrency);
    await Promise.all(
      left.map((p) =>
        transportFor(p.providerMachine)
          .discardPrevious([p.providerPath])
          .catch(() => undefined),
      ),
    );
    const records = await readJournal(ports.journal.dir, id).catch(() => []);
    const prepared = records.find((r) => r.phase === 'prepared');
    if (prepared)
      await appendJournal(ports.journal.dir, {
        ...prepared,
        mesh: ports.journal.mesh,
        at: new Date().toISOString(),
        operator: ports.operator,
        phase: 'resumed',
        results: prepared.holders.map((h) => ({ machine: h.machine, ok: true })),
        applied: left.map((p) => p.key),
      }).catch(() => undefined);
    ports.out(
      `Resumed rotation ${id}: its switch back to single had not finished; nothing was renamed and no secret was generated.`,
    );
    for (const p of left) {
      const files = p.retire!.map((f) => f.slice(f.lastIndexOf('/') + 1));
      // Both, whether or not each had a file (switched-back-logins.ts): the copied one never had.
      const logins = LOGIN_SLOTS.map((slot) => loginRole(p.role, slot));
      ports.out(
        `  ${MARKS.ok.glyph} ${p.key}: removed ${files.join(' and ')} on ${p.providerMachine}; ${p.consumer} reads ${p.role}, and the provisioner sets ${logins.join(' and ')} NOLOGIN.`,
      );
    }
    return EXIT_OK;
  } finally {
    await locks.release();
  }
}
