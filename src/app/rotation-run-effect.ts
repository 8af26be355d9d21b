/**
 * Turns the rotation flow's effects into transport and journal calls, and reports back only
 * as events (the run-effect contract in flow.ts): a transport or journal that throws becomes a
 * failure event the flow can show and act on — a journal failure takes staged files back —
 * instead of a crash that leaves staged files nobody knows about.
 */
import path from 'node:path';
import { asBatonError } from '../errors.js';
import {
  consumerDigestKey,
  commitProviderEnds,
  openWaitConnections,
  prepareAll,
  providerCommitSteps,
  unstageAll,
  type ConsumerCommitResult,
  type WaitConnections,
} from '../mesh/delivery.js';
import { failedWaitCommand } from '../mesh/receipt-wait-effects.js';
import {
  appendJournal,
  journalHolders,
  journalPair,
  JOURNAL_FILE,
  type JournalRecord,
} from '../mesh/journal.js';
import {
  intentRecords,
  recordIntent,
  writeMachineRecords,
  recordOutcome as recordPairOutcome,
  recordTakenBack as recordPairsTakenBack,
} from '../mesh/intent.js';
import type { PlannedPair } from '../mesh/rotation-plan.js';
import { resolveHolders, type Resolution, type ResolveOptions } from '../mesh/resolve-holders.js';
import { journalRollbacks, rollBackPairs } from '../mesh/rollback.js';
import { giveBackPrevious } from '../mesh/pooler-remote.js';
import { retireSwitched } from '../mesh/switch-mode.js';
import type { SecretDigest } from '../mesh/digest.js';
import { reasonOf, type TransportFor } from '../mesh/transport.js';
import type { EffectRunner } from './flow.js';
import { assertNever } from './status-verdict.js';
import type { MachineFailure } from '../mesh/delivery.js';
import {
  isCommitted,
  resolutionOf,
  type RotationEffect,
  type RotationEvent,
  type RotationState,
} from './rotation-flow.js';
import { logGet, logKeys } from './rotation-log.js';
import { journalRevoked, revokeAfterCommit, revokingRecord, type RevokeRequest } from './rotation-revoke.js';
import { appGate, journalApp } from './rotation-app.js';
import type { AppHooks } from '../mesh/reload.js';
import type { MachineLogins } from '../mesh/login-from-machines.js';
import type { WaitState } from '../mesh/receipt-wait-machine.js';
import type { AppResults } from '../mesh/test-login.js';
import { resumeRecord, resumeRevokedRecord } from './rotation-recovered.js';

import type { Suggester } from '../suggest-command.js';
/**
 * How often a provider's receipts are read ON the provider machine: by one long-lived reader
 * over ssh, by a poll of the filesystem on the local transport. A receipt reaches the
 * controller within this plus one one-way trip, and the consumer's rename, on a channel
 * opened while the provisioner applies, takes one more round trip: the window is about one
 * round trip plus this interval.
 */
export const RECEIPT_POLL_MS = 10;

export interface RotationDeps {
  readonly transportFor: TransportFor;
  readonly journalDir: string;
  readonly operator: string;
  readonly resolve: ResolveOptions;
  /**
   * The gate's answers when the operation already read every machine (the leftover read is the
   * resolve: one pass per machine); without them the flow resolves each holder itself.
   */
  readonly resolved?: ReadonlyMap<string, Resolution>;
  /** How many holders are written to at once. */
  readonly concurrency: number;
  /**
   * How long to wait for provider receipts (0 = look once): a pair unconfirmed by then keeps
   * its consumer end staged for `mesh resume`.
   */
  readonly waitMs: number;
  /** Between receipt reads on the provider machine; small, since it is part of every window. */
  readonly pollMs: number;
  readonly now?: () => Date;
  /** The one builder of suggested commands (keeps --inventory and the global flags). */
  readonly suggester?: Suggester;
  /**
   * Aborted when the operator cancels, baton is signalled or its output closes: a commit not
   * yet started does not start, the wait for receipts ends, and what is unfinished is rolled
   * back. Its reason (an Error) names why, for the summary.
   */
  readonly stop?: AbortController;
  /** How long a roll-back waits for the old receipt (default: --wait, at most ROLLBACK_RECEIPT_WAIT_MS). */
  readonly rollbackWaitMs?: number;
  /** The mesh's identity, written into every record (meshIdentity); a record without one is read by no mesh's status. */
  readonly mesh?: string;
  /** `--revoke-previous` (and `--end-sessions`): revoke each left login once every consumer end is committed. */
  readonly revoke?: RevokeRequest;
  /** app-truth: the consumers' `reload:` and the providers' `connect:` (rotation-app.ts). */
  readonly app?: AppHooks;
  /**
   * A machine started from what was read (`mesh rollback`, `mesh resume`: rotation-recovered.ts)
   * holds no new secret in memory: the test login before a roll-back finishes a pair, or before
   * a resume's consumer end moves (its wait's gate), reads the credential back from its
   * provider's machine (login-from-machines.ts), and those are the logins recorded. No reload
   * runs with them: the rotation that would have reloaded is gone.
   */
  readonly machineLogins?: MachineLogins;
}

