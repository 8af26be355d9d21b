/**
 * The rotation as a pure state machine (DESIGN.md §6): state + event → state + effects. Views
 * render it and emit intents; rotation-run-effect turns effects into transport calls. Every
 * refusal is `effects: []`, so a key that does not apply can never send anything.
 *
 * No secret ever enters this state: the runner generates them inside the prepare effect and
 * reports back digests only, so a view, a log of states or a test snapshot cannot show one.
 */
import type { SecretDigest } from '../mesh/digest.js';
import type { MachineFailure } from '../mesh/delivery.js';
import type { JournalPhase } from '../mesh/journal.js';
import type { Resolution } from '../mesh/resolve-holders.js';
import type { RotationPlan } from '../mesh/rotation-plan.js';

interface Base {
  readonly id: string;
  readonly plan: RotationPlan;
  readonly resolutions: Readonly<Record<string, Resolution>>;
}

export type RotationState =
  | (Base & { readonly step: 'resolving' })
  | (Base & { readonly step: 'gate-closed' })
  | (Base & { readonly step: 'confirming'; readonly typed: string })
  | (Base & { readonly step: 'cancelled' })
  | (Base & { readonly step: 'preparing'; readonly staged: readonly string[] })
  | (Base & { readonly step: 'prepare-failed'; readonly failures: readonly MachineFailure[]; readonly unstageFailures: readonly MachineFailure[] })
  | (Base & { readonly step: 'committing'; readonly digests: Digests; readonly committed: readonly string[] })
  | (Base & { readonly step: 'commit-failed'; readonly digests: Digests; readonly committed: readonly string[]; readonly failures: readonly MachineFailure[] })
  | (Base & { readonly step: 'applying'; readonly digests: Digests; readonly applied: readonly string[] })
  | (Base & { readonly step: 'done'; readonly digests: Digests; readonly applied: readonly string[]; readonly waited: boolean });

type Digests = Readonly<Record<string, SecretDigest>>;

export type RotationEvent =
  | { readonly type: 'holder-resolved'; readonly machine: string; readonly resolution: Resolution }
  | { readonly type: 'typed'; readonly text: string }
  | { readonly type: 'confirmed' }
  | { readonly type: 'back' }
  /** One holder has both ends of its files staged (`files` of them). */
  | { readonly type: 'staged'; readonly machine: string }
  | { readonly type: 'prepared'; readonly digests: Digests }
  | { readonly type: 'prepare-failed'; readonly failures: readonly MachineFailure[]; readonly unstageFailures: readonly MachineFailure[] }
  /** One holder committed the files of one end. */
  | { readonly type: 'committed-step'; readonly machine: string; readonly end: 'provides' | 'consumes'; readonly paths: readonly string[] }
  | { readonly type: 'committed' }
  | { readonly type: 'commit-failed'; readonly failures: readonly MachineFailure[] }
  | { readonly type: 'applied-pair'; readonly pair: string }
  | { readonly type: 'apply-finished'; readonly waited: boolean };

export type RotationEffect =
  | { readonly type: 'resolve' }
  | { readonly type: 'journal'; readonly phase: JournalPhase; readonly state: RotationState }
  | { readonly type: 'prepare' }
  | { readonly type: 'commit' }
  | { readonly type: 'wait-applied'; readonly digests: Digests };

export interface Step {
  readonly state: RotationState;
  readonly effects: readonly RotationEffect[];
}

const to = (state: RotationState, effects: readonly RotationEffect[] = []): Step => ({ state, effects });

export function startRotation(id: string, plan: RotationPlan): Step {
  const resolutions: Record<string, Resolution> = {};
  for (const holder of plan.holders) resolutions[holder.machine] = { status: 'pending' };
  return to({ step: 'resolving', id, plan, resolutions }, [{ type: 'resolve' }]);
}

/** The number the operator types to confirm: how many credentials will change. */
export function confirmationText(plan: RotationPlan): string {
  return String(plan.pairs.length);
}

export function unresolvedHolders(state: Base): { machine: string; reason: string }[] {
  const out: { machine: string; reason: string }[] = [];
  for (const holder of state.plan.holders) {
    const r = state.resolutions[holder.machine];
    if (r?.status === 'unresolved') out.push({ machine: holder.machine, reason: r.reason });
  }
  return out;
}

