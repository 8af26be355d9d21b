/**
 * The rotation as a pure state machine (docs/mesh-rotation.md): state + event → state + effects. Views
 * render it and emit intents; rotation-run-effect turns effects into transport calls. Every
 * refusal is `effects: []`, so a key that does not apply can never send anything.
 *
 * No secret ever enters this state: the runner generates them inside the prepare effect and
 * reports back digests only, so a view, a log of states or a test snapshot cannot show one.
 */
import type { TestLoginRecord } from '../mesh/test-login.js';
import { EXIT_CODES, EXIT_OK } from '../errors.js';
import type { SecretDigest } from '../mesh/digest.js';
import type { GateRefusal, MachineFailure } from '../mesh/delivery.js';
import type { JournalRecord } from '../mesh/journal.js';
import {
  receiptWait,
  waitBegun,
  waitStarted,
  type WaitCommand,
  type WaitEvent,
  type WaitState,
  type WaitStep,
} from '../mesh/receipt-wait-machine.js';
import type { PairRollback } from '../mesh/rollback.js';
import type { PairRevoke } from '../mesh/revoke.js';
import { RECORD_OF_STEP, type JournalPhase, type RecordedStep } from '../mesh/rotation-phase.js';
import type { Resolution } from '../mesh/resolve-holders.js';
import type { AppResults } from '../mesh/test-login.js';
import { planIndex, type RotationPlan } from '../mesh/rotation-plan.js';
import { createFlow, type EffectRunner, type Flow } from './flow.js';
import { emptyLog, logAdd, logGet, logHas, logKeys, type KeyedLog } from './rotation-log.js';

interface Base {
  readonly id: string;
  readonly plan: RotationPlan;
}

/** Every holder's answer, fixed once the last one is in. */
interface Resolved extends Base {
  readonly resolutions: Readonly<Record<string, Resolution>>;
}

/**
 * While a phase is in flight its per-holder progress is a KeyedLog (O(1) per event, however
 * many holders); a phase that ends keeps plain arrays, which the journal, the summary and
 * `baton mesh resume` read.
 */
export type RotationState =
  | (Base & { readonly step: 'resolving'; readonly answers: KeyedLog<Resolution> })
  /**
   * `unrecorded`: a resume whose providers' `committing` intents could not all be written, so
   * nothing was renamed (intent before action); a rotation's gate closes at its resolve.
   */
  | (Resolved & { readonly step: 'gate-closed'; readonly unrecorded?: readonly MachineFailure[] })
  | (Resolved & { readonly step: 'confirming'; readonly typed: string })
  | (Resolved & { readonly step: 'cancelled' })
  /** `staged`: machines with all their files staged; `stagedFiles`: how many files that is. */
  | (Resolved & { readonly step: 'preparing'; readonly staged: KeyedLog<true>; readonly stagedFiles: number })
  | (Resolved & {
      readonly step: 'prepare-failed';
      readonly failures: readonly MachineFailure[];
      readonly unstageFailures: readonly MachineFailure[];
    })
  /**
   * `committed`: `machine\0path` of every provider-end file renamed into place. `wait`: the
   * receipt wait, begun before the first provider end goes live (receipts seen now are kept).
   */
  | (Resolved & {
      readonly step: 'committing';
      readonly digests: Digests;
      readonly committed: KeyedLog<true>;
      readonly wait: WaitState;
      /** Started by `mesh resume` (resumeStart): `committed` begins with the provider ends already live. */
      readonly resume?: Resuming;
    })
  /**
   * Provider ends are live (those in `committed`; `failures` names machines where the rename
   * failed); each pair's consumer end is renamed as its receipt arrives. `applied`: pair →
   * the window it had, in ms.
   */
  | (Resolved & {
      readonly step: 'applying';
      readonly digests: Digests;
      readonly previous: Previous;
      readonly committed: readonly string[];
      readonly failures: readonly MachineFailure[];
      readonly applied: KeyedLog<number>;
      /** The receipt wait (receipt-wait-machine.ts): which consumer moves next, and when the wait is over. */
      readonly wait: WaitState;
      /** The 'committed' record is on disk. */
      readonly recorded: boolean;
      /** The receipt wait is over: the consumer machines whose last rename failed. */
      readonly renamed?: readonly MachineFailure[];
      readonly resume?: Resuming;
    })
  /**
   * The wait ended with pairs unfinished (no receipt in time, a failed rename, the operator or
   * a signal stopped it, `stopped` says which): those pairs are being rolled back.
   */
  | (Resolved & {
      readonly step: 'rolling-back';
      readonly digests: Digests;
      readonly previous: Previous;
      readonly applied: readonly string[];
      readonly windows: Windows;
      readonly failures: readonly MachineFailure[];
      readonly stopped: string | undefined;
      /** app-truth: test logins and reloads of this rotation. */
      readonly app?: AppResults;
      /**
       * The machine was started here from what `mesh rollback` read (rotation-recovered.ts), not
       * reached by a rotation that ran in this process: `applied` are pairs an earlier step finished.
       */
      readonly recovered?: true;
    })
  /** Every pair is finished (`applied`) or has its roll-back result in `results`. */
  | (Resolved & {
      readonly step: 'rolled-back';
      readonly digests: Digests;
      readonly applied: readonly string[];
      readonly windows: Windows;
      readonly failures: readonly MachineFailure[];
      readonly stopped: string | undefined;
      readonly results: readonly PairRollback[];
      readonly app?: AppResults;
      readonly recovered?: true;
    })
  /** A rename failed somewhere: `committed` is every file live now (both ends); the rest is staged for `mesh resume`. */
  | (Resolved & {
      readonly step: 'commit-failed';
      readonly digests: Digests;
      readonly committed: readonly string[];
      readonly failures: readonly MachineFailure[];
      readonly applied: readonly string[];
      readonly windows: Windows;
    })
  /**
   * `applied`: pairs whose consumer end went live after their receipt; the others' consumer ends are still staged.
   * `revoked`: with --revoke-previous, how each left login's revoke ended (absent: none was run).
   */
  | (Resolved & {
      readonly step: 'done';
      readonly digests: Digests;
      readonly applied: readonly string[];
      readonly windows: Windows;
      readonly revoked?: readonly PairRevoke[];
      readonly app?: AppResults;
      /** Ended a `mesh resume`: pairs not in `applied` are still staged, never rolled back. */
      readonly resume?: Resumed;
    })
  /** A journal record failed while ends were staged and none live: every staged file is being removed. */
  | (Resolved & {
      readonly step: 'unstaging';
      readonly phase: JournalPhase;
      readonly journal: JournalFailure;
      readonly before: RotationState;
    })
  /**
   * A journal record could not be written. `files` says where the credentials stand: nothing
   * was staged, every staged file was taken back (`unstageFailures` names where it could not
   * be), or some ends are live (the 'prepared' record is on disk, so `mesh resume` finds them).
   * `before`: where the rotation stood when the record failed.
   */
  | (Resolved & {
      readonly step: 'journal-failed';
      readonly phase: JournalPhase;
      readonly journal: JournalFailure;
      readonly before: RotationState;
      readonly files: 'nothing-staged' | 'unstaged' | 'live';
      readonly unstageFailures: readonly MachineFailure[];
    });

