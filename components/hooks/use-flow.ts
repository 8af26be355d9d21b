import { useEffect, useRef, useState, useSyncExternalStore } from 'react';
import { createFlow, type EffectRunner, type Reduce, type Step } from '../../src/app/flow.js';

/**
 * A flow (src/app/flow.ts) created once per mount, read through `useSyncExternalStore`. Its
 * initial effects start once mounted, and unmounting closes it: events arriving after that
 * are dropped (a late S3 answer must not touch a screen that is gone).
 */
export function useFlow<S, E, F>(reduce: Reduce<S, E, F>, initial: Step<S, F>, runner: EffectRunner<S, E, F>): [S, (event: E) => void] {
  // The runner may be rebuilt on a render (new ports); the flow, created once, calls the latest.
  const latest = useRef(runner);
  latest.current = runner;
  const [flow] = useState(() =>
    createFlow(
      reduce,
      initial,
      { run: (effect, context) => latest.current.run(effect, context), failed: (effect, error) => latest.current.failed(effect, error) },
      { deferStart: true },
    ),
  );
  useEffect(() => {
    flow.start();
    return () => flow.close();
  }, [flow]);
  const state = useSyncExternalStore(flow.subscribe, flow.getState);
  return [state, flow.dispatch];
}
