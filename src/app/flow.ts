/**
 * The one flow runtime: a reducer (state + event → state + effects), an effect runner, and an
 * external store around them. Status, failover, rotation and the drill all run through it, on
 * a screen (components/hooks/use-flow.ts subscribes to it) or as plain lines, so a flow walks
 * the same transitions whoever drives it.
 *
 * Framework-free on purpose: no React or Ink here (the import-graph test enforces it).
 */

/** What a reducer returns: the next state and the effects it asks for, in order. */
export interface Step<S, F> {
  readonly state: S;
  readonly effects: readonly F[];
}

export type Reduce<S, E, F> = (state: S, event: E) => Step<S, F>;

/** What an effect sees while it runs. */
export interface EffectContext<S, E> {
  /** The flow's state when the effect starts (later for a queued effect than when it was asked for). */
  readonly state: S;
  /** Progress events while the effect runs (a holder answered, a file staged). */
  readonly dispatch: (event: E) => void;
}

/**
 * THE ONE RUN-EFFECT CONTRACT. `run` resolves with the event the effect ends in (or undefined
 * when it ends in none), and `failed` names the event a thrown error becomes. The runtime calls
 * `failed` for any rejection, so a run-effect never rejects: a rejection would leave the flow
 * stuck in "reading…" or "preparing…" with the reason lost, or staged files nobody knows about.
 */
export interface EffectRunner<S, E, F> {
  run(effect: F, context: EffectContext<S, E>): Promise<E | undefined>;
  failed(effect: F, error: unknown): E;
}

/**
 * Runs one effect under the contract: always resolves, a thrown error (sync or async) becomes
 * `failed`'s event. The runtime and the effect functions tested alone both go through here.
 */
export async function settle<S, E, F>(
  runner: EffectRunner<S, E, F>,
  effect: F,
  context: EffectContext<S, E>,
): Promise<E | undefined> {
  try {
    return await runner.run(effect, context);
  } catch (error) {
    return runner.failed(effect, error);
  }
}

/**
 * One effect of a runner that reads no state and reports no progress, run alone (the plain
 * dialogues and tests): always resolves, like every effect the runtime runs.
 */
export function settleAlone<E, F>(runner: EffectRunner<unknown, E, F>, effect: F): Promise<E | undefined> {
  return settle(runner, effect, { state: undefined, dispatch: () => {} });
}

export interface FlowOptions<S, F> {
  /**
   * ONE QUEUE for every effect of every step, each started after the one before has ended
   * (the rotation: a phase's journal record is on disk before the next phase's first call).
   * Without it each effect starts as soon as it is asked for.
   */
  readonly sequential?: boolean;
  /**
   * With `sequential`, the effects that start the moment they are asked for, beside the queue:
   * work whose every step the reducer already ordered by events (the rotation's consumer
   * renames, which must not wait behind a record's fsync). They report back only as events.
   */
  readonly concurrent?: (effect: F) => boolean;
  /** The states a flow ends in: `finished()` resolves once one is reached and nothing runs. */
  readonly isFinished?: (state: S) => boolean;
  /** After `stop()`, the effects that still run (records, taking staged files back); the rest are skipped. */
  readonly runsAfterStop?: (effect: F) => boolean;
  /** Start the initial effects now (default) or on `start()` (a view starts them once mounted). */
  readonly deferStart?: boolean;
}

export type FlowListener<S, E> = (state: S, event: E | undefined) => void;

export interface Flow<S, E> {
  readonly getState: () => S;
  /** Called on every change of state, with the event that caused it; returns the unsubscribe. */
  subscribe(listener: FlowListener<S, E>): () => void;
  readonly dispatch: (event: E) => void;
  /** Runs the initial effects, once (only needed with `deferStart`). */
  start(): void;
  /**
   * The operator left: the effect in flight finishes (a half-done stage or rename is worse than
   * a finished one) and only effects `runsAfterStop` allows start after it — an interrupted
   * prepare can never roll on into a commit nobody is watching.
   */
  stop(): void;
  /**
   * The screen is gone: every later event, a late S3 answer included, is dropped and no
   * listener is called again. The state stays readable.
   */
  close(): void;
  /** Resolves once no effect is running or queued (whatever the state). */
  idle(): Promise<void>;
  /** Resolves once the state is one `isFinished` accepts and no effect is running or queued. */
  finished(): Promise<S>;
}

function rethrow(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

export function createFlow<S, E, F>(
  reduce: Reduce<S, E, F>,
  initial: Step<S, F>,
  runner: EffectRunner<S, E, F>,
  options: FlowOptions<S, F> = {},
): Flow<S, E> {
  let state = initial.state;
  let running = 0;
  let stopped = false;
  let closed = false;
  let started = false;
  const listeners = new Set<FlowListener<S, E>>();
  const idlers: (() => void)[] = [];
  const finishers: ((s: S) => void)[] = [];
  let queue: Promise<void> = Promise.resolve();

  const settleWaiters = () => {
    if (running > 0) return;
    for (const idle of idlers.splice(0)) idle();
    if (options.isFinished?.(state)) for (const finish of finishers.splice(0)) finish(state);
  };

  const runOne = async (effect: F) => {
    if (closed || (stopped && !options.runsAfterStop?.(effect))) return;
    const event = await settle(runner, effect, { state, dispatch });
    if (event !== undefined) dispatch(event);
  };

  const launch = (effects: readonly F[]) => {
    for (const effect of effects) {
      running++;
      const done = () => {
        running--;
        settleWaiters();
      };
      // A listener that throws is a bug: it surfaces as an uncaught error instead of silently
      // stalling the queue behind it.
      const queued = options.sequential === true && options.concurrent?.(effect) !== true;
      const ran = (queued ? queue.then(() => runOne(effect)) : runOne(effect)).catch(rethrow).finally(done);
      if (queued) queue = ran;
    }
  };

  const dispatch = (event: E) => {
    if (closed) return;
    const step = reduce(state, event);
    if (step.state !== state) {
      state = step.state;
      for (const listener of [...listeners]) listener(state, event);
    }
    launch(step.effects);
    settleWaiters();
  };

  const start = () => {
    if (started || closed) return;
    started = true;
    launch(initial.effects);
  };
  if (!options.deferStart) start();

  return {
    getState: () => state,
    subscribe: (listener) => {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    dispatch,
    start,
    stop: () => {
      stopped = true;
    },
    close: () => {
      closed = true;
      listeners.clear();
    },
    idle: () =>
      new Promise<void>((resolve) => {
        idlers.push(resolve);
        settleWaiters();
      }),
    finished: () =>
      new Promise<S>((resolve) => {
        finishers.push(resolve);
        settleWaiters();
      }),
  };
}