/** The longest a roll-back waits for the receipt to show the old password again. */
export const ROLLBACK_RECEIPT_WAIT_MS = 10_000;
/** The same after a signal or the operator stopped the rotation. */
export const STOPPED_RECEIPT_WAIT_MS = 2_000;

/** Why `stop` aborted, in words ("interrupted by SIGTERM", "cancelled by the operator"). */
export function stopReason(stop: AbortSignal): string {
  const reason: unknown = stop.reason;
  return reason instanceof Error && reason.name !== 'AbortError' ? reason.message : 'stopped';
}

export type RotationRunner = EffectRunner<RotationState, RotationEvent, RotationEffect>;

/**
 * Each effect runs only in the step that asked for it (`state` is the flow's state when the
 * queue reaches it): a prepare queued behind a record that then failed never stages anything.
 */
export function rotationRunner(deps: RotationDeps): RotationRunner {
  const journalFile = path.join(deps.journalDir, JOURNAL_FILE);
  const waitOptions = {
    waitMs: deps.waitMs,
    pollMs: deps.pollMs,
    concurrency: deps.concurrency,
    ...(deps.stop ? { stop: deps.stop.signal } : {}),
  };
  const recordOutcome = (id: string, pairs: readonly PlannedPair[], phase: 'finished' | 'rolled-back') =>
    recordPairOutcome(id, pairs, phase, deps.transportFor, deps.concurrency);
  const recordTakenBack = (id: string, pairs: readonly PlannedPair[], failures: readonly MachineFailure[]) =>
    recordPairsTakenBack(id, pairs, failures, deps.transportFor, deps.concurrency);
  /**
   * The machines' side of the wait: receipt readers and rename channels, opened by the commit
   * before the provider ends go live (openWaitConnections), whose observations arrive as events
   * and which runs the wait's commands. It holds connections, not decisions: which consumer
   * moves and when, and when the wait is over, is the reducer's (receipt-wait-machine.ts).
   */
  let receiptWait: WaitConnections | undefined;
  // app-truth: the test login and the reloads (rotation-app.ts); holds secrets only in memory.
  const app = appGate(deps);
  type WaitArgs = Parameters<typeof openWaitConnections>;
  // The wait's pairs (a resume's: those whose consumer end is not live yet), gated by the test
  // logins of this rotation, or of the machines for a machine started from what was read.
  const openWait = (
    state: {
      readonly plan: { readonly pairs: WaitArgs[0] };
      readonly digests: WaitArgs[1];
      readonly wait: WaitState;
    },
    dispatch: WaitArgs[4],
  ) =>
    openWaitConnections(
      state.plan.pairs.filter((p) => p.key in state.wait.consumerOf),
      state.digests,
      deps.transportFor,
      waitOptions,
      dispatch,
      deps.machineLogins ? { gate: deps.machineLogins.gate } : app.gateOption(),
    );
  return {
    async run(effect, { state, dispatch }) {
      switch (effect.type) {
        case 'resolve':
          if (state.step !== 'resolving') return undefined;
          if (deps.resolved) {
            for (const holder of state.plan.holders)
              dispatch({
                type: 'holder-resolved',
                machine: holder.machine,
                resolution: deps.resolved.get(holder.machine) ?? { status: 'unresolved', reason: 'not read' },
              });
            return undefined;
          }
          await resolveHolders(state.plan.holders, deps.transportFor, deps.resolve, (machine, resolution) =>
            dispatch({ type: 'holder-resolved', machine, resolution }),
          );
          return undefined;
        case 'journal':
          await appendJournal(deps.journalDir, journalRecord(effect.state, effect.phase, deps));
          return { type: 'journaled', phase: effect.phase };
        case 'prepare': {
          if (state.step !== 'preparing') return undefined;
          // Intent before action: no file of this rotation is written until its providers hold its
          // intent (each machine's records go in the request that stages its ends: prepareAll).
          const result = await prepareAll(
            state.plan.pairs,
            state.plan.holders,
            deps.transportFor,
            deps.concurrency,
            (machine) => dispatch({ type: 'staged', machine }),
            app.keep(state.plan),
            intentRecords(state.id, state.plan.pairs, 'preparing'),
          );
          if (!result.ok) {
            await recordTakenBack(state.id, state.plan.pairs, [
              ...result.failures,
              ...result.unstageFailures,
            ]);
            return {
              type: 'prepare-failed',
              failures: result.failures,
              unstageFailures: result.unstageFailures,
            };
          }
          // What finishes or takes back each pair now lives beside it on its provider.
          const notPrepared = await recordIntent(
            state.id,
            state.plan.pairs,
            'prepared',
            deps.transportFor,
            deps.concurrency,
            (p) => journalPair(p, result.digests[p.key], undefined, result.digests[consumerDigestKey(p.key)]),
          );
          if (notPrepared.length > 0) {
            const unstageFailures = await unstageAll(state.plan.holders, deps.transportFor, deps.concurrency);
            await recordTakenBack(state.id, state.plan.pairs, unstageFailures);
            return { type: 'prepare-failed', failures: notPrepared, unstageFailures };
          }
          return { type: 'prepared', digests: result.digests };
        }
        case 'commit': {
          if (state.step !== 'committing') return undefined;
          // Stopped before anything is live: commit nothing; the roll-back removes the staged ends.
          if (deps.stop?.signal.aborted) return { type: 'commit-failed', failures: [] };
          receiptWait?.close();
          // app-truth: the test logins' streams open while the provider ends go live and the receipts are awaited.
          const waits = Object.keys(state.wait.consumerOf).length > 0;
          receiptWait = deps.waitMs > 0 && waits ? openWait(state, dispatch) : undefined;
          // After the wait's channels are asked for: a test login's stream is one of their sockets where they relay.
          if (receiptWait) {
            const wait = receiptWait;
            app.preopen(state.plan, state.id, (machine) => wait.channel(machine));
          }
          await receiptWait?.ready;
          // Before any provider end goes live, its provider says so: `committing` is what resume and rollback finish.
          // A resume leaves alone the intents of pairs an earlier step finished, and writes the prepared record's pairs.
          const resume = state.resume;
          const finishedBefore = new Set(resume?.finishedBefore);
          const committing = intentRecords(
            state.id,
            state.plan.pairs.filter((p) => !finishedBefore.has(p.key)),
            'committing',
            resume
              ? (p) => resume.record.pairs.find((q) => q.key === p.key)
              : (p) =>
                  journalPair(p, state.digests[p.key], undefined, state.digests[consumerDigestKey(p.key)]),
          );
          // A provider end already live (a resume read it so) is never renamed again.
          const steps = providerCommitSteps(state.plan.holders, notCommitted(state));
          // A machine's intents go in the request that keeps and renames its provider ends; a
          // resume's all go first (its gate closes on one that cannot be written, before any
          // rename), as do those of a machine with no end left to rename.
          const renaming = new Set(steps.map((st) => st.machine));
          const ahead = resume ? committing : new Map([...committing].filter(([m]) => !renaming.has(m)));
          const notCommitting = await writeMachineRecords(ahead, deps.transportFor, deps.concurrency);
          if (notCommitting.length > 0) {
            receiptWait?.close();
            receiptWait = undefined;
            return { type: 'commit-failed', failures: notCommitting, unrecorded: true };
          }
          const result = await commitProviderEnds(
            steps,
            deps.transportFor,
            deps.concurrency,
            (step) =>
              dispatch({ type: 'committed-step', machine: step.machine, end: step.end, paths: step.paths }),
            receiptWait ? (machine) => receiptWait!.channel(machine) : undefined,
            resume ? new Map() : committing,
          );
          const previous: Record<string, SecretDigest> = {};
          for (const p of state.plan.pairs) {
            const kept = result.previous[`${p.providerMachine}\0${p.providerPath}`];
            if (kept) previous[p.key] = kept;
          }
          // Every pair the machines' logins gate is tested (they try only the pairs whose provider names `connect:`).
          const tested = deps.machineLogins ? state.plan.pairs.map((p) => p.key) : app.tested(state.plan);
          return result.failures.length === 0
            ? { type: 'committed', previous, tested }
            : { type: 'commit-failed', failures: result.failures, previous, tested };
        }
        case 'await-receipts': {
          if (state.step !== 'applying') return undefined;
          const keys = new Set(effect.pairs);
          // The wait the commit opened (its channels carried the provider commit); without one
          // (--wait 0), the receipts are looked at once.
          receiptWait ??= openWait(state, dispatch);
          // Runs until the wait's clock ends (--wait, a stop): its end is this effect's event.
          return receiptWait.start(state.plan.pairs.filter((p) => keys.has(p.key)));
        }
        case 'test-login':
        case 'rename-consumer':
        case 'rename-later':
        case 'close-wait': {
          const wait = receiptWait;
          if (!wait)
            return effect.type === 'close-wait'
              ? undefined
              : failedWaitCommand(effect, 'the wait was closed');
          const event = await wait.run(effect);
          // A consumer end that went live starts its reload (app-truth), before the flow hears of it.
          const moved =
            event?.type === 'consumer-renamed'
              ? event.applied
              : event?.type === 'login-tested'
                ? event.moved
                : [];
          for (const a of moved) app.committed(state.id, a.pair, state.plan);
          return event;
        }
        case 'settle-renamed': {
          // The 'committed' record failed after these were renamed: they stay, their intent says so.
          const keys = new Set(effect.pairs);
          await recordOutcome(
            state.id,
            state.plan.pairs.filter((p) => keys.has(p.key)),
            'finished',
          );
          await app.finish();
          return undefined;
        }
        case 'finish-apply': {
          if (state.step !== 'applying') return undefined;
          receiptWait = undefined;
          const keys = new Set(effect.pairs);
          const pairs = state.plan.pairs.filter((p) => keys.has(p.key));
          // A resume's pairs read live count as applied: their intents say `finished` now, and the revoke counts them.
          const applied = new Set([...logKeys(state.applied), ...(state.resume?.consumersLive ?? [])]);
          const result: ConsumerCommitResult = {
            applied: pairs
              .filter((p) => applied.has(p.key))
              .map((p) => ({ pair: p.key, windowMs: logGet(state.applied, p.key) ?? 0 })),
            failures: effect.failures,
          };
          await recordOutcome(
            state.id,
            pairs.filter((p) => applied.has(p.key)),
            'finished',
          );
          // app-truth: every reload has ended before a left login is revoked (its app may still be on it).
          // The pairs not applied keep their kept secret: a roll-back that finishes one tries its login first.
          const appResults = deps.machineLogins
            ? machineResults(deps.machineLogins)
            : await app.finish(new Set(pairs.filter((p) => !applied.has(p.key)).map((p) => p.key)));
          // --revoke-previous: after the consumer-commit phase, and only if it committed every consumer end.
          const revoked = await revokeAfterCommit(
            deps.revoke,
            state.plan,
            state.failures,
            result,
            deps.transportFor,
            waitOptions,
            // Its record says what the rotation confirmed so far (test logins, reloads), as the last one would.
            (targets) =>
              appendJournal(
                deps.journalDir,
                revokingRecord(
                  { ...journalRecord(state, 'revoking', deps), ...journalApp(appResults) },
                  targets,
                ),
              ),
          );
          return {
            type: 'apply-finished',
            failures: result.failures,
            ...(deps.stop?.signal.aborted ? { stopped: stopReason(deps.stop.signal) } : {}),
            ...(revoked ? { revoked } : {}),
            ...(appResults ? { app: appResults } : {}),
          };
        }
        case 'roll-back': {
          if (state.step !== 'rolling-back') return undefined;
          const keys = new Set(effect.pairs);
          const results = await rollBackPairs(
            state.plan.pairs.filter((p) => keys.has(p.key)),
            state.digests,
            state.previous,
            deps.transportFor,
            // Bounded like the wait itself, and never longer than 10 s: the old receipt is reported, not awaited for ever.
            // Stopped by a signal or the operator: they want out, so the old receipt gets a short look.
            {
              concurrency: deps.concurrency,
              waitMs:
                deps.rollbackWaitMs ??
                Math.min(
                  deps.waitMs,
                  deps.stop?.signal.aborted ? STOPPED_RECEIPT_WAIT_MS : ROLLBACK_RECEIPT_WAIT_MS,
                ),
              pollMs: deps.pollMs,
              // app-truth: a pair refused from its consumer's machine is rolled back, never finished.
              refused: new Set(state.app?.testLogins.filter((t) => !t.ok).map((t) => t.pair) ?? []),
              // The test login is never skipped: a pair this roll-back finishes moves only after it passed.
              loginFirst: (pairs) => deps.machineLogins?.loginFirst(pairs) ?? app.loginBeforeMove(pairs),
            },
          ).finally(() => app.forget());
          const took = (r: (typeof results)[number]) => r.result === 'rolled-back' && !r.leftover;
          // Started from what was read: the pooler lines a dead run gave are not known here.
          const keeper = deps.machineLogins && deps.app?.pooler;
          if (keeper) {
            const hooks = deps.app;
            await giveBackPrevious(
              keeper,
              state.plan.pairs
                .filter((p) => results.some((r) => r.pair === p.key && took(r)))
                .map((pair) => ({
                  pair,
                  connect: hooks.connectOf(pair.provider),
                  previous: state.previous[pair.key],
                })),
              deps.transportFor,
            ).catch(() => undefined);
          }
          await recordOutcome(
            state.id,
            state.plan.pairs.filter((p) => results.some((r) => r.pair === p.key && r.result === 'finished')),
            'finished',
          );
          await recordOutcome(
            state.id,
            state.plan.pairs.filter((p) => results.some((r) => r.pair === p.key && took(r))),
            'rolled-back',
          );
          const late = deps.machineLogins?.records() ?? app.lateLogins();
          return { type: 'rolled-back', results, ...(late.length > 0 ? { testLogins: late } : {}) };
        }
        case 'discard-previous': {
          // Best effort: a `.prev` left beside a finished pair is recognised as finished, not as a leftover.
          const keys = new Set(effect.pairs);
          const finished = state.plan.pairs.filter((p) => keys.has(p.key));
          const byMachine = new Map<string, string[]>();
          for (const p of finished)
            byMachine.set(p.providerMachine, [...(byMachine.get(p.providerMachine) ?? []), p.providerPath]);
          await Promise.all(
            [...byMachine].map(([machine, paths]) =>
              deps
                .transportFor(machine)
                .discardPrevious(paths)
                .catch(() => undefined),
            ),
          );
          await retireSwitched(finished, deps.transportFor);
          return { type: 'previous-discarded' };
        }
        case 'unstage':
          if (state.step !== 'unstaging') return undefined;
          {
            const failures = await unstageAll(state.plan.holders, deps.transportFor, deps.concurrency);
            await recordTakenBack(state.id, state.plan.pairs, failures);
            return { type: 'unstaged', failures };
          }
        default:
          return assertNever(effect);
      }
    },
    failed(effect, error) {
      // Not awaited: a pooler line given to a pair that did not move is taken back best effort (rotation-app.ts).
      if (effect.type === 'finish-apply' || effect.type === 'commit') void app.forget();
      // Whatever failed, no receipt wait follows this one: its readers and channels end.
      receiptWait?.close();
      receiptWait = undefined;
      const everywhere = [{ machine: '(all)', reason: reasonOf(error) }];
      switch (effect.type) {
        case 'resolve':
          return { type: 'resolve-failed', reason: reasonOf(error) };
        case 'journal': {
          const e = asBatonError(error, {
            what: 'The rotation journal could not be written.',
            where: journalFile,
          });
          return {
            type: 'journal-failed',
            phase: effect.phase,
            journal: {
              what: e.what,
              where: e.where ?? journalFile,
              next: e.next ?? 'Set journal_dir in baton.yaml to a writable directory, or pass --state-dir.',
            },
          };
        }
        case 'prepare':
          return { type: 'prepare-failed', failures: everywhere, unstageFailures: [] };
        case 'commit':
          return { type: 'commit-failed', failures: everywhere };
        case 'await-receipts':
          return { type: 'wait-stopped' };
        case 'test-login':
        case 'rename-consumer':
        case 'rename-later':
        case 'close-wait':
          return failedWaitCommand(effect, error);
        case 'finish-apply':
          return { type: 'apply-finished', failures: everywhere };
        case 'settle-renamed':
          // Best effort, as a discard: the pairs' intents say `committing`, which status reads as finished.
          return { type: 'previous-discarded' };
        case 'unstage':
          return { type: 'unstaged', failures: everywhere };
        case 'roll-back':
          return {
            type: 'rolled-back',
            results: effect.pairs.map((pair) => ({
              pair,
              result: 'provider-unknown' as const,
              reason: reasonOf(error),
            })),
          };
        case 'discard-previous':
          return { type: 'previous-discarded' };
        default:
          return assertNever(effect);
      }
    },
  };
}

