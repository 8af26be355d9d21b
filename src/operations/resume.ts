/**
 * `mesh resume <id>`, in order: take this journal's lock and the providers' locks, read every
 * machine once for the rotation's records (rotation-on-machines.ts: a pair now another
 * rotation's refuses), read every end of what is left (src/mesh/resume.ts resumeFromRead: a
 * refusal, or where to start), then run the rotation's own machine from its `committing` step
 * (src/app/rotation-recovered.ts resumeStart): each open pair's intent to `committing`, the
 * provider ends still staged, each consumer after its receipt and its test login, `finished`
 * where it finished, the kept previous files dropped, a switched mode's files retired, the
 * revoke the rotation asked for; then say per pair where it stands.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import { endDigest } from '../mesh/delivery.js';
import { digestPrefix } from '../mesh/digest.js';
import type { Inventory } from '../mesh/inventory.js';
import { appendJournal, JOURNAL_FILE, type JournalRecord } from '../mesh/journal.js';
import { withMeshLock } from '../mesh/mesh-lock.js';
import { appliedInJournal, readResumeEnds, resumablePlan, resumeFromRead } from '../mesh/resume.js';
import { deliveryLabel, type PlannedPair } from '../mesh/rotation-plan.js';
import type { TransportFor } from '../mesh/transport.js';
import { nextStep, renderStep } from '../next-step.js';
import { MARKS } from '../app/marks.js';
import { RECEIPT_POLL_MS, rotationRunner } from '../app/rotation-run-effect.js';
import {
  ROTATION_EXIT,
  rotationFlow,
  rotationOutcome,
  type RotationState,
  type Resumed as ResumedBy,
} from '../app/rotation-flow.js';
import { resumeRecord, resumeStart } from '../app/rotation-recovered.js';
import { revokeResultLines } from '../app/rotation-revoke.js';
import { appliedCount, formatWindow, plural, staysOn, switchedLines } from '../app/rotation-text.js';
import { testLoginLines } from '../app/rotation-app-text.js';
import { loginsFromMachines } from '../mesh/login-from-machines.js';
import { appHooks } from '../mesh/reload.js';
import { closingAfter, type OperationPorts } from './operation-ports.js';
import { finishSwitchBacks, switchBacksLeftBy } from './finish-switch-back.js';
import { holdProviderLocks } from './provider-locks.js';
import { rotationOnMachines } from './rotation-on-machines.js';

export interface ResumeInputs {
  readonly id: string;
  readonly concurrency: number;
  readonly waitMs: number;
}

/**
 * The records with the pairs no longer the rotation's on the machines left out; all of them
 * settled, the records as they are (resumablePlan then says there is nothing to resume).
 */
export function withoutSettled(
  records: readonly JournalRecord[],
  settled: ReadonlySet<string>,
): JournalRecord[] {
  const prepared = records.find((r) => r.phase === 'prepared');
  if (!prepared || prepared.pairs.every((p) => settled.has(p.key))) return [...records];
  return records.map((r) => ({ ...r, pairs: r.pairs.filter((p) => !settled.has(p.key)) }));
}

export async function resume(ports: OperationPorts, inputs: ResumeInputs): Promise<number> {
  const { inventory, journal, transports } = ports;
  const { id, concurrency, waitMs } = inputs;
  const command = `mesh resume ${id}`;
  const where = path.join(journal.dir, JOURNAL_FILE);
  return closingAfter(transports, () =>
    withMeshLock(journal.dir, journal.mesh, command, async () => {
      const transportFor = transports.transportFor;
      // Which pairs to lock comes from the machines or the journal: read once without, then lock and read again.
      const first = await rotationOnMachines(id, 'resume', inventory, journal, transportFor, concurrency);
      // Nothing of X was ever live, and no record says what it staged: there is nothing to finish, and
      // its providers' intents block every rotate of those pairs until it is taken back.
      if (first.preparing.length > 0)
        throw new BatonError('refused', {
          what: `Rotation ${id} never finished preparing: nothing of it took effect, so there is nothing to finish; its staged files on ${plural(first.preparing.length, 'pair')} (${first.preparing.map((p) => p.key).join(', ')}) block the next rotation until they are taken back.`,
          where: [...new Set(first.preparing.map((p) => p.providerMachine))].join(', '),
          next: ['Take it back: ', nextStep(`mesh rollback ${id}`)],
          changed: 'Nothing was sent.',
        });
      // All X left is a switch back cut short after its consumer commit: only its logins' files remain to go.
      const switchBacks = await switchBacksLeftBy(id, inventory, transportFor, concurrency);
      if (
        switchBacks.length > 0 &&
        [...first.unfinished].every((k) => switchBacks.some((p) => p.key === k))
      ) {
        const code = await finishSwitchBacks(ports, id, switchBacks, concurrency);
        if (code !== undefined) return code;
      }
      const planned = resumablePlan(id, withoutSettled(first.records, first.settled), inventory, where);
      const locks = await holdProviderLocks(planned.pairs, transportFor, command);
      try {
        const truth = await rotationOnMachines(
          id,
          'resume',
          inventory,
          journal,
          transportFor,
          concurrency,
          locks.holder,
        );
        const end = await resumeRotation({
          id,
          records: withoutSettled(truth.records, truth.settled),
          inventory,
          transportFor,
          concurrency,
          waitMs,
          journalDir: journal.dir,
          operator: ports.operator,
          mesh: journal.mesh,
        });
        return report(ports, inputs, end);
      } finally {
        await locks.release();
      }
    }),
  );
}

