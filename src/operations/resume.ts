/**
 * `mesh resume <id>`, in order: take this journal's lock and the providers' locks, read every
 * machine once for the rotation's records (rotation-on-machines.ts: a pair now another
 * rotation's refuses), advance each open pair's intent to `committing`, rename what is staged
 * (providers first, each consumer after its receipt: src/mesh/resume.ts), record `finished`
 * where it finished, drop the kept previous files, retire a switched mode's files, revoke what
 * the rotation asked to, then say per pair where it stands.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import { endDigest } from '../mesh/delivery.js';
import { digestPrefix } from '../mesh/digest.js';
import { recordIntent, recordOutcome } from '../mesh/intent.js';
import { appendJournal, JOURNAL_FILE, type JournalRecord } from '../mesh/journal.js';
import { withMeshLock } from '../mesh/mesh-lock.js';
import { appliedInJournal, resumablePlan, resumeRotation } from '../mesh/resume.js';
import { deliveryLabel, type PlannedPair } from '../mesh/rotation-plan.js';
import { retireSwitched } from '../mesh/switch-mode.js';
import { nextStep, renderStep } from '../next-step.js';
import { MARKS } from '../app/marks.js';
import { RECEIPT_POLL_MS } from '../app/rotation-run-effect.js';
import { ROTATION_EXIT } from '../app/rotation-flow.js';
import { resumeOutcome } from '../app/rotation-recovered.js';
import { journalRevoked, revokeAfterCommit, revokeResultLines } from '../app/rotation-revoke.js';
import { appliedCount, formatWindow, plural, staysOn, switchedLines } from '../app/rotation-text.js';
import { testLoginLines } from '../app/rotation-app-text.js';
import { loginsFromMachines } from '../mesh/login-from-machines.js';
import { appHooks } from '../mesh/reload.js';
import type { TestLoginRecord } from '../mesh/test-login.js';
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
        const records = withoutSettled(truth.records, truth.settled);
        const last = records.find((r) => r.phase === 'prepared');
        const finishedBefore = appliedInJournal(records);
        const prepared = new Map((last?.pairs ?? []).map((p) => [p.key, p]));
        // The test login is never skipped: a consumer this resume moves is tried from its machine first.
        const logins = loginsFromMachines(
          appHooks(inventory),
          Object.fromEntries([...prepared].flatMap(([key, p]) => (p.digest ? [[key, p.digest]] : []))),
          transportFor,
          concurrency,
        );
        const result = await resumeRotation(
          id,
          records,
          inventory,
          transportFor,
          {
            concurrency,
            waitMs,
            pollMs: RECEIPT_POLL_MS,
            gate: logins.gate,
            beforeCommit: async (pairs) => {
              const open = pairs.filter((p) => !finishedBefore.has(p.key));
              const unwritten = await recordIntent(id, open, 'committing', transportFor, concurrency, (p) =>
                prepared.get(p.key),
              );
              if (unwritten.length > 0)
                throw new BatonError('gate-closed', {
                  what: `Rotation ${id} cannot be resumed: its intent could not be recorded on ${unwritten.map((u) => `${u.machine} (${u.reason})`).join(', ')}.`,
                  changed: 'Nothing was renamed.',
                  next: ['Make them reachable, then run ', nextStep(`mesh resume ${id}`), ' again.'],
                });
            },
          },
          async (phase, failures, applied) => {
            if (!last) return;
            await appendJournal(journal.dir, {
              ...last,
              mesh: journal.mesh,
              at: new Date().toISOString(),
              operator: ports.operator,
              phase,
              results: last.holders.map((h) => {
                const f = failures.find((x) => x.machine === h.machine);
                return f
                  ? { machine: h.machine, ok: false, reason: f.reason }
                  : { machine: h.machine, ok: phase === 'resumed' };
              }),
              ...(applied ? { applied: applied.keys, windows_ms: applied.windows } : {}),
              ...(logins.records().length > 0 ? { test_logins: logins.records() } : {}),
            });
          },
          where,
        );
        const done = result.pairs.filter((p) => result.applied.has(p.key));
        await recordOutcome(id, done, 'finished', transportFor, concurrency);
        // Finished pairs no longer need the provider's previous file.
        const byMachine = new Map<string, string[]>();
        for (const p of done)
          byMachine.set(p.providerMachine, [...(byMachine.get(p.providerMachine) ?? []), p.providerPath]);
        await Promise.all(
          [...byMachine].map(([machine, paths]) =>
            transportFor(machine)
              .discardPrevious(paths)
              .catch(() => undefined),
          ),
        );
        await retireSwitched(done, transportFor);
        // The rotation asked for --revoke-previous: finishing it finishes that too, under the same rule (every consumer end live).
        const request = last?.revoke_previous
          ? { endSessions: last.revoke_previous.end_sessions }
          : undefined;
        const revoked = request
          ? await revokeAfterCommit(
              request,
              result,
              result.failures,
              { applied: [...result.applied].map((pair) => ({ pair, windowMs: 0 })), failures: [] },
              transportFor,
              { concurrency, waitMs, pollMs: RECEIPT_POLL_MS },
            )
          : undefined;
        if (revoked?.some((x) => x.revoked) && last) {
          await appendJournal(journal.dir, {
            ...last,
            mesh: journal.mesh,
            at: new Date().toISOString(),
            operator: ports.operator,
            phase: 'resumed',
            pairs: last.pairs.map((p) => journalRevoked(p, { step: 'done', revoked })),
            applied: [...result.applied],
          });
        }
        return report(ports, inputs, { ...result, request, revoked, testLogins: logins.records() });
      } finally {
        await locks.release();
      }
    }),
  );
}

type Resumed = Awaited<ReturnType<typeof resumeRotation>> & {
  readonly request: { readonly endSessions: boolean } | undefined;
  readonly revoked: Awaited<ReturnType<typeof revokeAfterCommit>>;
  readonly testLogins: readonly TestLoginRecord[];
};

function report(ports: OperationPorts, inputs: ResumeInputs, result: Resumed): number {
  const { id, waitMs } = inputs;
  const out = ports.out;
  const renamed =
    result.committed.reduce((n, s) => n + s.paths.length, 0) + Object.keys(result.windows).length;
  const n = result.pairs.length;
  const refused = new Set(result.refused.map((r) => r.pair));
  const pending = result.pairs.filter((p) => !result.applied.has(p.key));
  out(
    `${pending.length === 0 ? `Resumed rotation ${id}: all ${plural(n, 'credential')} applied` : `Resumed rotation ${id}: ${appliedCount(result.applied.size, n)}, ${pending.length} pending`}; ${plural(renamed, 'file')} renamed now, ${result.alreadyLive} already live. No secret was generated.`,
  );
  for (const holder of result.holders) {
    for (const d of holder.receives) {
      const live =
        d.end === 'provides'
          ? !result.failures.some((f) => f.machine === holder.machine)
          : result.applied.has(d.pair);
      out(
        `  ${holder.machine}: ${d.path} ${live ? 'holds' : 'still staged with'} ${digestPrefix(endDigest(result.digests, d.pair, d.end)!)} (${deliveryLabel(d)})`,
      );
    }
  }
  for (const pair of result.pairs) {
    const ms = result.windows[pair.key];
    if (refused.has(pair.key)) continue;
    if (pair.login) out(resumedAlternatingLine(pair, result.applied.has(pair.key), waitMs));
    else if (result.applied.has(pair.key))
      out(
        `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}${ms === undefined ? '' : `; ${pair.consumer}'s file replaced ${formatWindow(ms)} later (the window)`}`,
      );
    else
      out(
        `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.role}${waitMs > 0 ? ` within ${waitMs / 1000} s` : ''}: ${pair.consumer}'s new file is still staged; if ${pair.provider} applies it, ${pair.consumer}'s live password is refused until this is finished.`,
      );
  }
  for (const line of testLoginLines(result.testLogins, result.pairs, (pair) =>
    pair.login?.left
      ? `${pair.consumer} stays on ${pair.login.left.role}, which works; its new file is still staged`
      : `${pair.consumer}'s new file is still staged and its live password is the old one, which ${pair.provider} no longer accepts: take the pair back`,
  ))
    out(line);
  for (const line of switchedLines(result.pairs.filter((p) => result.applied.has(p.key)))) out(line);
  for (const line of revokeResultLines(result.request, result.revoked, ports.suggester)) out(line);
  for (const f of result.failures) out(`  ${MARKS.refused.glyph} ${f.machine}: ${f.reason}`);
  const outcome = resumeOutcome({
    failures: result.failures.length,
    refused: refused.size,
    pending: pending.length,
    revokeUnconfirmed: result.revoked?.some((x) => !x.revoked) === true,
  });
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
