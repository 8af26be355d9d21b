import { describe, expect, it } from 'vitest';
import {
  drillFlow,
  initialDrillState,
  railMarks,
  stepDuration,
  turnWords,
  viewIsOpen,
  type DrillEvent,
  type DrillState,
} from '../../src/app/drill/drill-flow.js';
import { DRILL_STEPS, listSteps } from '../../src/app/drill/scenario.js';
import type { CheckResult } from '../../src/app/drill/check.js';

const ok: CheckResult = { label: 'ctl-b holds the published authority', ok: true };
const bad: CheckResult = {
  label: 'ctl-b holds the published authority',
  ok: false,
  detail: 'ctl-b is still empty',
};

/** Applies events in order and returns the last state with every effect emitted. */
function run(state: DrillState, events: readonly DrillEvent[]) {
  const effects = [];
  for (const event of events) {
    const next = drillFlow(state, event);
    state = next.state;
    effects.push(...next.effects);
  }
  return { state, effects };
}

const ready = (first: 1 | 2 | 3 | 4 | 5 = 1) => run(initialDrillState(first), [{ type: 'ready' }]).state;

describe('the drill flow', () => {
  it("shows start-up progress and waits in the first step's explanation once the sandbox is ready", () => {
    const { state, effects } = run(initialDrillState(), [
      { type: 'progress', text: 'starting S3…' },
      { type: 'progress', text: 'starting PostgreSQL…' },
      { type: 'ready' },
    ]);
    expect(state.progress).toEqual(['starting S3…', 'starting PostgreSQL…']);
    expect(state.phase).toBe('intro');
    expect(state.current).toBe(0);
    expect(effects).toEqual([]);
  });

  it('a failed set-up shows the error and only q leaves, with the quit effect that tears the sandbox down', () => {
    const { state } = run(initialDrillState(), [
      { type: 'setup-failed', lines: ['PostgreSQL could not start.', 'Next: install it'] },
    ]);
    expect(state.phase).toBe('setup-failed');
    expect(state.error).toEqual(['PostgreSQL could not start.', 'Next: install it']);
    expect(drillFlow(state, { type: 'enter', at: 1 })).toEqual({ state, effects: [] });
    expect(drillFlow(state, { type: 'escape' })).toEqual({ state, effects: [] });
    expect(drillFlow(state, { type: 'quit' }).effects).toEqual([{ type: 'quit' }]);
  });

  it('Enter notes the sandbox first, then opens the first task as a real view, which owns the keyboard until it closes', () => {
    const opening = drillFlow(ready(), { type: 'enter', at: 1000 });
    expect(opening.state.phase).toBe('opening');
    expect(opening.effects).toEqual([{ type: 'open', step: 1, task: 0 }]);
    expect(viewIsOpen(opening.state)).toBe(false);
    const { state, effects } = run(opening.state, [{ type: 'opened' }]);
    expect(state.phase).toBe('task');
    expect(viewIsOpen(state)).toBe(true);
    expect(effects).toEqual([]);
    // While the view is open, q and ? belong to the view, not to the drill.
    expect(drillFlow(state, { type: 'quit' })).toEqual({ state, effects: [] });
    expect(drillFlow(state, { type: 'help' })).toEqual({ state, effects: [] });
  });

  it('a view that closes has its task checked; passing checks are shown on a screen of their own, and Enter opens the next task', () => {
    const { state, effects } = run(ready(), [
      { type: 'enter', at: 1000 },
      { type: 'opened' },
      { type: 'task-finished' },
    ]);
    expect(state.phase).toBe('checking');
    expect(effects).toEqual([
      { type: 'open', step: 1, task: 0 },
      { type: 'check', step: 1, task: 0 },
    ]);
    const passed = drillFlow(state, { type: 'checks-done', results: [ok], at: 2000 });
    expect(passed.state.phase).toBe('task-passed');
    expect(passed.state.task).toBe(0);
    expect(passed.state.checks).toEqual([ok]);
    expect(passed.effects).toEqual([]);
    // Keys that do not apply change nothing; Esc never leaves the screen.
    expect(drillFlow(passed.state, { type: 'escape' })).toEqual({ state: passed.state, effects: [] });
    const next = drillFlow(passed.state, { type: 'enter', at: 2500 });
    expect(next.state.phase).toBe('opening');
    expect(next.state.task).toBe(1);
    expect(next.effects).toEqual([{ type: 'open', step: 1, task: 1 }]);
  });

  it('checks that could not read the sandbox at all are shown and offered again, never left "checking", and are no wrong turn', () => {
    const { state } = run(ready(), [
      { type: 'enter', at: 1000 },
      { type: 'opened' },
      { type: 'task-finished' },
    ]);
    expect(state.phase).toBe('checking');
    const failed = drillFlow(state, {
      type: 'task-failed',
      lines: ['Checking the sandbox failed (ECONNREFUSED)'],
    });
    expect(failed.state.phase).toBe('check-failed');
    expect(failed.state.error).toEqual(['Checking the sandbox failed (ECONNREFUSED)']);
    expect(failed.state.wrongTurns).toEqual([]);
    expect(drillFlow(failed.state, { type: 'enter', at: 2000 }).effects).toEqual([
      { type: 'open', step: 1, task: 0 },
    ]);
  });

  it('a failed check is shown, recorded as a wrong turn, and Enter opens the same task again', () => {
    const { state } = run(ready(2), [
      { type: 'enter', at: 0 },
      { type: 'opened' },
      { type: 'task-finished' },
      { type: 'checks-done', results: [ok, bad], at: 5 },
    ]);
    expect(state.phase).toBe('check-failed');
    expect(state.checks).toEqual([ok, bad]);
    expect(state.wrongTurns).toEqual([
      { step: 2, what: expect.stringContaining('ctl-b holds the published authority') },
    ]);
    const again = drillFlow(state, { type: 'enter', at: 6 });
    expect(again.state.phase).toBe('opening');
    expect(again.effects).toEqual([{ type: 'open', step: 2, task: 0 }]);
    expect(again.state.task).toBe(0);
    expect(again.state.current).toBe(state.current);
  });

  it('an action task waits for Enter, performs the action, then checks it', () => {
    let state = run(ready(3), [{ type: 'enter', at: 0 }, { type: 'opened' }]).state;
    expect(state.phase).toBe('task');
    expect(viewIsOpen(state)).toBe(false);
    const performed = drillFlow(state, { type: 'enter', at: 1 });
    expect(performed.state.phase).toBe('running');
    expect(performed.effects).toEqual([{ type: 'perform', step: 3, task: 0 }]);
    state = performed.state;
    // Nothing interrupts an action half-way: q, Enter and Esc change nothing while it runs.
    for (const event of [{ type: 'quit' }, { type: 'enter', at: 2 }, { type: 'escape' }] as const) {
      expect(drillFlow(state, event)).toEqual({ state, effects: [] });
    }
    expect(drillFlow(state, { type: 'task-finished' }).effects).toEqual([
      { type: 'check', step: 3, task: 0 },
    ]);
  });

  it("a failed action is shown with its message; it is the machinery's failure, not a wrong turn", () => {
    const state = run(ready(3), [
      { type: 'enter', at: 0 },
      { type: 'opened' },
      { type: 'enter', at: 1 },
      { type: 'task-failed', lines: ['lock busy', 'Where: ca.lock'] },
    ]).state;
    expect(state.phase).toBe('check-failed');
    expect(state.error).toEqual(['lock busy', 'Where: ca.lock']);
    expect(state.wrongTurns).toEqual([]);
  });

  it('a sandbox that cannot be noted before a task is shown as a failure, and Enter tries the task again', () => {
    const { state } = run(ready(2), [
      { type: 'enter', at: 0 },
      { type: 'task-failed', lines: ['Noting the sandbox failed (EACCES)'] },
    ]);
    expect(state.phase).toBe('check-failed');
    expect(state.error).toEqual(['Noting the sandbox failed (EACCES)']);
    expect(drillFlow(state, { type: 'enter', at: 1 }).effects).toEqual([{ type: 'open', step: 2, task: 0 }]);
  });

  it('a view that cannot be opened is shown as a failure of its task, which Enter opens again', () => {
    const { state } = run(ready(2), [
      { type: 'enter', at: 0 },
      { type: 'opened' },
      { type: 'task-failed', lines: ['The view could not be opened (EIO)'] },
    ]);
    expect(state.phase).toBe('check-failed');
    expect(state.error).toEqual(['The view could not be opened (EIO)']);
    expect(state.wrongTurns).toEqual([]);
    expect(drillFlow(state, { type: 'enter', at: 1 }).state.phase).toBe('opening');
  });

  it('Esc never quits: it closes help, and otherwise changes nothing in every phase', () => {
    const phases: DrillState[] = [
      initialDrillState(),
      ready(),
      run(ready(), [{ type: 'enter', at: 0 }]).state,
      run(ready(), [{ type: 'enter', at: 0 }, { type: 'opened' }]).state,
      run(ready(3), [{ type: 'enter', at: 0 }, { type: 'opened' }, { type: 'enter', at: 0 }]).state,
    ];
    for (const state of phases) {
      const next = drillFlow(state, { type: 'escape' });
      expect(next.effects).toEqual([]);
      expect(next.state).toEqual(state);
    }
    const withHelp = drillFlow(ready(), { type: 'help' }).state;
    expect(withHelp.help).toBe(true);
    expect(drillFlow(withHelp, { type: 'escape' }).state.help).toBe(false);
  });

  it("q on the drill's own screens asks once; a second q quits, and the quit is an effect (so the sandbox is torn down)", () => {
    const asked = drillFlow(ready(), { type: 'quit' });
    expect(asked.effects).toEqual([]);
    expect(asked.state.leaving).toBe(true);
    expect(drillFlow(asked.state, { type: 'quit' }).effects).toEqual([{ type: 'quit' }]);
  });

  it('asked to leave, Esc or Enter stays and does nothing else (Enter does not begin the step)', () => {
    const asked = drillFlow(ready(), { type: 'quit' }).state;
    for (const event of [{ type: 'escape' }, { type: 'enter', at: 1 }, { type: 'help' }] as const) {
      const stayed = drillFlow(asked, event);
      expect(stayed).toEqual({ state: { ...asked, leaving: false }, effects: [] });
      expect(stayed.state.phase).toBe('intro');
    }
  });

  it('Ctrl-C leaves at once, without asking; the summary and a failed set-up leave on the first q', () => {
    expect(drillFlow(ready(), { type: 'interrupt' }).effects).toEqual([{ type: 'quit' }]);
    expect(drillFlow({ ...ready(), phase: 'summary' }, { type: 'quit' }).effects).toEqual([{ type: 'quit' }]);
  });

  it('walks all five steps to the summary with time per step, only when every check passed', () => {
    let state = ready();
    let clock = 0;
    for (const step of DRILL_STEPS) {
      state = drillFlow(state, { type: 'enter', at: (clock += 1000) }).state;
      for (const task of step.tasks) {
        state = drillFlow(state, { type: 'opened' }).state;
        if (task.where.kind === 'action') state = drillFlow(state, { type: 'enter', at: clock }).state;
        state = drillFlow(state, { type: 'task-finished' }).state;
        state = drillFlow(state, { type: 'checks-done', results: [ok], at: (clock += 500) }).state;
        if (task !== step.tasks[step.tasks.length - 1]) {
          expect(state.phase).toBe('task-passed');
          state = drillFlow(state, { type: 'enter', at: clock }).state;
        }
      }
      expect(state.phase).toBe('step-passed');
      state = drillFlow(state, { type: 'enter', at: clock }).state;
    }
    expect(state.phase).toBe('summary');
    expect(DRILL_STEPS.map((_, i) => stepDuration(state, i))).toEqual(
      DRILL_STEPS.map((step) => step.tasks.length * 500),
    );
    expect(railMarks(state)).toEqual(['passed', 'passed', 'passed', 'passed', 'passed']);
    expect(state.wrongTurns).toEqual([]);
    expect(drillFlow(state, { type: 'enter', at: clock }).effects).toEqual([{ type: 'quit' }]);
  });

  it('wrong turns reported by a view are recorded against the step only while its task is open', () => {
    const open = run(ready(), [{ type: 'enter', at: 0 }, { type: 'opened' }]).state;
    expect(
      drillFlow(open, { type: 'wrong-turn', what: 'Esc backed out of the failover' }).state.wrongTurns,
    ).toEqual([{ step: 1, what: 'Esc backed out of the failover' }]);
    const intro = ready();
    expect(drillFlow(intro, { type: 'wrong-turn', what: 'x' }).state).toEqual(intro);
  });

  it('a back-out the view reports counts in a failover or a rotation, never in the read-only status', () => {
    const openAt = (first: 1 | 2 | 4) =>
      run(ready(first), [{ type: 'enter', at: 0 }, { type: 'opened' }]).state;
    expect(turnWords(openAt(1), { kind: 'backed-out' })).toBeUndefined();
    expect(turnWords(openAt(2), { kind: 'backed-out' })).toBe(
      'Esc backed out of a confirm in the failover on ctl-b',
    );
    expect(turnWords(openAt(4), { kind: 'backed-out' })).toBe(
      "Esc backed out of the rotation's typed confirm",
    );
  });

  it('a refused entry at the force gate is a wrong turn; a stray Enter on under 4 characters is not', () => {
    const open = run(ready(2), [{ type: 'enter', at: 0 }, { type: 'opened' }]).state;
    expect(turnWords(open, { kind: 'refused-entry', typed: 'zzzzzzzz' })).toBe(
      'typed a wrong prefix "zzzzzzzz" at the force gate',
    );
    expect(turnWords(open, { kind: 'refused-entry', typed: 'zzz' })).toBeUndefined();
  });

  it('--step N marks the earlier steps as prepared and starts at N', () => {
    const state = ready(4);
    expect(state.current).toBe(3);
    expect(railMarks(state)).toEqual(['prepared', 'prepared', 'prepared', 'current', 'pending']);
    expect(stepDuration(state, 0)).toBeUndefined();
  });

  it('--step N practises that one step: after it passes, Enter shows the summary', () => {
    let state = run(initialDrillState(2, 2), [
      { type: 'ready' },
      { type: 'enter', at: 0 },
      { type: 'opened' },
      { type: 'task-finished' },
    ]).state;
    state = drillFlow(state, { type: 'checks-done', results: [ok], at: 9000 }).state;
    expect(state.phase).toBe('step-passed');
    state = drillFlow(state, { type: 'enter', at: 9000 }).state;
    expect(state.phase).toBe('summary');
    expect(stepDuration(state, 1)).toBe(9000);
    expect(railMarks(state)).toEqual(['prepared', 'passed', 'pending', 'pending', 'pending']);
  });

  it('--list prints one line per step, numbered 1 to 5', () => {
    const lines = listSteps();
    expect(lines).toHaveLength(5);
    lines.forEach((line, i) => expect(line.startsWith(`${i + 1}. `)).toBe(true));
    expect(lines.every((line) => line.length <= 80)).toBe(true);
  });

  it('every step explains itself in two or three sentences', () => {
    for (const step of DRILL_STEPS) {
      const sentences = step.explanation.split(/(?<=[.!?:])\s+(?=[A-Z])/).length;
      expect(sentences, `step ${step.number}`).toBeGreaterThanOrEqual(2);
      expect(sentences, `step ${step.number}`).toBeLessThanOrEqual(3);
    }
  });
});
