/**
 * The interactive drill as a pure state machine: (state, event) → { state, effects }.
 *
 * The drill never lets the operator move on from a task until the checks (which read the real
 * sandbox) pass: a rehearsal that can be clicked through teaches nothing. Keys that do not
 * apply change nothing, and Esc never quits — the operator leaves only with q (or Ctrl-C).
 */
import { EXIT_CODES, EXIT_OK } from '../../errors.js';
import { DRILL_STEPS, type StepNumber, type StepSpec, type TaskSpec } from './scenario.js';
import type { CheckResult } from './check.js';

export type DrillPhase =
  /** The sandbox is being set up; progress lines are shown. */
  | 'starting'
  /** The sandbox could not be set up: the three-part message; q quits. */
  | 'setup-failed'
  /** The step's explanation; Enter begins its first task. */
  | 'intro'
  /** The drill notes how the sandbox stands before the task (what the checks compare with). */
  | 'opening'
  /** The task is open: a real view is mounted, or an action waits for Enter. */
  | 'task'
  /** An action task is being performed. */
  | 'running'
  /** The task's checks are reading the sandbox. */
  | 'checking'
  /** A check failed: what was found; Enter opens the task again. */
  | 'check-failed'
  /**
   * A task that is not the step's last passed its checks: they are shown on a screen of their
   * own (as `--plain` prints them); Enter opens the next task. Going straight on showed only the
   * step's last task's checks: the web1-app window the step is about was never seen.
   */
  | 'task-passed'
  /** Every task of the step passed its checks; Enter goes to the next step. */
  | 'step-passed'
  /** Time per step and the wrong turns. */
  | 'summary';

export interface WrongTurn {
  readonly step: StepNumber;
  readonly what: string;
}

export interface StepTiming {
  readonly startedAt: number | undefined;
  readonly finishedAt: number | undefined;
}

export interface DrillState {
  readonly phase: DrillPhase;
  /** The first step practised (`--step N`); earlier ones were prepared by the drill. */
  readonly first: StepNumber;
  /** The last step practised: 5 for the whole drill, N for `--step N` (that one step). */
  readonly last: StepNumber;
  /** Index into DRILL_STEPS. */
  readonly current: number;
  /** Index into the current step's tasks. */
  readonly task: number;
  readonly help: boolean;
  /**
   * q was pressed once: the screen asks whether to leave (the sandbox goes; `--step N` comes
   * back). A second q leaves; Esc or Enter stays. q also closes a view, so a second q from
   * habit ended the drill without a word.
   */
  readonly leaving: boolean;
  /** Start-up progress ("starting S3…"). */
  readonly progress: readonly string[];
  /** The last checks' results, shown after a task. */
  readonly checks: readonly CheckResult[];
  /** `baton mesh status` after a rotation task, as its plain lines (steps 4 and 5 show it with the checks). */
  readonly meshStatus: readonly string[];
  /** A failed action or setup, as the three-part message's lines. */
  readonly error: readonly string[] | undefined;
  readonly timings: readonly StepTiming[];
  readonly wrongTurns: readonly WrongTurn[];
}

export type DrillEvent =
  | { readonly type: 'progress'; readonly text: string }
  | { readonly type: 'ready' }
  | { readonly type: 'setup-failed'; readonly lines: readonly string[] }
  | { readonly type: 'enter'; readonly at: number }
  | { readonly type: 'help' }
  /** The sandbox was noted; the task can be performed. */
  | { readonly type: 'opened' }
  | { readonly type: 'escape' }
  | { readonly type: 'quit' }
  /** Ctrl-C: leaves at once (an interrupt is not asked about). */
  | { readonly type: 'interrupt' }
  /** The task's view closed, or its action finished. */
  | { readonly type: 'task-finished' }
  /** The task's action failed (the sandbox is unchanged or the checks will say what is). */
  | { readonly type: 'task-failed'; readonly lines: readonly string[] }
  | {
      readonly type: 'checks-done';
      readonly results: readonly CheckResult[];
      readonly at: number;
      readonly meshStatus?: readonly string[];
    }
  /** Something the operator did that a real night would punish (Esc back-out, wrong prefix). */
  | { readonly type: 'wrong-turn'; readonly what: string };

export type DrillEffect =
  /** Note how the sandbox stands before a task (src/commands/drill/notebook.ts). */
  | { readonly type: 'open'; readonly step: StepNumber; readonly task: number }
  /** Perform an action task (src/commands/drill/perform.ts). */
  | { readonly type: 'perform'; readonly step: StepNumber; readonly task: number }
  /** Run the checks of a task (src/commands/drill/checks.ts). */
  | { readonly type: 'check'; readonly step: StepNumber; readonly task: number }
  /** Leave the drill; the sandbox is torn down. */
  | { readonly type: 'quit' };

