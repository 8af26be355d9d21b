/**
 * Holds the rotation's state, feeds events through the reducer and runs each step's effects
 * strictly in order. Used the same way by
 * the Ink view and by plain line output, so both walk the same transitions.
 */
import { isTerminal, rotation, type RotationEffect, type RotationEvent, type RotationState, type Step } from './rotation-flow.js';
import type { Dispatch } from './rotation-run-effect.js';

export type RunEffect = (effect: RotationEffect, state: RotationState, dispatch: Dispatch) => Promise<void>;

export interface RotationStore {
  readonly dispatch: Dispatch;
  state(): RotationState;
  /** Resolves once the state is terminal and no effect is still running; rejects if an effect threw. */
  finished(): Promise<RotationState>;
  /** Resolves once no effect is running or queued (whatever the state). */
  idle(): Promise<void>;
  /**
   * The operator left: from now on only journal records are written. The effect in flight
   * finishes (a half-done stage or rename is worse than a finished one), but no next phase
   * starts — an interrupted prepare can never roll on into a commit nobody is watching.
   */
  stop(): void;
}

export function rotationStore(start: Step, run: RunEffect, onState: (state: RotationState, event: RotationEvent | undefined) => void): RotationStore {
  let state = start.state;
  let running = 0;
  let failure: unknown;
  let stopped = false;
  const waiters: { resolve: (s: RotationState) => void; reject: (e: unknown) => void }[] = [];
  const idlers: (() => void)[] = [];
  const settle = () => {
    if (running > 0) return;
    for (const idle of idlers.splice(0)) idle();
    if (failure !== undefined) for (const w of waiters.splice(0)) w.reject(failure);
    else if (isTerminal(state)) for (const w of waiters.splice(0)) w.resolve(state);
  };
  // ONE QUEUE for every effect of every step: the journal record of a phase is on disk before
  // the next phase's first transport call, whichever event started it.
  let queue: Promise<void> = Promise.resolve();
  const launch = (effects: readonly RotationEffect[], at: RotationState) => {
    if (effects.length === 0) return;
    running++;
    queue = queue.then(async () => {
      try {
        for (const effect of effects) {
          if (failure !== undefined) break;
          if (stopped && effect.type !== 'journal') continue;
          await run(effect, at, dispatch);
        }
      } catch (error) {
        failure ??= error;
      } finally {
        running--;
        settle();
      }
    });
  };
  const dispatch: Dispatch = (event) => {
    if (failure !== undefined) return;
    const step = rotation(state, event);
    if (step.state !== state) {
      state = step.state;
      onState(state, event);
    }
    launch(step.effects, step.state);
    settle();
  };
  onState(state, undefined);
  launch(start.effects, start.state);
  return {
    dispatch,
    state: () => state,
    stop: () => {
      stopped = true;
    },
    idle: () =>
      new Promise<void>((resolve) => {
        idlers.push(resolve);
        settle();
      }),
    finished: () =>
      new Promise((resolve, reject) => {
        waiters.push({ resolve, reject });
        settle();
      }),
  };
}