export function rotation(state: RotationState, event: RotationEvent): Step {
  switch (state.step) {
    case 'resolving': {
      if (event.type !== 'holder-resolved' || !(event.machine in state.resolutions)) return to(state);
      const resolutions = { ...state.resolutions, [event.machine]: event.resolution };
      const next = { ...state, resolutions };
      if (Object.values(resolutions).some((r) => r.status === 'pending')) return to(next);
      // THE GATE. One unresolved holder among any number closes it before a secret exists.
      if (unresolvedHolders(next).length > 0) {
        const closed: RotationState = { ...next, step: 'gate-closed' };
        return to(closed, [{ type: 'journal', phase: 'gate-closed', state: closed }]);
      }
      const confirming: RotationState = { ...next, step: 'confirming', typed: '' };
      return to(confirming, [{ type: 'journal', phase: 'resolved', state: confirming }]);
    }
    case 'confirming':
      if (event.type === 'typed') return to({ ...state, typed: event.text });
      if (event.type === 'confirmed' && state.typed.trim() === confirmationText(state.plan)) {
        return to({ ...base(state), step: 'preparing', staged: [] }, [{ type: 'prepare' }]);
      }
      if (event.type === 'back') {
        const cancelled: RotationState = { ...base(state), step: 'cancelled' };
        return to(cancelled, [{ type: 'journal', phase: 'cancelled', state: cancelled }]);
      }
      return to(state);
    case 'preparing':
      if (event.type === 'staged' && !state.staged.includes(event.machine)) return to({ ...state, staged: [...state.staged, event.machine] });
      if (event.type === 'prepared') {
        const committing: RotationState = { ...base(state), step: 'committing', digests: event.digests, committed: [] };
        return to(committing, [{ type: 'journal', phase: 'prepared', state: committing }, { type: 'commit' }]);
      }
      if (event.type === 'prepare-failed') {
        const failed: RotationState = { ...base(state), step: 'prepare-failed', failures: event.failures, unstageFailures: event.unstageFailures };
        return to(failed, [{ type: 'journal', phase: 'prepare-failed', state: failed }]);
      }
      return to(state);
    case 'committing':
      if (event.type === 'committed-step') {
        return to({ ...state, committed: [...state.committed, ...event.paths.map((p) => `${event.machine}\0${p}`)] });
      }
      if (event.type === 'committed') {
        const applying: RotationState = { ...base(state), step: 'applying', digests: state.digests, applied: [] };
        return to(applying, [{ type: 'journal', phase: 'committed', state: applying }, { type: 'wait-applied', digests: state.digests }]);
      }
      if (event.type === 'commit-failed') {
        const failed: RotationState = { ...base(state), step: 'commit-failed', digests: state.digests, committed: state.committed, failures: event.failures };
        return to(failed, [{ type: 'journal', phase: 'commit-failed', state: failed }]);
      }
      return to(state);
    case 'applying':
      if (event.type === 'applied-pair' && !state.applied.includes(event.pair)) return to({ ...state, applied: [...state.applied, event.pair] });
      if (event.type === 'apply-finished') {
        const done: RotationState = { ...base(state), step: 'done', digests: state.digests, applied: state.applied, waited: event.waited };
        return to(done, [{ type: 'journal', phase: 'applied', state: done }]);
      }
      return to(state);
    case 'gate-closed':
    case 'cancelled':
    case 'prepare-failed':
    case 'commit-failed':
    case 'done':
      return to(state);
    default: {
      const never: never = state;
      throw new Error(`unknown rotation step ${String(never)}`);
    }
  }
}

function base(state: RotationState): Base {
  return { id: state.id, plan: state.plan, resolutions: state.resolutions };
}

export type Terminal = Extract<RotationState, { step: 'gate-closed' | 'cancelled' | 'prepare-failed' | 'commit-failed' | 'done' }>;

export function isTerminal(state: RotationState): state is Terminal {
  return ['gate-closed', 'cancelled', 'prepare-failed', 'commit-failed', 'done'].includes(state.step);
}

/**
 * DESIGN.md §8: 4 when the gate closed or prepare rolled back (nothing took effect), 1 when a
 * commit is left to resume, 3 when cancelled or when a provider has not confirmed in time.
 */
export function exitCodeOf(state: Terminal): number {
  switch (state.step) {
    case 'gate-closed':
    case 'prepare-failed':
      return 4;
    case 'commit-failed':
      return 1;
    case 'cancelled':
      return 3;
    case 'done':
      return state.waited && state.applied.length < state.plan.pairs.length ? 3 : 0;
    default: {
      const never: never = state;
      throw new Error(`unknown terminal ${String(never)}`);
    }
  }
}

/** Whether `q` may end the session now: never while files are being staged or renamed. */
export function canQuit(state: RotationState): boolean {
  return state.step !== 'preparing' && state.step !== 'committing' && state.step !== 'confirming';
}

/** Counts the views show for each phase. */
export function progress(state: RotationState): { resolved: number; holders: number; files: number; staged: number; committed: number; pairs: number; applied: number } {
  const holders = state.plan.holders.length;
  const files = state.plan.holders.reduce((n, h) => n + h.receives.length, 0);
  const resolved = Object.values(state.resolutions).filter((r) => r.status !== 'pending').length;
  const stagedMachines = state.step === 'preparing' ? state.staged : [];
  const staged =
    state.step === 'preparing'
      ? state.plan.holders.filter((h) => stagedMachines.includes(h.machine)).reduce((n, h) => n + h.receives.length, 0)
      : ['committing', 'commit-failed', 'applying', 'done'].includes(state.step) ? files : 0;
  const committed =
    state.step === 'committing' || state.step === 'commit-failed' ? state.committed.length : state.step === 'applying' || state.step === 'done' ? files : 0;
  const applied = state.step === 'applying' || state.step === 'done' ? state.applied.length : 0;
  return { resolved, holders, files, staged, committed, pairs: state.plan.pairs.length, applied };
}