export interface DrillStep {
  readonly state: DrillState;
  readonly effects: readonly DrillEffect[];
}

export function initialDrillState(first: StepNumber = 1, last: StepNumber = 5): DrillState {
  return {
    phase: 'starting',
    first,
    last,
    current: DRILL_STEPS.findIndex((step) => step.number === first),
    task: 0,
    help: false,
    leaving: false,
    progress: [],
    checks: [],
    meshStatus: [],
    error: undefined,
    timings: DRILL_STEPS.map(() => ({ startedAt: undefined, finishedAt: undefined })),
    wrongTurns: [],
  };
}

export function currentStep(state: DrillState): StepSpec {
  return DRILL_STEPS[state.current]!;
}

export function currentTask(state: DrillState): TaskSpec {
  return currentStep(state).tasks[state.task]!;
}

/** The drill is reading or writing the sandbox: nothing interrupts it half-way. */
export function busy(state: DrillState): boolean {
  return state.phase === 'opening' || state.phase === 'running' || state.phase === 'checking';
}

/** True when a real view owns the keyboard (the drill's own keys are off). */
export function viewIsOpen(state: DrillState): boolean {
  return state.phase === 'task' && currentTask(state).where.kind !== 'action';
}

/**
 * A turn the open view reported, in the summary's words, or undefined when it is no wrong
 * turn. Only a back-out of a failover or rotation confirm counts (status is read-only, and
 * Esc that closes a help box is reported by no view), and a refused entry at the force gate
 * of fewer than 4 characters is not yet an attempt, so a stray Enter is not counted.
 */
export function turnWords(
  state: DrillState,
  turn: { readonly kind: 'backed-out' } | { readonly kind: 'refused-entry'; readonly typed: string },
): string | undefined {
  const where = currentTask(state).where;
  if (turn.kind === 'refused-entry') {
    return turn.typed.trim().length < 4
      ? undefined
      : `typed a wrong prefix "${turn.typed.trim()}" at the force gate`;
  }
  if (where.kind === 'failover') return `Esc backed out of a confirm in the failover on ${where.controller}`;
  if (where.kind === 'rotation') return "Esc backed out of the rotation's typed confirm";
  return undefined;
}

const to = (state: DrillState, ...effects: DrillEffect[]): DrillStep => ({ state, effects });

export function drillFlow(state: DrillState, event: DrillEvent): DrillStep {
  // Keys that belong to the drill's own screens; a view that is open handles its own keys.
  if (event.type === 'quit' || event.type === 'interrupt') {
    if (busy(state) || viewIsOpen(state)) return to(state);
    // Asked once, where leaving loses work: not when the sandbox failed or the drill is over.
    const ask =
      event.type === 'quit' && !state.leaving && state.phase !== 'setup-failed' && state.phase !== 'summary';
    return ask ? to({ ...state, leaving: true, help: false }) : to(state, { type: 'quit' });
  }
  // Asked to leave: Esc or Enter (or any other key) stays, and does nothing else.
  if (state.leaving && (event.type === 'enter' || event.type === 'escape' || event.type === 'help'))
    return to({ ...state, leaving: false });
  if (event.type === 'help')
    return viewIsOpen(state) || state.phase === 'starting' ? to(state) : to({ ...state, help: !state.help });
  if (event.type === 'escape') return state.help ? to({ ...state, help: false }) : to(state); // ESC NEVER QUITS.
  if (event.type === 'wrong-turn')
    return state.phase === 'task' ? to(withWrongTurn(state, event.what)) : to(state);

  switch (state.phase) {
    case 'starting':
      if (event.type === 'progress') return to({ ...state, progress: [...state.progress, event.text] });
      if (event.type === 'ready') return to({ ...state, phase: 'intro' });
      if (event.type === 'setup-failed') return to({ ...state, phase: 'setup-failed', error: event.lines });
      return to(state);
    case 'setup-failed':
      return to(state);
    case 'intro':
      if (event.type === 'enter')
        return toOpening(startTimer({ ...state, task: 0, checks: [], meshStatus: [] }, event.at));
      return to(state);
    case 'opening':
      if (event.type === 'opened') return to({ ...state, phase: 'task' });
      if (event.type === 'task-failed') return toFailed(state, event.lines);
      return to(state);
    case 'task':
      if (event.type === 'enter' && currentTask(state).where.kind === 'action') {
        return to(
          { ...state, phase: 'running', help: false },
          { type: 'perform', step: currentStep(state).number, task: state.task },
        );
      }
      if (event.type === 'task-finished') return toChecking(state);
      // The view could not be opened (a read failed before it drew): say why, offer it again.
      if (event.type === 'task-failed') return toFailed(state, event.lines);
      return to(state);
    case 'running':
      if (event.type === 'task-finished') return toChecking(state);
      if (event.type === 'task-failed') return toFailed(state, event.lines);
      return to(state);
    case 'checking':
      // The checks could not read the sandbox at all: said, and offered again (not a wrong turn).
      if (event.type === 'task-failed') return toFailed(state, event.lines);
      if (event.type !== 'checks-done') return to(state);
      if (event.results.every((result) => result.ok)) {
        const step = currentStep(state);
        if (state.task + 1 < step.tasks.length)
          return to({
            ...state,
            phase: 'task-passed',
            checks: event.results,
            meshStatus: event.meshStatus ?? [],
          });
        return to(
          stopTimer(
            { ...state, phase: 'step-passed', checks: event.results, meshStatus: event.meshStatus ?? [] },
            event.at,
          ),
        );
      }
      return to(
        withWrongTurn(
          { ...state, phase: 'check-failed', checks: event.results, meshStatus: event.meshStatus ?? [] },
          `"${currentTask(state).label}" did not pass: ${event.results.find((result) => !result.ok)!.label}`,
        ),
      );
    case 'check-failed':
      if (event.type === 'enter') return toOpening(state);
      return to(state);
    case 'task-passed':
      if (event.type === 'enter') return toOpening({ ...state, task: state.task + 1 });
      return to(state);
    case 'step-passed':
      if (event.type !== 'enter') return to(state);
      if (currentStep(state).number < state.last) {
        return to({
          ...state,
          phase: 'intro',
          current: state.current + 1,
          task: 0,
          help: false,
          checks: [],
          meshStatus: [],
        });
      }
      return to({ ...state, phase: 'summary', help: false });
    case 'summary':
      if (event.type === 'enter') return to(state, { type: 'quit' });
      return to(state);
    default: {
      const never: never = state.phase;
      return never;
    }
  }
}

