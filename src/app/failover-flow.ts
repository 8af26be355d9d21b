/**
 * The failover walk (docs/cli.md) as a reducer: reading → deciding → confirming (or the
 * force gate, or the push-over gate) → acting → done, with 'failed' reachable from every read
 * and act.
 *
 * NOTHING IS WRITTEN BEFORE THE FINAL CONFIRM: the only effect that writes is 'act', and it is
 * produced in exactly three places — a confirm on the confirming screen, and a confirm on the
 * force or the push-over gate once the typed prefix matches. Every other (state × event) pair that does not
 * apply returns the state unchanged with `effects: []`.
 */
import { EXIT_CODES, EXIT_OK, type BatonError } from '../errors.js';
import { typedMatch } from '../pki/fingerprint-type.js';
import { forceBinding, pushOverBinding } from '../share/confirm-binding.js';
import { allowedActions } from '../share/decide.js';
import type { Action, Outcome, Verdict } from '../share/types.js';
import type { StatusReport } from './status-report.js';
import { assertNever } from './status-verdict.js';
import { supersededDirFor } from '../authority/index.js';
import {
  deploymentRefusal,
  forceRefusal,
  isIrreversible,
  needsDeploymentGate,
  pushRefusal,
} from './typed-gate.js';

/** Actions confirmed with Enter on a confirm screen; force and push-over have their own typed gates. */
export type PlainAction = Exclude<Action, 'force' | 'push-over' | 'leave'>;

export type FailoverState =
  | { readonly step: 'reading' }
  | {
      readonly step: 'deciding';
      readonly reading: StatusReport;
      readonly actions: readonly Action[];
      readonly cursor: number;
    }
  | {
      readonly step: 'confirming';
      readonly reading: StatusReport;
      readonly actions: readonly Action[];
      readonly cursor: number;
      readonly action: PlainAction;
      /** What was typed at the deployment gate (only read when `gated`). */
      readonly typed: string;
      /** Whether this confirm asks for the deployment id first (needsDeploymentGate). */
      readonly gated: boolean;
      /** Why the last Enter was not accepted; cleared by typing. */
      readonly refusal: string | undefined;
    }
  | {
      readonly step: 'confirming-force';
      readonly reading: StatusReport;
      readonly actions: readonly Action[];
      readonly cursor: number;
      readonly verdict: Extract<Verdict, { kind: 'refuse' }>;
      readonly typed: string;
      /** When the gate opened: the set-aside stamp the screen shows and the act uses. */
      readonly at: Date;
      /** Why the last Enter was not accepted; cleared by typing. */
      readonly refusal: string | undefined;
    }
  | {
      /** Keep THIS host's authority: publish it over the published one, bound to PUBLISHED 8. */
      readonly step: 'confirming-push';
      readonly reading: StatusReport;
      readonly actions: readonly Action[];
      readonly cursor: number;
      readonly verdict: Extract<Verdict, { kind: 'refuse' }>;
      readonly typed: string;
      /** Why the last Enter was not accepted; cleared by typing. */
      readonly refusal: string | undefined;
    }
  | { readonly step: 'acting'; readonly reading: StatusReport; readonly action: Action }
  | {
      readonly step: 'done';
      readonly before: StatusReport;
      readonly action: Action;
      readonly outcome: Outcome;
      /** The re-read after acting; undefined while it runs. */
      readonly after: StatusReport | undefined;
      readonly afterError: BatonError | undefined;
    }
  | {
      readonly step: 'failed';
      readonly reading: StatusReport | undefined;
      readonly action: Action | undefined;
      readonly error: BatonError;
    };

export type FailoverEvent =
  | { readonly type: 'read'; readonly reading: StatusReport }
  | { readonly type: 'read-failed'; readonly error: BatonError }
  | { readonly type: 'move'; readonly by: 1 | -1 }
  /** Enter on the action list; `at` stamps a force gate opened by it. */
  | { readonly type: 'select'; readonly at: Date }
  | { readonly type: 'typed'; readonly text: string }
  | { readonly type: 'confirm' }
  | { readonly type: 'back' }
  | { readonly type: 'refresh' }
  | { readonly type: 'acted'; readonly outcome: Outcome }
  | { readonly type: 'act-failed'; readonly error: BatonError }
  | { readonly type: 'reread'; readonly reading: StatusReport }
  | { readonly type: 'reread-failed'; readonly error: BatonError };

export type FailoverEffect =
  | { readonly type: 'read' }
  /**
   * The one effect that writes. `seen` is the verdict the operator confirmed: the operation
   * re-decides inside the lock and refuses if it moved. `at` fixes the set-aside stamp.
   */
  | {
      readonly type: 'act';
      readonly action: Exclude<Action, 'leave'>;
      readonly seen: Verdict;
      readonly at: Date | undefined;
    }
  | { readonly type: 'reread' };

export interface FailoverStep {
  readonly state: FailoverState;
  readonly effects: readonly FailoverEffect[];
}

export const initialFailover: FailoverStep = { state: { step: 'reading' }, effects: [{ type: 'read' }] };