/**
 * A `mesh resume` entered at `committing` (rotation-recovered.ts resumeStart), carried through
 * its steps: the rules where a resume is not a rotation read it — its records are `resumed` /
 * `resume-failed` written from the rotation's `prepared` record, its intents leave alone the
 * pairs an earlier step finished, and a pair it could not finish stays staged, never rolled back.
 */
export interface Resuming {
  /** The rotation's `prepared` record (its pairs still the rotation's): every record of the resume is written from it. */
  readonly record: JournalRecord;
  /** Pairs an earlier step finished (the records' `applied`): their intents are not written again. */
  readonly finishedBefore: readonly string[];
  /** Pairs whose consumer end was live with the prepared secret when read: applied, never renamed again. */
  readonly consumersLive: readonly string[];
  /** Ends live with the prepared secret when read (the report's "already live"). */
  readonly alreadyLive: number;
  /** How many provider ends `committed` began with (live when read, not renamed now). */
  readonly providersLive: number;
}

/** How a resume ended, beside its `done` step: what its report and its outcome read. */
export interface Resumed extends Resuming {
  /** Machines where a rename failed, provider ends first: their files are still staged. */
  readonly failures: readonly MachineFailure[];
  /** Pairs whose test login was refused: their consumer ends are still staged. */
  readonly refused: readonly GateRefusal[];
  /** Files this resume renamed: provider ends, then consumer ends after their receipt. */
  readonly renamedNow: number;
}

/** Why a journal record could not be written, and where (the journal file's path). */
export interface JournalFailure {
  readonly what: string;
  readonly where: string;
  readonly next: string;
}

/** pair key → ms from the database taking the new password to the consumer end's rename. */
export type Windows = Readonly<Record<string, number>>;

type Digests = Readonly<Record<string, SecretDigest>>;
/** pair key → the provider's file before its commit (absent: none was live, or not committed). */
export type Previous = Readonly<Record<string, SecretDigest>>;

export type RotationEvent =
  | { readonly type: 'holder-resolved'; readonly machine: string; readonly resolution: Resolution }
  | { readonly type: 'typed'; readonly text: string }
  | { readonly type: 'confirmed' }
  | { readonly type: 'back' }
  /** One holder has both ends of its files staged (`files` of them). */
  | { readonly type: 'staged'; readonly machine: string }
  | { readonly type: 'prepared'; readonly digests: Digests }
  | {
      readonly type: 'prepare-failed';
      readonly failures: readonly MachineFailure[];
      readonly unstageFailures: readonly MachineFailure[];
    }
  /** One holder committed its provider-end files. */
  | {
      readonly type: 'committed-step';
      readonly machine: string;
      readonly end: 'provides' | 'consumes';
      readonly paths: readonly string[];
    }
  /** `tested`: the pairs whose provider names `connect:` (a test login goes before their consumer moves). */
  | { readonly type: 'committed'; readonly previous?: Previous; readonly tested?: readonly string[] }
  /** Some provider ends could not be renamed; the pairs of the others still go on. */
  | {
      readonly type: 'commit-failed';
      readonly failures: readonly MachineFailure[];
      readonly previous?: Previous;
      readonly tested?: readonly string[];
      /** The providers' `committing` intents could not all be written: nothing was renamed. */
      readonly unrecorded?: true;
    }
  /** The receipt wait's observations and results (receipt-wait-machine.ts: who emits which). */
  | WaitEvent
  /** The apply phase is closed (outcomes recorded, reloads ended, revokes run); `failures`: consumer machines whose rename failed. */
  | {
      readonly type: 'apply-finished';
      readonly failures: readonly MachineFailure[];
      readonly stopped?: string;
      readonly revoked?: readonly PairRevoke[];
      /** app-truth: test logins (a refused one left its pair unfinished: rolled back) and reloads. */
      readonly app?: AppResults;
    }
  /** The unfinished pairs were rolled back (or could not be, each result says why). */
  | {
      readonly type: 'rolled-back';
      readonly results: readonly PairRollback[];
      /** The test logins the roll-back made before finishing a pair (the journal keeps them). */
      readonly testLogins?: readonly TestLoginRecord[];
    }
  /** Finished pairs' previous provider files were removed (or left: a finished pair's is harmless). */
  | { readonly type: 'previous-discarded' }
  /** A phase's record is on disk (the commit starts only after the 'prepared' one is). */
  | { readonly type: 'journaled'; readonly phase: JournalPhase }
  | { readonly type: 'journal-failed'; readonly phase: JournalPhase; readonly journal: JournalFailure }
  /** The staged files were taken back after a journal failure; `failures`: where they could not be. */
  | { readonly type: 'unstaged'; readonly failures: readonly MachineFailure[] }
  /** Resolving itself broke (not one holder's answer): every holder not yet answered is unresolved. */
  | { readonly type: 'resolve-failed'; readonly reason: string };