function toOpening(state: DrillState): DrillStep {
  return to(
    { ...state, phase: 'opening', help: false, error: undefined },
    { type: 'open', step: currentStep(state).number, task: state.task },
  );
}

/** The machinery failed (an action, a read): shown and offered again, but not the operator's wrong turn. */
function toFailed(state: DrillState, lines: readonly string[]): DrillStep {
  return to({ ...state, phase: 'check-failed', checks: [], error: lines });
}

function toChecking(state: DrillState): DrillStep {
  return to(
    { ...state, phase: 'checking', help: false, error: undefined },
    { type: 'check', step: currentStep(state).number, task: state.task },
  );
}

function withWrongTurn(state: DrillState, what: string): DrillState {
  return { ...state, wrongTurns: [...state.wrongTurns, { step: currentStep(state).number, what }] };
}

function startTimer(state: DrillState, at: number): DrillState {
  return {
    ...state,
    timings: state.timings.map((t, i) =>
      i === state.current && t.startedAt === undefined ? { ...t, startedAt: at } : t,
    ),
  };
}

function stopTimer(state: DrillState, at: number): DrillState {
  return {
    ...state,
    timings: state.timings.map((t, i) => (i === state.current ? { ...t, finishedAt: at } : t)),
  };
}

/** Milliseconds a step took, or undefined when it was not practised (or not finished). */
export function stepDuration(state: DrillState, index: number): number | undefined {
  const t = state.timings[index];
  return t?.startedAt !== undefined && t.finishedAt !== undefined ? t.finishedAt - t.startedAt : undefined;
}

/** How a step stands, for the rail. */
export type RailMark = 'prepared' | 'passed' | 'current' | 'pending';

export function railMarks(state: DrillState): readonly RailMark[] {
  const firstIndex = DRILL_STEPS.findIndex((step) => step.number === state.first);
  return DRILL_STEPS.map((_, i) => {
    if (i < firstIndex) return 'prepared';
    if (
      i < state.current ||
      (i === state.current && (state.phase === 'step-passed' || state.phase === 'summary'))
    )
      return 'passed';
    if (i === state.current) return 'current';
    return 'pending';
  });
}

/** How the interactive drill ended, by name: the whole walk, a sandbox that never came up, or left part-way. */
export type DrillOutcome = 'walked' | 'setup-failed' | 'left';

/** 0 after the whole walk, 1 when the sandbox never came up, 3 when left part-way. */
export const DRILL_EXIT: Readonly<Record<DrillOutcome, number>> = {
  walked: EXIT_OK,
  'setup-failed': EXIT_CODES.failed,
  left: EXIT_CODES.aborted,
};

export function drillOutcome(state: DrillState): DrillOutcome {
  return state.phase === 'summary' ? 'walked' : state.phase === 'setup-failed' ? 'setup-failed' : 'left';
}

export function drillExitCode(state: DrillState): number {
  return DRILL_EXIT[drillOutcome(state)];
}