const stay = (state: FailoverState): FailoverStep => ({ state, effects: [] });
const reread = (): FailoverStep => ({ state: { step: 'reading' }, effects: [{ type: 'read' }] });

/**
 * The actions offered: the table's (allowedActions), narrowed to 'leave' while another
 * process holds ca.lock — every other action would be refused at once with exit 5.
 */
export function offeredActions(reading: StatusReport): readonly Action[] {
  const allowed = allowedActions(reading.verdict);
  return reading.lock.state === 'busy' ? allowed.filter((a) => a === 'leave') : allowed;
}

type BoundGateState = Extract<FailoverState, { step: 'confirming-force' | 'confirming-push' }>;

/**
 * THE WALK'S TWO TYPED GATES ARE ONE GATE, bound to a different side: force to the LOCAL
 * fingerprint (what it sets aside), push-over to the PUBLISHED one (what it replaces in the
 * store). Each asks for its value from the same Binding `sync --confirm` checks
 * (src/share/confirm-binding.ts), so a screen and a command can never ask for different things,
 * and the reducer runs one code path for both.
 */
const BOUND_GATES = {
  'confirming-force': {
    binding: (v: Extract<Verdict, { kind: 'refuse' }>) => forceBinding(v.local),
    refusal: forceRefusal,
    action: 'force',
  },
  'confirming-push': {
    binding: (v: Extract<Verdict, { kind: 'refuse' }>) => pushOverBinding(v.published),
    refusal: pushRefusal,
    action: 'push-over',
  },
} as const;

/** Whether what was typed at a bound gate is its value, exactly (spaces aside; case counts). */
function gateUnlocked(state: BoundGateState): boolean {
  return typedMatch(state.typed, BOUND_GATES[state.step].binding(state.verdict).expected) === 'match';
}

/** The 8 characters after `SHA256:` of the LOCAL fingerprint: what the force gate asks for. */
export function forcePrefix(verdict: Extract<Verdict, { kind: 'refuse' }>): string {
  return BOUND_GATES['confirming-force'].binding(verdict).expected;
}

/** Whether what was typed is the LOCAL prefix, exactly (spaces aside; case counts). */
export function forceUnlocked(state: Extract<FailoverState, { step: 'confirming-force' }>): boolean {
  return gateUnlocked(state);
}

/**
 * The value the push-over gate asks for: the one `sync --push --confirm` takes (the first 8
 * after `SHA256:` of the PUBLISHED fingerprint), from the same binding, so the two never differ.
 */
export function pushPrefix(verdict: Extract<Verdict, { kind: 'refuse' }>): string {
  return BOUND_GATES['confirming-push'].binding(verdict).expected;
}

/** Whether what was typed is the PUBLISHED prefix, exactly (spaces aside; case counts). */
export function pushUnlocked(state: Extract<FailoverState, { step: 'confirming-push' }>): boolean {
  return gateUnlocked(state);
}

/** A bound gate's answer to an event: typing, Enter (act when unlocked, else say why not), Esc. */
function boundGate(state: BoundGateState, event: FailoverEvent): FailoverStep {
  // The same text again is the same state: a text field that re-reports its value must not
  // be able to drive a render loop through this reducer.
  if (event.type === 'typed')
    return stay(event.text === state.typed ? state : { ...state, typed: event.text, refusal: undefined });
  const gate = BOUND_GATES[state.step];
  if (event.type === 'confirm' && gateUnlocked(state))
    return act(state.reading, gate.action, state.step === 'confirming-force' ? state.at : undefined);
  if (event.type === 'confirm')
    return stay({
      ...state,
      refusal: gate.refusal(state.typed, state.verdict.local, state.verdict.published),
    });
  if (event.type === 'back') return stay(backTo(state));
  return stay(state);
}

/** Where a force will move ca/, as the gate shows it. */
export function forceTarget(state: Extract<FailoverState, { step: 'confirming-force' }>): string {
  return supersededDirFor(state.reading.stateDir, state.at);
}

/**
 * Whether `q` may end the walk here: not while the act is under way, so a write is never left
 * without its outcome on the screen (Ctrl-C, Ink's own, still quits).
 */
export function canQuit(state: FailoverState): boolean {
  return state.step !== 'acting';
}