export type RotationEffect =
  | { readonly type: 'resolve' }
  | { readonly type: 'journal'; readonly phase: JournalPhase; readonly state: RotationState }
  | { readonly type: 'prepare' }
  | { readonly type: 'commit' }
  /**
   * Start the receipt wait's clock for these pairs (their provider ends are live): the adapter
   * the commit opened polls and watches, and reports receipts, the deadline or a stop as
   * events. Asked for the moment the provider ends answered and run beside the effect queue,
   * as are the wait's commands, so no receipt waits for the 'committed' record's fsync.
   */
  | { readonly type: 'await-receipts'; readonly pairs: readonly string[] }
  /** The receipt wait's commands: a test login, a consumer's rename, a pause before a retry, the end. */
  | WaitCommand
  /** Both the renames and the 'committed' record are done: record outcomes, end the reloads, revoke. */
  | {
      readonly type: 'finish-apply';
      readonly pairs: readonly string[];
      readonly failures: readonly MachineFailure[];
    }
  /** The 'committed' record failed after renames ran: what was renamed stays, its intent says `finished`. */
  | { readonly type: 'settle-renamed'; readonly pairs: readonly string[] }
  /** Remove every staged file of the plan (after a journal failure, before anything is live). */
  | { readonly type: 'unstage' }
  /** Roll back these pairs (keys): restore the provider's previous file, remove the consumer's staged end. */
  | { readonly type: 'roll-back'; readonly pairs: readonly string[] }
  /** These pairs finished: their providers' previous files are no longer needed. */
  | { readonly type: 'discard-previous'; readonly pairs: readonly string[] };

export interface Step {
  readonly state: RotationState;
  readonly effects: readonly RotationEffect[];
}

const to = (state: RotationState, effects: readonly RotationEffect[] = []): Step => ({ state, effects });

/** The record a step writes once it is reached: its phase from the one table (rotation-phase.ts). */
function journalOf(state: Extract<RotationState, { readonly step: RecordedStep }>): RotationEffect {
  return { type: 'journal', phase: recordedPhase(state), state };
}

/**
 * A `mesh rollback` that found every pair it touched finished says so in one word, `finished`
 * (rotation-phase.ts), not `rolled-back` with nothing rolled back: status names no rotation
 * as taken back that was finished. A rotation's own roll-back keeps `rolled-back`.
 */
function recordedPhase(state: Extract<RotationState, { readonly step: RecordedStep }>): JournalPhase {
  if (
    state.step === 'rolled-back' &&
    state.recovered &&
    state.results.length > 0 &&
    state.results.every((r) => r.result === 'finished')
  )
    return 'finished';
  // A resume's own words: it finished what was staged, or left some of it staged (a failed rename).
  if (state.step === 'done' && state.resume)
    return state.resume.failures.length === 0 ? 'resumed' : 'resume-failed';
  return RECORD_OF_STEP[state.step];
}

type Applying = Extract<RotationState, { readonly step: 'applying' }>;

const WAIT_EVENTS: ReadonlySet<RotationEvent['type']> = new Set<WaitEvent['type']>([
  'receipt-seen',
  'receipt-stale',
  'login-tested',
  'consumer-renamed',
  'channel-lost',
  'rename-due',
  'wait-expired',
  'wait-stopped',
]);

function isWaitEvent(event: RotationEvent): event is WaitEvent {
  return WAIT_EVENTS.has(event.type);
}

/** The wait effects that run beside the queue (they report back only as events). */
const WAIT_EFFECTS: ReadonlySet<RotationEffect['type']> = new Set<RotationEffect['type']>([
  'await-receipts',
  'test-login',
  'rename-consumer',
  'rename-later',
  'close-wait',
]);

/**
 * The apply phase after a step of its receipt wait: each renamed pair's window is recorded,
 * the wait's commands are asked for, and once the wait is over the phase may close.
 */
