import { drillFlow, type DrillState } from '../../src/app/drill/drill-flow.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';

/**
 * From `ready`, every task of every step opened and passed: the drill's summary at the end.
 * `checksMs` is how long each task's checks take (the summary shows the total); each wrong turn
 * in `wrongTurns` is made once in every task.
 */
export function passEveryTask(
  ready: DrillState,
  options: { checksMs: number; wrongTurns?: readonly string[] },
): DrillState {
  let state = ready;
  let at = 0;
  for (const step of DRILL_STEPS) {
    state = drillFlow(state, { type: 'enter', at: (at += 1000) }).state;
    for (const task of step.tasks) {
      state = drillFlow(state, { type: 'opened' }).state;
      for (const what of options.wrongTurns ?? [])
        state = drillFlow(state, { type: 'wrong-turn', what }).state;
      if (task.where.kind === 'action') state = drillFlow(state, { type: 'enter', at }).state;
      state = drillFlow(state, { type: 'task-finished' }).state;
      state = drillFlow(state, {
        type: 'checks-done',
        results: [{ label: 'ok', ok: true }],
        at: (at += options.checksMs),
      }).state;
      // A task before the step's last shows its checks; Enter opens the next one.
      if (state.phase === 'task-passed') state = drillFlow(state, { type: 'enter', at }).state;
    }
    state = drillFlow(state, { type: 'enter', at }).state;
  }
  return state;
}