export function failover(state: FailoverState, event: FailoverEvent): FailoverStep {
  switch (state.step) {
    case 'reading':
      if (event.type === 'read') return stay(deciding(event.reading));
      if (event.type === 'read-failed')
        return stay({ step: 'failed', reading: undefined, action: undefined, error: event.error });
      return stay(state);

    case 'deciding':
      switch (event.type) {
        case 'move':
          return stay({ ...state, cursor: clamp(state.cursor + event.by, state.actions.length) });
        case 'refresh':
          return reread();
        case 'select':
          return select(state, event.at);
        default:
          return stay(state);
      }

    case 'confirming': {
      if (event.type === 'typed')
        return stay(
          !state.gated || event.text === state.typed
            ? state
            : { ...state, typed: event.text, refusal: undefined },
        );
      if (event.type === 'back') return stay(backTo(state));
      if (event.type !== 'confirm') return stay(state);
      // Minting or adopting over a loss cannot be undone: Enter alone never does it.
      const refusal = state.gated ? deploymentRefusal(state.typed, state.reading.deployment) : undefined;
      if (refusal !== undefined) return stay({ ...state, refusal });
      return act(state.reading, state.action, undefined);
    }

    case 'confirming-force':
    case 'confirming-push':
      return boundGate(state, event);

    case 'acting':
      if (event.type === 'acted') {
        return {
          state: {
            step: 'done',
            before: state.reading,
            action: state.action,
            outcome: event.outcome,
            after: undefined,
            afterError: undefined,
          },
          effects: [{ type: 'reread' }],
        };
      }
      if (event.type === 'act-failed')
        return stay({ step: 'failed', reading: state.reading, action: state.action, error: event.error });
      return stay(state);

    case 'done':
      if (event.type === 'reread') return stay({ ...state, after: event.reading, afterError: undefined });
      if (event.type === 'reread-failed') return stay({ ...state, afterError: event.error });
      if (event.type === 'refresh' && state.after !== undefined)
        return { state: { ...state, after: undefined }, effects: [{ type: 'reread' }] };
      return stay(state);

    case 'failed':
      // Back (or r) from a failure re-reads and decides again: after "the store changed since
      // you looked" that is exactly the way forward, and it never repeats the act blind.
      if (event.type === 'back' || event.type === 'refresh') return reread();
      return stay(state);

    default:
      return assertNever(state);
  }
}

/**
 * A fresh read starts the cursor on the first action that can be undone ('leave' at worst):
 * Enter, Enter, Enter on a typo'd store must never walk into minting a second authority.
 */
function deciding(reading: StatusReport): FailoverState {
  const actions = offeredActions(reading);
  const start = Math.max(
    0,
    actions.findIndex((action) => !isIrreversible(action, reading.verdict)),
  );
  return { step: 'deciding', reading, actions, cursor: clamp(start, actions.length) };
}

/**
 * Back to the list (Esc, an empty answer, a gate left): the cursor lands on Leave, the one
 * choice that writes nothing — never where it was (the action just backed out of), nor on the
 * fresh read's start (Adopt or Publish, which is where the operator just said no): Enter again
 * would reopen a confirm the operator has just refused to pass.
 */
function backTo(state: { readonly reading: StatusReport }): FailoverState {
  const list = deciding(state.reading);
  if (list.step !== 'deciding') return list;
  const leave = list.actions.indexOf('leave');
  return leave < 0 ? list : { ...list, cursor: leave };
}

function select(state: Extract<FailoverState, { step: 'deciding' }>, at: Date): FailoverStep {
  const action = state.actions[state.cursor];
  const { reading, actions, cursor } = state;
  switch (action) {
    case undefined:
      return stay(state);
    case 'leave':
      // Leaving writes nothing and takes no lock: there is nothing to confirm.
      return stay({
        step: 'done',
        before: reading,
        action,
        outcome: { kind: 'left', why: "Left as it is at the operator's choice." },
        after: reading,
        afterError: undefined,
      });
    case 'force':
      if (reading.verdict.kind !== 'refuse') return stay(state);
      return stay({
        step: 'confirming-force',
        reading,
        actions,
        cursor,
        verdict: reading.verdict,
        typed: '',
        at,
        refusal: undefined,
      });
    case 'push-over':
      if (reading.verdict.kind !== 'refuse') return stay(state);
      return stay({
        step: 'confirming-push',
        reading,
        actions,
        cursor,
        verdict: reading.verdict,
        typed: '',
        refusal: undefined,
      });
    case 'adopt':
    case 'publish':
    case 'first-controller':
      return stay({
        step: 'confirming',
        reading,
        actions,
        cursor,
        action,
        typed: '',
        gated: needsDeploymentGate(action, reading.verdict),
        refusal: undefined,
      });
    default:
      return assertNever(action);
  }
}

function act(reading: StatusReport, action: Exclude<Action, 'leave'>, at: Date | undefined): FailoverStep {
  return {
    state: { step: 'acting', reading, action },
    effects: [{ type: 'act', action, seen: reading.verdict, at }],
  };
}

function clamp(index: number, length: number): number {
  if (length === 0) return 0;
  return Math.min(Math.max(index, 0), length - 1);
}

/**
 * The exit code when the walk ends here (docs/cli.md): 0 once the host is in sync or an
 * action succeeded, the error's own code after a failure, 3 when the operator leaves with
 * something still to do.
 */
export function failoverExitCode(state: FailoverState): number {
  switch (state.step) {
    case 'done':
      if (state.outcome.kind === 'left' || state.outcome.kind === 'nothing-published')
        return state.before.verdict.kind === 'in-sync' ? EXIT_OK : EXIT_CODES['action-needed'];
      return EXIT_OK;
    case 'failed':
      return state.error.exitCode;
    case 'reading':
      return EXIT_CODES['action-needed'];
    case 'deciding':
    case 'confirming':
    case 'confirming-force':
    case 'confirming-push':
    case 'acting':
      return state.reading.verdict.kind === 'in-sync' ? EXIT_OK : EXIT_CODES['action-needed'];
    default:
      return assertNever(state);
  }
}