function waited(
  state: Applying,
  step: WaitStep,
  first: readonly RotationEffect[] = [],
  last: readonly RotationEffect[] = [],
): Step {
  if (step.state === state.wait && first.length === 0 && last.length === 0 && step.commands.length === 0)
    return to(state);
  let applied = state.applied;
  for (const a of step.appliedNow) applied = logAdd(applied, a.pair, a.windowMs);
  const next: Applying = {
    ...state,
    wait: step.state,
    applied,
    ...(step.result && state.renamed === undefined ? { renamed: step.result.failures } : {}),
  };
  const closed = closeApply(next);
  return to(closed.state, [...first, ...step.commands, ...last, ...closed.effects]);
}

/** The apply phase, once its wait is over and its record is on disk: what was applied is recorded, the rest rolled back. */
function closeApply(state: Applying): Step {
  if (!state.recorded || state.renamed === undefined) return to(state);
  // A resume's pairs whose consumer end was live when read are finished too (their intents say so now).
  const before = setOf(state.resume?.consumersLive ?? []);
  const live = state.plan.pairs.filter(
    (p) => setOf(state.committed).has(`${p.providerMachine}\0${p.providerPath}`) || before.has(p.key),
  );
  return to(state, [{ type: 'finish-apply', pairs: live.map((p) => p.key), failures: state.renamed }]);
}

/**
 * A resume's provider ends answered: its wait starts for the pairs whose provider end is live
 * and consumer end is not. No record is written between (a resume writes one when it ends;
 * the providers' `committing` intents already say what may be live), so the phase may close
 * as soon as the wait is over.
 */
function resumeApplying(
  applying: Applying,
  resume: Resuming,
  live: readonly string[],
  tested: readonly string[],
): Step {
  const resumed: Applying = { ...applying, recorded: true, resume };
  // With no pair to wait for, the wait is over as it starts: no reader is opened.
  const awaits: RotationEffect[] = live.length > 0 ? [{ type: 'await-receipts', pairs: live }] : [];
  return waited(resumed, waitStarted(applying.wait, live, tested), awaits);
}

/**
 * A RESUME NEVER ROLLS BACK: what it could not finish (no receipt in time, a refused test
 * login, a failed rename) stays staged for the next `mesh resume` or a `mesh rollback`, where
 * a rotation's wait sends every unfinished pair to `rolling-back`. Its record says `resumed`,
 * or `resume-failed` after a failed rename; once `--revoke-previous` revoked, a second
 * `resumed` record marks the revoked logins. Its `applied` are the pairs whose consumer end is
 * live: those it was read live, then those renamed now.
 */
function resumeDone(
  state: Applying,
  resume: Resuming,
  event: Extract<RotationEvent, { type: 'apply-finished' }>,
  failures: readonly MachineFailure[],
  windows: Windows,
): Step {
  const applied = [...resume.consumersLive, ...logKeys(state.applied)];
  const ended: Extract<RotationState, { step: 'done' }> = {
    ...base(state),
    step: 'done',
    digests: state.digests,
    applied,
    windows,
    ...(event.app ? { app: event.app } : {}),
    resume: {
      ...resume,
      failures,
      refused: state.wait.refused,
      renamedNow: state.committed.length - resume.providersLive + Object.keys(windows).length,
    },
  };
  const done = event.revoked ? { ...ended, revoked: event.revoked } : ended;
  const revokedAny = event.revoked?.some((r) => r.revoked) === true;
  return to(done, [
    { type: 'journal', phase: recordedPhase(ended), state: ended },
    ...(revokedAny ? [{ type: 'journal' as const, phase: 'resumed' as const, state: done }] : []),
    { type: 'discard-previous', pairs: applied },
  ]);
}

const PENDING: Resolution = { status: 'pending' };

export function startRotation(id: string, plan: RotationPlan): Step {
  return to({ step: 'resolving', id, plan, answers: emptyLog() }, [{ type: 'resolve' }]);
}

/** The number the operator types to confirm: how many credentials will change. */
export function confirmationText(plan: RotationPlan): string {
  return String(plan.pairs.length);
}

/** A holder's answer so far, in any step. */
export function resolutionOf(state: RotationState, machine: string): Resolution | undefined {
  if (state.step === 'resolving')
    return planIndex(state.plan).holders.has(machine)
      ? (logGet(state.answers, machine) ?? PENDING)
      : undefined;
  return state.resolutions[machine];
}

export function unresolvedHolders(state: RotationState): { machine: string; reason: string }[] {
  const out: { machine: string; reason: string }[] = [];
  for (const holder of state.plan.holders) {
    const r = resolutionOf(state, holder.machine);
    if (r?.status === 'unresolved') out.push({ machine: holder.machine, reason: r.reason });
  }
  return out;
}

/** Whether `key` is among `committed` (a log in flight, an array once the phase ended). */
export function isCommitted(committed: KeyedLog<true> | readonly string[], key: string): boolean {
  return 'backing' in committed ? logHas(committed, key) : setOf(committed).has(key);
}

const sets = new WeakMap<readonly string[], ReadonlySet<string>>();

/** A finished phase's array as a set, built once per array (a frame asks per holder row). */
export function setOf(items: readonly string[]): ReadonlySet<string> {
  let set = sets.get(items);
  if (!set) {
    set = new Set(items);
    sets.set(items, set);
  }
  return set;
}