/** The provider ends of `state`'s plan not yet committed (`machine\0path`): at a rotation's commit, every one. */
function notCommitted(state: Extract<RotationState, { step: 'committing' }>): ReadonlySet<string> {
  const out = new Set<string>();
  for (const p of state.plan.pairs) {
    const key = `${p.providerMachine}\0${p.providerPath}`;
    if (!isCommitted(state.committed, key)) out.add(key);
  }
  return out;
}

/** The test logins a machine started from what was read made (no reloads: its rotation is gone). */
function machineResults(logins: MachineLogins): AppResults | undefined {
  const testLogins = logins.records();
  return testLogins.length > 0 ? { testLogins, reloads: [] } : undefined;
}

/** What one phase of a rotation leaves in the journal: names, results and digests only. */
export function journalRecord(
  state: RotationState,
  phase: JournalRecord['phase'],
  deps: Pick<RotationDeps, 'operator' | 'now' | 'mesh' | 'revoke'>,
): JournalRecord {
  // A resume's records are the rotation's `prepared` record with its own phase and results.
  if (state.step === 'done' && state.resume) {
    const by = { operator: deps.operator, at: (deps.now?.() ?? new Date()).toISOString(), mesh: deps.mesh };
    const record = state.resume.record;
    return state.revoked?.some((r) => r.revoked)
      ? resumeRevokedRecord(record, by, state.applied, state.revoked)
      : resumeRecord(
          record,
          by,
          phase === 'resumed' ? 'resumed' : 'resume-failed',
          state.resume.failures,
          { keys: state.applied, windows: state.windows },
          state.app?.testLogins,
        );
  }
  const digests = 'digests' in state ? state.digests : undefined;
  const previous = 'previous' in state ? state.previous : undefined;
  const failures = new Map<string, MachineFailure>();
  for (const f of 'failures' in state ? state.failures : [])
    if (!failures.has(f.machine)) failures.set(f.machine, f);
  const results = state.plan.holders.map((holder) => {
    const resolution = resolutionOf(state, holder.machine);
    const failure = failures.get(holder.machine);
    if (failure) return { machine: holder.machine, ok: false, reason: failure.reason };
    if (resolution?.status === 'unresolved')
      return { machine: holder.machine, ok: false, reason: resolution.reason };
    return { machine: holder.machine, ok: resolution?.status === 'resolved' };
  });
  return {
    id: state.id,
    at: (deps.now?.() ?? new Date()).toISOString(),
    operator: deps.operator,
    phase,
    selector: state.plan.selectorText,
    holders: journalHolders(state.plan.holders),
    results,
    pairs: state.plan.pairs.map((p) =>
      journalRevoked(
        journalPair(p, digests?.[p.key], previous?.[p.key], digests?.[consumerDigestKey(p.key)]),
        state,
      ),
    ),
    ...(deps.mesh ? { mesh: deps.mesh } : {}),
    ...(deps.revoke ? { revoke_previous: { end_sessions: deps.revoke.endSessions } } : {}),
    ...journalApp('app' in state ? state.app : undefined),
    ...(state.step === 'rolled-back'
      ? {
          applied: [
            ...state.applied,
            ...state.results.filter((r) => r.result === 'finished').map((r) => r.pair),
          ],
          windows_ms: state.windows,
          rolled_back: journalRollbacks(state.results),
        }
      : {}),
    ...(state.step === 'done' || state.step === 'commit-failed'
      ? { applied: state.applied, windows_ms: state.windows }
      : state.step === 'applying'
        ? { applied: logKeys(state.applied) }
        : {}),
  };
}
