import { useCallback, useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { createFlow, type EffectRunner, type Flow, type Reduce, type Step } from '../../src/app/flow.js';

/** Events that may share one frame, and how long a frame waits for more of them. */
export interface Coalesce<E> {
  readonly events: (event: E) => boolean;
  readonly frameMs: number;
}

/**
 * A flow's state, read through `useSyncExternalStore`: the one way a view follows a flow.
 * With `coalesce`, a burst of the events it names (a thousand holders answering) draws one
 * frame per `frameMs` instead of one per event, so output over SSH stays small; any other
 * event draws at once.
 */
export function useFlowState<S, E>(flow: Flow<S, E>, coalesce?: Coalesce<E>): S {
  const rule = useRef(coalesce);
  rule.current = coalesce;
  // What the screen shows moves only when a frame is drawn: a redraw for another reason (the
  // spinner) must not sneak the rest of a burst in between frames.
  const shown = useRef(flow.getState());
  const subscribe = useCallback(
    (changed: () => void) => {
      let timer: NodeJS.Timeout | undefined;
      const draw = () => {
        timer = undefined;
        shown.current = flow.getState();
        changed();
      };
      // A change between the first render and this subscription is drawn now.
      shown.current = flow.getState();
      const unsubscribe = flow.subscribe((_state, event) => {
        const batch = rule.current;
        if (batch && event !== undefined && batch.events(event)) {
          timer ??= setTimeout(draw, batch.frameMs);
          return;
        }
        if (timer) clearTimeout(timer);
        draw();
      });
      return () => {
        unsubscribe();
        if (timer) clearTimeout(timer);
      };
    },
    [flow],
  );
  return useSyncExternalStore(
    subscribe,
    useCallback(() => shown.current, []),
  );
}

/**
 * A flow (src/app/flow.ts) created once per mount and followed with `useFlowState`. Its
 * initial effects start once mounted, and unmounting closes it: events arriving after that
 * are dropped (a late S3 answer must not touch a screen that is gone).
 *
 * The third element reads the flow's state NOW: a key handler acting on several keys of one
 * read sees what the key before did, which the rendered state does not show yet.
 */
export function useFlow<S, E, F>(
  reduce: Reduce<S, E, F>,
  initial: Step<S, F>,
  runner: EffectRunner<S, E, F>,
): [S, (event: E) => void, () => S] {
  // The runner may be rebuilt on a render (new ports); the flow, created once, calls the latest.
  const latest = useRef(runner);
  latest.current = runner;
  const [flow] = useState(() =>
    createFlow(
      reduce,
      initial,
      {
        run: (effect, context) => latest.current.run(effect, context),
        failed: (effect, error) => latest.current.failed(effect, error),
      },
      { deferStart: true },
    ),
  );
  useEffect(() => {
    flow.start();
    return () => flow.close();
  }, [flow]);
  return [useFlowState(flow), flow.dispatch, flow.getState];
}