export function rotation(state: RotationState, event: RotationEvent): Step {
  if (event.type === 'journal-failed') return journalFailed(state, event);
  switch (state.step) {
    case 'resolving': {
      if (event.type === 'resolve-failed') return resolveFailed(state, event.reason);
      // The first answer per holder counts; a machine outside the plan is not a holder.
      if (
        event.type !== 'holder-resolved' ||
        !planIndex(state.plan).holders.has(event.machine) ||
        logHas(state.answers, event.machine)
      )
        return to(state);
      const answers = logAdd(state.answers, event.machine, event.resolution);
      if (answers.size < planIndex(state.plan).holders.size) return to({ ...state, answers });
      const resolutions: Record<string, Resolution> = {};
      for (const holder of state.plan.holders)
        resolutions[holder.machine] = logGet(answers, holder.machine) ?? PENDING;
      const next: Resolved = { id: state.id, plan: state.plan, resolutions };
      // THE GATE. One unresolved holder among any number closes it before a secret exists.
      if (Object.values(resolutions).some((r) => r.status === 'unresolved')) {
        const closed: RotationState = { ...next, step: 'gate-closed' };
        return to(closed, [journalOf(closed)]);
      }
      const confirming: RotationState = { ...next, step: 'confirming', typed: '' };
      return to(confirming, [journalOf(confirming)]);
    }
    case 'confirming':
      if (event.type === 'typed') return to({ ...state, typed: event.text });
      if (event.type === 'confirmed' && state.typed.trim() === confirmationText(state.plan)) {
        return to({ ...base(state), step: 'preparing', staged: emptyLog(), stagedFiles: 0 }, [
          { type: 'prepare' },
        ]);
      }
      if (event.type === 'back') {
        const cancelled: RotationState = { ...base(state), step: 'cancelled' };
        return to(cancelled, [journalOf(cancelled)]);
      }
      return to(state);
    case 'preparing':
      if (event.type === 'staged') {
        const holder = planIndex(state.plan).holders.get(event.machine);
        if (!holder || logHas(state.staged, event.machine)) return to(state);
        return to({
          ...state,
          staged: logAdd(state.staged, event.machine, true),
          stagedFiles: state.stagedFiles + holder.receives.length,
        });
      }
      if (event.type === 'prepared') {
        const committing: RotationState = {
          ...base(state),
          step: 'committing',
          digests: event.digests,
          committed: emptyLog(),
          wait: waitBegun(state.plan.pairs, event.digests),
        };
        // The commit waits for 'journaled': without the 'prepared' record `mesh resume` could
        // never find these staged files, so a failed record takes them back instead.
        return to(committing, [journalOf(committing)]);
      }
      if (event.type === 'prepare-failed') {
        const failed: RotationState = {
          ...base(state),
          step: 'prepare-failed',
          failures: event.failures,
          unstageFailures: event.unstageFailures,
        };
        return to(failed, [journalOf(failed)]);
      }
      return to(state);
    case 'committing':
      // A receipt seen while other providers still commit is kept: the wait acts on it once it starts.
      if (isWaitEvent(event)) {
        const wait = receiptWait(state.wait, event).state;
        return wait === state.wait ? to(state) : to({ ...state, wait });
      }
      if (event.type === 'journaled' && event.phase === 'prepared' && state.committed.size === 0)
        return to(state, [{ type: 'commit' }]);
      if (event.type === 'committed-step') {
        let committed = state.committed;
        for (const p of event.paths) committed = logAdd(committed, `${event.machine}\0${p}`, true);
        return committed === state.committed ? to(state) : to({ ...state, committed });
      }
      if (event.type === 'committed' || event.type === 'commit-failed') {
        // A resume whose intents could not be recorded renames nothing: the gate closes, no record (exit 4).
        if (state.resume && event.type === 'commit-failed' && event.unrecorded)
          return to({ ...base(state), step: 'gate-closed', unrecorded: event.failures });
        // Only pairs whose provider end is live can be applied; the others wait for resume. A
        // resume waits only for the pairs whose consumer end is not live yet (the wait's own).
        const live = state.plan.pairs
          .filter(
            (p) =>
              logHas(state.committed, `${p.providerMachine}\0${p.providerPath}`) &&
              p.key in state.wait.consumerOf,
          )
          .map((p) => p.key);
        const applying: Applying = {
          ...base(state),
          step: 'applying',
          digests: state.digests,
          committed: logKeys(state.committed),
          failures: event.type === 'commit-failed' ? event.failures : [],
          previous: event.previous ?? {},
          applied: emptyLog(),
          wait: state.wait,
          recorded: false,
        };
        if (state.resume) return resumeApplying(applying, state.resume, live, event.tested ?? []);
        // The journal's 'committed' record is the provider ends; a failed machine is in its results.
        // The consumer renames do not wait for it (the wait's effects run beside the queue): the
        // providers' intents, `committing` before any end went live, already say what may be live.
        // A receipt already seen is acted on now (its rename, or its test login first).
        return waited(
          applying,
          waitStarted(state.wait, live, event.tested ?? []),
          [{ type: 'await-receipts', pairs: live }],
          [journalOf(applying)],
        );
      }
      return to(state);
    case 'applying':
      if (isWaitEvent(event)) return waited(state, receiptWait(state.wait, event));
      // The apply phase closes once BOTH the wait is over and the 'committed' record is on disk.
      if (event.type === 'journaled' && event.phase === 'committed' && !state.recorded)
        return closeApply({ ...state, recorded: true });
      if (event.type === 'apply-finished') {
        const applied = logKeys(state.applied);
        const windows: Record<string, number> = {};
        for (const key of applied) windows[key] = logGet(state.applied, key)!;
        const failures = [...state.failures, ...event.failures];
        if (state.resume) return resumeDone(state, state.resume, event, failures, windows);
        if (failures.length === 0 && applied.length === state.plan.pairs.length) {
          const done: RotationState = {
            ...base(state),
            step: 'done',
            digests: state.digests,
            applied,
            windows,
            ...(event.revoked ? { revoked: event.revoked } : {}),
            ...(event.app ? { app: event.app } : {}),
          };
          return to(done, [journalOf(done), { type: 'discard-previous', pairs: applied }]);
        }
        // ALL OR NOTHING PAST THE COMMIT: what did not finish is rolled back now, never left waiting.
        const finished = setOf(applied);
        const open = state.plan.pairs.filter((p) => !finished.has(p.key)).map((p) => p.key);
        const rolling: RotationState = {
          ...base(state),
          step: 'rolling-back',
          digests: state.digests,
          previous: state.previous,
          applied,
          windows,
          failures,
          stopped: event.stopped,
          ...(event.app ? { app: event.app } : {}),
        };
        return to(rolling, [{ type: 'roll-back', pairs: open }]);
      }
      return to(state);
    case 'rolling-back':
      if (event.type === 'rolled-back') {
        const finishedNow = event.results.filter((r) => r.result === 'finished').map((r) => r.pair);
        const rolled: RotationState = {
          ...base(state),
          step: 'rolled-back',
          digests: state.digests,
          applied: state.applied,
          windows: state.windows,
          failures: state.failures,
          stopped: state.stopped,
          results: event.results,
          ...(state.app || event.testLogins?.length
            ? {
                app: {
                  testLogins: [...(state.app?.testLogins ?? []), ...(event.testLogins ?? [])],
                  reloads: state.app?.reloads ?? [],
                },
              }
            : {}),
          ...(state.recovered ? { recovered: true as const } : {}),
        };
        // A recovered machine's `applied` were finished by an earlier step, which dropped their
        // previous files; some may be a later rotation's by now, whose kept file is not ours to drop.
        const done = state.recovered ? finishedNow : [...state.applied, ...finishedNow];
        return to(rolled, [
          journalOf(rolled),
          ...(done.length > 0 ? [{ type: 'discard-previous' as const, pairs: done }] : []),
        ]);
      }
      return to(state);
    case 'unstaging':
      if (event.type === 'unstaged') {
        return to({
          ...base(state),
          step: 'journal-failed',
          phase: state.phase,
          journal: state.journal,
          before: state.before,
          files: 'unstaged',
          unstageFailures: event.failures,
        });
      }
      return to(state);
    case 'journal-failed': {
      // The 'committed' record failed (its failure closed the wait): what a batch in flight
      // renamed stays, and `mesh resume` finishes the rest.
      if (state.files !== 'live' || (event.type !== 'consumer-renamed' && event.type !== 'login-tested'))
        return to(state);
      const before = state.before.step === 'applying' ? state.before : undefined;
      const pairs = (event.type === 'consumer-renamed' ? event.applied : event.moved)
        .map((a) => a.pair)
        .filter((p) => before !== undefined && p in before.wait.consumerOf && !logHas(before.applied, p));
      return to(state, pairs.length > 0 ? [{ type: 'settle-renamed', pairs }] : []);
    }
    case 'gate-closed':
    case 'cancelled':
    case 'prepare-failed':
    case 'commit-failed':
    case 'done':
    case 'rolled-back':
      return to(state);
    default: {
      const never: never = state;
      throw new Error(`unknown rotation step ${String(never)}`);
    }
  }
}

