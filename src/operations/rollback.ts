/**
 * `mesh rollback <id>`, in order: take this journal's lock and the providers' locks, read
 * every machine once for the rotation's records (a pair whose provider names another
 * unfinished rotation refuses X, naming it; a pair X no longer holds is left alone), take back
 * each open pair on the rotation's own machine, entered at its `rolling-back` step
 * (src/app/rotation-recovered.ts; the roll-back itself: each consumer first, one already live
 * is finished, never taken back — src/mesh/rollback.ts), which records `finished` or
 * `rolled-back` on each provider and in the journal; then say per pair how it ended.
 * Generates nothing.
 */
import path from 'node:path';
import { BatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import { unstageAll } from '../mesh/delivery.js';
import { recordTakenBack } from '../mesh/intent.js';
import { findMachine } from '../mesh/inventory.js';
import { holdersOf, providerFilesOf, type PlannedPair } from '../mesh/rotation-plan.js';
import { nextStep, renderStep } from '../next-step.js';
import { MARKS } from '../app/marks.js';
import { shown } from '../outside-text.js';
import { plural } from '../app/rotation-text.js';
import { JOURNAL_FILE } from '../mesh/journal.js';
import { withMeshLock } from '../mesh/mesh-lock.js';
import { appliedInJournal, resumablePlan } from '../mesh/resume.js';
import { previousInJournal } from '../mesh/rollback.js';
import { RECEIPT_POLL_MS, rotationRunner } from '../app/rotation-run-effect.js';
import { rotationFlow, rotationOutcome } from '../app/rotation-flow.js';
import { TAKE_BACK_EXIT, takeBackStart } from '../app/rotation-recovered.js';
import { rolledBackLines } from '../app/rotation-text.js';
import { testLoginLines } from '../app/rotation-app-text.js';
import { loginsFromMachines } from '../mesh/login-from-machines.js';
import { appHooks } from '../mesh/reload.js';
import { closingAfter, type OperationPorts } from './operation-ports.js';
import { holdProviderLocks } from './provider-locks.js';
import { rotationOnMachines } from './rotation-on-machines.js';

export interface RollbackInputs {
  readonly id: string;
  readonly concurrency: number;
  readonly waitMs: number;
}

export async function rollback(ports: OperationPorts, inputs: RollbackInputs): Promise<number> {
  const { inventory, journal, transports } = ports;
  const { id, concurrency, waitMs } = inputs;
  const command = `mesh rollback ${id}`;
  const where = path.join(journal.dir, JOURNAL_FILE);
  return closingAfter(transports, () =>
    withMeshLock(journal.dir, journal.mesh, command, async () => {
      const transportFor = transports.transportFor;
      const first = await rotationOnMachines(id, 'rollback', inventory, journal, transportFor, concurrency);
      if (first.preparing.length > 0) return takeBackPreparing(ports, id, first.preparing, concurrency);
      // X stopped before it prepared and every provider was read: none holds anything of X. Taking it
      // back is done; a refusal here ("start a new rotation") read as one more step that fails.
      if (first.records.length > 0 && !first.records.some((r) => r.phase === 'prepared')) {
        ports.out(
          `Rotation ${id} never finished preparing and no machine holds anything of it: nothing is left to take back. Nothing on the machines was changed.`,
        );
        return EXIT_OK;
      }
      const locks = await holdProviderLocks(
        resumablePlan(id, first.records, inventory, where, 'rollback').pairs,
        transportFor,
        command,
      );
      try {
        const { records, settled, strays } = await rotationOnMachines(
          id,
          'rollback',
          inventory,
          journal,
          transportFor,
          concurrency,
          locks.holder,
        );
        const { pairs, holders, digests } = resumablePlan(id, records, inventory, where, 'rollback');
        const last = records.find((r) => r.phase === 'prepared')!;
        // The rotation's own machine, entered where a rotation's wait ends with pairs unfinished;
        // only what is still rotation X's on the machines is touched, never a later rotation's files.
        const start = takeBackStart({
          id,
          pairs,
          holders,
          selectorText: last.selector,
          digests,
          previous: previousInJournal(records),
          finished: appliedInJournal(records),
          settled,
        });
        // The test login is never skipped: a pair this roll-back finishes moves only after it passed.
        const hooks = appHooks(inventory);
        const machineLogins = loginsFromMachines(hooks, digests, transportFor, concurrency);
        const flow = rotationFlow(
          start,
          rotationRunner({
            transportFor,
            journalDir: journal.dir,
            operator: ports.operator,
            resolve: { concurrency },
            concurrency,
            waitMs,
            pollMs: RECEIPT_POLL_MS,
            rollbackWaitMs: waitMs,
            mesh: journal.mesh,
            ...(last.revoke_previous ? { revoke: { endSessions: last.revoke_previous.end_sessions } } : {}),
            // The providers' connect: and the poolers baton keeps (the roll-back gives them back their old lines).
            app: hooks,
            machineLogins,
          }),
        );
        const end = await flow.finished();
        // The record's own error, as when this command wrote it itself (appendJournal's words).
        if (end.step === 'journal-failed')
          throw new BatonError('failed', {
            what: end.journal.what,
            where: end.journal.where,
            next: end.journal.next,
          });
        // From `rolling-back` the machine ends taken back, or in the failed record above.
        if (end.step !== 'rolled-back') throw new Error(`mesh rollback ended in ${end.step}`);
        const strayFailures =
          strays.length > 0 ? await unstageNeverPrepared(ports, id, strays, concurrency) : [];
        // Nothing of X was still X's (an older id pasted from scrollback): the counts of a roll-back
        // ("0 of 1 finished, 1 left") would contradict "nothing is left to do"; say what was found.
        const strayLines = strays.map((p) =>
          strayFailures.length === 0
            ? `  ${MARKS.info.glyph} ${shown(p.key)}: never finished preparing; its staged files were removed (nothing of it took effect).`
            : `  ${MARKS.refused.glyph} ${shown(p.key)}: never finished preparing; its staged files could not all be removed (${strayFailures.map((f) => `${f.machine}: ${f.reason}`).join('; ')}).`,
        );
        const lines =
          end.results.length === 0 && strays.length === 0
            ? [
                `Rotation ${id} has nothing left to take back: ${pairs.map((p) => shown(p.key)).join(', ')} ${pairs.length === 1 ? 'is' : 'are'} no longer its own on the machines (finished, taken back or rotated since). Nothing on the machines was changed.`,
              ]
            : rolledBackLines(end, ports.suggester);
        const loginLines = testLoginLines(machineLogins.records(), pairs, (pair) =>
          pair.login?.left
            ? `${pair.consumer} stays on ${pair.login.left.role}, which works`
            : `${pair.consumer} keeps its old password: the pair was rolled back and the provisioner puts the old password back`,
        );
        for (const line of [...strayLines, ...loginLines, ...lines]) ports.out(line);
        if (strayFailures.length > 0) return EXIT_CODES.failed;
        return TAKE_BACK_EXIT[rotationOutcome(end)];
      } finally {
        await locks.release();
      }
    }),
  );
}

/**
 * A rotation killed while it prepared: no record anywhere says what it staged, but its providers
 * hold its intent. Its staged ends are removed (nothing of it was ever live) and each provider
 * records it taken back.
 */
async function takeBackPreparing(
  ports: OperationPorts,
  id: string,
  pairs: readonly PlannedPair[],
  concurrency: number,
): Promise<number> {
  const transportFor = ports.transports.transportFor;
  const locks = await holdProviderLocks(pairs, transportFor, `mesh rollback ${id}`);
  try {
    const failures = await unstageNeverPrepared(ports, id, pairs, concurrency);
    if (failures.length > 0) {
      for (const f of failures) ports.out(`  ${MARKS.refused.glyph} ${f.machine}: ${f.reason}`);
      ports.out(
        `Rotation ${id} never finished preparing; its staged files could not all be removed. Make the machines reachable, then run ${renderStep(ports.suggester, nextStep(`mesh rollback ${id}`))} again.`,
      );
      return EXIT_CODES.failed;
    }
    ports.out(
      `Rotation ${id} never finished preparing: its staged files were removed on ${plural(pairs.length, 'pair')} (${pairs.map((p) => p.key).join(', ')}); nothing of it took effect. Nothing is left to do.`,
    );
    return EXIT_OK;
  } finally {
    await locks.release();
  }
}

/** Removes every staged end of pairs X never finished preparing, and records them taken back where all answered. */
async function unstageNeverPrepared(
  ports: OperationPorts,
  id: string,
  pairs: readonly PlannedPair[],
  concurrency: number,
) {
  const transportFor = ports.transports.transportFor;
  const holders = holdersOf(pairs, (name) => findMachine(ports.inventory, name));
  // Every provider-end file the pair may have: an alternating pair stages beside either login.
  const extra = holdersOf(
    pairs.flatMap((p) =>
      providerFilesOf(p).map((providerPath) => ({ ...p, providerPath, consumerPath: p.consumerPath })),
    ),
    (name) => findMachine(ports.inventory, name),
  );
  const failures = await unstageAll([...holders, ...extra], transportFor, concurrency);
  await recordTakenBack(id, pairs, failures, transportFor, concurrency);
  return failures;
}