/** What a resume is given once its locks are held: the rotation's records and where to write its own. */
export interface ResumeRun {
  readonly id: string;
  /** The rotation's records, the pairs no longer its own on the machines left out (withoutSettled). */
  readonly records: readonly JournalRecord[];
  readonly inventory: Inventory;
  readonly transportFor: TransportFor;
  readonly concurrency: number;
  readonly waitMs: number;
  /** Between receipt reads (default RECEIPT_POLL_MS). */
  readonly pollMs?: number;
  readonly journalDir: string;
  readonly operator: string;
  /** The mesh's identity, written into its records. */
  readonly mesh?: string;
}

/** Where a resume ended: the rotation machine's `done`, with what the resume did. */
export type ResumedEnd = Extract<RotationState, { step: 'done' }> & { readonly resume: ResumedBy };

/**
 * Reads every end of what is left of the rotation, then, unless resumeFromRead refuses (one
 * `resume-failed` record, nothing renamed), runs the rotation's machine from its `committing`
 * step with the test logins read back from the machines as its wait's gate. Throws what a
 * resume refuses with: its read's refusal, an intent that could not be recorded (gate-closed,
 * exit 4: nothing renamed), a record that could not be written.
 */
export async function resumeRotation(run: ResumeRun): Promise<ResumedEnd> {
  const { id, transportFor, concurrency, journalDir } = run;
  const where = path.join(journalDir, JOURNAL_FILE);
  const { pairs, holders, digests } = resumablePlan(id, run.records, run.inventory, where);
  // resumablePlan refuses records without a `prepared` one.
  const prepared = run.records.find((r) => r.phase === 'prepared')!;
  // Every holder is read first: resume renames nothing until all of them answered.
  const reads = await readResumeEnds(holders, transportFor, concurrency);
  const start = resumeFromRead({ id, holders, digests, reads });
  if (start.kind === 'refused') {
    const by = { operator: run.operator, at: new Date().toISOString(), mesh: run.mesh };
    await appendJournal(journalDir, resumeRecord(prepared, by, 'resume-failed', start.failures));
    throw start.error;
  }
  // The test login is never skipped: a consumer this resume moves is tried from its machine first.
  const machineLogins = loginsFromMachines(appHooks(run.inventory), digests, transportFor, concurrency);
  const flow = rotationFlow(
    resumeStart({
      id,
      pairs,
      holders,
      digests,
      record: prepared,
      finishedBefore: appliedInJournal(run.records),
      start,
    }),
    rotationRunner({
      transportFor,
      journalDir,
      operator: run.operator,
      resolve: { concurrency },
      concurrency,
      waitMs: run.waitMs,
      pollMs: run.pollMs ?? RECEIPT_POLL_MS,
      ...(run.mesh ? { mesh: run.mesh } : {}),
      ...(prepared.revoke_previous ? { revoke: { endSessions: prepared.revoke_previous.end_sessions } } : {}),
      machineLogins,
    }),
  );
  const end = await flow.finished();
  if (end.step === 'gate-closed')
    throw new BatonError('gate-closed', {
      what: `Rotation ${id} cannot be resumed: its intent could not be recorded on ${(end.unrecorded ?? []).map((u) => `${u.machine} (${u.reason})`).join(', ')}.`,
      changed: 'Nothing was renamed.',
      next: ['Make them reachable, then run ', nextStep(`mesh resume ${id}`), ' again.'],
    });
  // The record's own error, as when this command wrote it itself (appendJournal's words).
  if (end.step === 'journal-failed')
    throw new BatonError('failed', {
      what: end.journal.what,
      where: end.journal.where,
      next: end.journal.next,
    });
  // From `committing` a resume ends done, or in one of the two above.
  if (end.step !== 'done' || !end.resume) throw new Error(`mesh resume ended in ${end.step}`);
  return { ...end, resume: end.resume };
}