/**
 * A record that cannot be written stops the rotation: no next phase starts without its
 * record. Staged files with nothing live are taken back (without the 'prepared' record
 * `mesh resume` could never find them); once an end is live the 'prepared' record is on disk,
 * so what is left stays for `mesh resume`.
 */
function journalFailed(
  state: RotationState,
  event: Extract<RotationEvent, { type: 'journal-failed' }>,
): Step {
  if (state.step === 'resolving' || state.step === 'unstaging' || state.step === 'journal-failed')
    return to(state);
  const failed = { ...base(state), phase: event.phase, journal: event.journal, before: state };
  const staged =
    state.step === 'committing'
      ? state.committed.size === 0
      : state.step === 'preparing' && state.staged.size > 0;
  if (staged) return to({ ...failed, step: 'unstaging' }, [{ type: 'unstage' }]);
  const live =
    state.step === 'committing' ||
    state.step === 'applying' ||
    state.step === 'done' ||
    state.step === 'commit-failed' ||
    state.step === 'rolling-back' ||
    state.step === 'rolled-back';
  // Renames that ended before the record failed are settled now; the wait, if still running, is
  // closed, and a batch in flight settles when it reports (in journal-failed).
  const renamed = state.step === 'applying' ? logKeys(state.applied) : [];
  const closing = state.step === 'applying' && !state.wait.over;
  return to(
    {
      ...failed,
      step: 'journal-failed',
      files: live ? 'live' : 'nothing-staged',
      unstageFailures: [],
    },
    [
      ...(closing ? [{ type: 'close-wait' as const }] : []),
      ...(renamed.length > 0 ? [{ type: 'settle-renamed' as const, pairs: renamed }] : []),
    ],
  );
}

/** Every holder not yet answered becomes unresolved with `reason`: the gate closes, nothing is generated. */
function resolveFailed(state: Extract<RotationState, { step: 'resolving' }>, reason: string): Step {
  let step = to(state);
  const effects: RotationEffect[] = [];
  for (const holder of state.plan.holders) {
    if (step.state.step !== 'resolving' || logHas(step.state.answers, holder.machine)) continue;
    step = rotation(step.state, {
      type: 'holder-resolved',
      machine: holder.machine,
      resolution: { status: 'unresolved', reason },
    });
    effects.push(...step.effects);
  }
  return to(step.state, effects);
}

function base(state: Exclude<RotationState, { step: 'resolving' }>): Resolved {
  return { id: state.id, plan: state.plan, resolutions: state.resolutions };
}

export type Terminal = Extract<
  RotationState,
  {
    step:
      | 'gate-closed'
      | 'cancelled'
      | 'prepare-failed'
      | 'commit-failed'
      | 'done'
      | 'rolled-back'
      | 'journal-failed';
  }
>;

export function isTerminal(state: RotationState): state is Terminal {
  return [
    'gate-closed',
    'cancelled',
    'prepare-failed',
    'commit-failed',
    'done',
    'rolled-back',
    'journal-failed',
  ].includes(state.step);
}

/**
 * How a rotation ended (or was left), by name. Everything that reports it — the exit code,
 * the drill, a test — reads the name; the number comes only from ROTATION_EXIT.
 */
export type RotationOutcome =
  | 'rotated'
  /** app-truth: rotated, but a consumer's reload failed or timed out: its app may still hold the old credential. */
  | 'reload-failed'
  /** app-truth: the new credential was refused from a consumer's machine (test login): that pair was rolled back. */
  | 'login-refused'
  /** Rotated, but a left login's revoke (--revoke-previous) was not confirmed: its old password may still work. */
  | 'revoke-unconfirmed'
  /** Some provider has not confirmed in time: its consumer end is staged, its old password still works. */
  | 'receipts-pending'
  | 'gate-closed'
  /** Prepare failed and was taken back: nothing took effect. */
  | 'rolled-back'
  /** A rename failed: what is left is staged for `mesh resume`. */
  | 'commit-interrupted'
  /** Past the commit, every pair is finished or was rolled back: nothing is left to do. */
  | 'taken-back'
  /** Past the commit, a machine could not be reached: a pair is left for `mesh resume` or `mesh rollback`. */
  | 'unfinished'
  | 'cancelled'
  | 'journal-failed'
  /** The operator left while provider ends were being renamed: something may be left to resume. */
  | 'left-during-commit'
  /** The operator left before anything was renamed. */
  | 'left';

/** 4 when nothing took effect by the gate's rule, 1 when something failed, 3 when cancelled or something waits for the operator. */
export const ROTATION_EXIT: Readonly<Record<RotationOutcome, number>> = {
  rotated: EXIT_OK,
  'reload-failed': EXIT_CODES['action-needed'],
  'login-refused': EXIT_CODES['action-needed'],
  'revoke-unconfirmed': EXIT_CODES['action-needed'],
  'receipts-pending': EXIT_CODES['action-needed'],
  'gate-closed': EXIT_CODES['gate-closed'],
  'rolled-back': EXIT_CODES['gate-closed'],
  'commit-interrupted': EXIT_CODES.failed,
  'taken-back': EXIT_CODES['action-needed'],
  unfinished: EXIT_CODES['action-needed'],
  cancelled: EXIT_CODES.aborted,
  'journal-failed': EXIT_CODES.failed,
  'left-during-commit': EXIT_CODES.failed,
  left: EXIT_CODES.aborted,
};

export function rotationOutcome(state: Terminal): RotationOutcome {
  switch (state.step) {
    case 'gate-closed':
      return 'gate-closed';
    case 'prepare-failed':
      return 'rolled-back';
    case 'commit-failed':
      return 'commit-interrupted';
    case 'rolled-back':
      if (!state.results.every((r) => r.result === 'finished' || (r.result === 'rolled-back' && !r.leftover)))
        return 'unfinished';
      return appOutcome(state.app) ?? 'taken-back';
    case 'journal-failed':
      return 'journal-failed';
    case 'cancelled':
      return 'cancelled';
    case 'done':
      if (state.resume)
        return resumeOutcome({
          failures: state.resume.failures.length,
          refused: new Set(state.resume.refused.map((r) => r.pair)).size,
          pending: state.plan.pairs.length - state.applied.length,
          revokeUnconfirmed: state.revoked?.some((r) => !r.revoked) === true,
        });
      if (state.applied.length < state.plan.pairs.length) return 'receipts-pending';
      if (state.revoked?.some((r) => !r.revoked)) return 'revoke-unconfirmed';
      return appOutcome(state.app) ?? 'rotated';
    default: {
      const never: never = state;
      throw new Error(`unknown terminal ${String(never)}`);
    }
  }
}

/** What `mesh resume` left, counted. */
export interface ResumeEnd {
  /** Machines where a rename failed: their files are still staged. */
  readonly failures: number;
  /** Pairs whose test login was refused: their consumer ends are still staged. */
  readonly refused: number;
  /** Pairs whose consumer end is not live (no receipt in time, or refused): still staged. */
  readonly pending: number;
  /** A left login's revoke (--revoke-previous) was not confirmed. */
  readonly revokeUnconfirmed: boolean;
}