/** Says per end and per pair where the resume left them, and exits by the machine's outcome. */
function report(ports: OperationPorts, inputs: ResumeInputs, end: ResumedEnd): number {
  const { id, waitMs } = inputs;
  const out = ports.out;
  const { pairs, holders } = end.plan;
  const { failures, alreadyLive, renamedNow, record } = end.resume;
  const applied = new Set(end.applied);
  const n = pairs.length;
  const refused = new Set(end.resume.refused.map((r) => r.pair));
  const pending = pairs.filter((p) => !applied.has(p.key));
  out(
    `${pending.length === 0 ? `Resumed rotation ${id}: all ${plural(n, 'credential')} applied` : `Resumed rotation ${id}: ${appliedCount(applied.size, n)}, ${pending.length} pending`}; ${plural(renamedNow, 'file')} renamed now, ${alreadyLive} already live. No secret was generated.`,
  );
  for (const holder of holders) {
    for (const d of holder.receives) {
      const live =
        d.end === 'provides' ? !failures.some((f) => f.machine === holder.machine) : applied.has(d.pair);
      out(
        `  ${holder.machine}: ${d.path} ${live ? 'holds' : 'still staged with'} ${digestPrefix(endDigest(end.digests, d.pair, d.end)!)} (${deliveryLabel(d)})`,
      );
    }
  }
  for (const pair of pairs) {
    const ms = end.windows[pair.key];
    if (refused.has(pair.key)) continue;
    if (pair.login) out(resumedAlternatingLine(pair, applied.has(pair.key), waitMs));
    else if (applied.has(pair.key))
      out(
        `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}${ms === undefined ? '' : `; ${pair.consumer}'s file replaced ${formatWindow(ms)} later (the window)`}`,
      );
    else
      out(
        `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.role}${waitMs > 0 ? ` within ${waitMs / 1000} s` : ''}: ${pair.consumer}'s new file is still staged; if ${pair.provider} applies it, ${pair.consumer}'s live password is refused until this is finished.`,
      );
  }
  for (const line of testLoginLines(end.app?.testLogins ?? [], pairs, (pair) =>
    pair.login?.left
      ? `${pair.consumer} stays on ${pair.login.left.role}, which works; its new file is still staged`
      : `${pair.consumer}'s new file is still staged and its live password is the old one, which ${pair.provider} no longer accepts: take the pair back`,
  ))
    out(line);
  for (const line of switchedLines(pairs.filter((p) => applied.has(p.key)))) out(line);
  const request = record.revoke_previous ? { endSessions: record.revoke_previous.end_sessions } : undefined;
  for (const line of revokeResultLines(request, end.revoked, ports.suggester)) out(line);
  for (const f of failures) out(`  ${MARKS.refused.glyph} ${f.machine}: ${f.reason}`);
  // resumeOutcome: a failed rename before a refused login before a pending receipt.
  const outcome = rotationOutcome(end);
  if (outcome === 'commit-interrupted')
    out(`Next: fix the machine, then run: ${renderStep(ports.suggester, nextStep(`mesh resume ${id}`))}`);
  else if (outcome === 'login-refused')
    out(
      `Next: let the refused login connect, or take the rotation back: ${renderStep(ports.suggester, nextStep(`mesh rollback ${id}`))}`,
    );
  else if (outcome === 'receipts-pending')
    out(
      `Next: once the provisioner has applied them (its receipt), run ${renderStep(ports.suggester, nextStep(`mesh resume ${id}`))}; or take it back: ${renderStep(ports.suggester, nextStep(`mesh rollback ${id}`))}`,
    );
  return ROTATION_EXIT[outcome];
}

/** A resumed alternating pair: moved to its login, or still on the one it was on, which works. */
function resumedAlternatingLine(pair: PlannedPair, applied: boolean, waitMs: number): string {
  if (applied)
    return `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.login!.role}; ${pair.consumer} moved to it (no window)`;
  return `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.login!.role}${waitMs > 0 ? ` within ${waitMs / 1000} s` : ''}: ${pair.consumer}'s new file is still staged; ${staysOn(pair)}.`;
}