/**
 * How a `mesh resume` ended, in the rotation's words, so its exit comes from the same table
 * (ROTATION_EXIT) as the rotation it finishes: a failed rename first (1), then what waits for
 * the operator (3) — a refused login, a pending receipt, an unconfirmed revoke — else rotated
 * (0). A rotation's `done` names pending receipts first; a resume's refused login is one of
 * its pending pairs, and the more specific word.
 */
export function resumeOutcome(end: ResumeEnd): RotationOutcome {
  if (end.failures > 0) return 'commit-interrupted';
  if (end.refused > 0) return 'login-refused';
  if (end.pending > 0) return 'receipts-pending';
  if (end.revokeUnconfirmed) return 'revoke-unconfirmed';
  return 'rotated';
}

/** app-truth: a refused test login first (its pair did not move), then a failed reload. */
function appOutcome(app: AppResults | undefined): RotationOutcome | undefined {
  if (!app) return undefined;
  if (app.testLogins.some((t) => !t.ok)) return 'login-refused';
  if (app.reloads.some((r) => r.result !== 'ok')) return 'reload-failed';
  return undefined;
}

export function rotationExitCode(state: Terminal): number {
  return ROTATION_EXIT[rotationOutcome(state)];
}

/** The outcome when the operator leaves now: a finished rotation's own; otherwise whether a commit may be cut short. */
export function outcomeOnLeave(state: RotationState): RotationOutcome {
  if (isTerminal(state)) return rotationOutcome(state);
  return state.step === 'committing' ? 'left-during-commit' : 'left';
}

export function exitCodeOnLeave(state: RotationState): number {
  return ROTATION_EXIT[outcomeOnLeave(state)];
}

/** A phase that stages, renames or removes files: it finishes before anything else happens (Ctrl-C included). */
export function isWritingFiles(state: RotationState): boolean {
  return (
    state.step === 'preparing' ||
    state.step === 'committing' ||
    state.step === 'unstaging' ||
    state.step === 'rolling-back'
  );
}

/** baton is working and awaits no answer from the operator (the views' spinner turns). */
export function isWorking(state: RotationState): boolean {
  return !isTerminal(state) && state.step !== 'confirming';
}

/** Whether `q` may end the session now: never while files are being staged or renamed. */
export function canQuit(state: RotationState): boolean {
  return !isWritingFiles(state) && state.step !== 'confirming';
}

const answered = new WeakMap<object, number>();

/** Counts the views show for each phase: O(1) per frame, whatever the number of holders. */
export function progress(state: RotationState): {
  resolved: number;
  holders: number;
  files: number;
  staged: number;
  committed: number;
  pairs: number;
  applied: number;
} {
  // While taking staged files back, and after a record failed, the counts are where the rotation stood.
  if (state.step === 'unstaging' || state.step === 'journal-failed') return progress(state.before);
  const { files } = planIndex(state.plan);
  const holders = state.plan.holders.length;
  let resolved: number;
  if (state.step === 'resolving') resolved = state.answers.size;
  else {
    resolved =
      answered.get(state.resolutions) ??
      Object.values(state.resolutions).filter((r) => r.status !== 'pending').length;
    answered.set(state.resolutions, resolved);
  }
  const staged =
    state.step === 'preparing'
      ? state.stagedFiles
      : ['committing', 'commit-failed', 'applying', 'rolling-back', 'rolled-back', 'done'].includes(
            state.step,
          )
        ? files
        : 0;
  let committed = 0;
  let applied = 0;
  if (state.step === 'committing') committed = state.committed.size;
  else if (state.step === 'applying') {
    applied = state.applied.size;
    committed = state.committed.length + applied;
  } else if (state.step === 'commit-failed') {
    applied = state.applied.length;
    committed = state.committed.length;
  } else if (state.step === 'rolling-back' || state.step === 'rolled-back') {
    applied = state.applied.length;
    committed = state.plan.pairs.length + applied;
  } else if (state.step === 'done') {
    applied = state.applied.length;
    committed = state.plan.pairs.length + applied;
  }
  return { resolved, holders, files, staged, committed, pairs: state.plan.pairs.length, applied };
}

export type RotationFlow = Flow<RotationState, RotationEvent>;

/**
 * The rotation on the flow runtime, the same for the view, plain lines and the drill. ONE
 * QUEUE for every effect of every step: a phase's record is on disk before the next phase's
 * first transport call, whichever event started it — but for the consumer renames, which the
 * commit effect begins before the 'committed' record (the machines' `committing` intents are
 * their record; rotation-run-effect.ts `ConsumerRun`). After `stop()` only records and the
 * taking back of staged files still run.
 */
export function rotationFlow(
  start: Step,
  runner: EffectRunner<RotationState, RotationEvent, RotationEffect>,
): RotationFlow {
  return createFlow(rotation, start, runner, {
    sequential: true,
    // The consumer renames follow their receipts, never the queue (the receipt wait's effects).
    concurrent: (effect) => WAIT_EFFECTS.has(effect.type),
    isFinished: isTerminal,
    // Past the commit, leaving must still end in finished or rolled-back pairs: the wait (ended
    // at once by the stop signal) and the roll-back run after the operator left.
    runsAfterStop: (effect) =>
      WAIT_EFFECTS.has(effect.type) ||
      ['journal', 'unstage', 'finish-apply', 'settle-renamed', 'roll-back', 'discard-previous'].includes(
        effect.type,
      ),
  });
}
