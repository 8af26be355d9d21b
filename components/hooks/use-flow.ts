import { useCallback, useEffect, useRef, useState } from 'react';

/**
 * Runs a flow reducer: each event goes through `reduce`, and every effect it returns is run by
 * `run`, whose resulting event is dispatched in turn. Events arriving after unmount are
 * dropped (a late S3 answer must not touch a screen that is gone).
 */
export function useFlow<S, E, F>(
  reduce: (state: S, event: E) => { readonly state: S; readonly effects: readonly F[] },
  initial: { readonly state: S; readonly effects: readonly F[] },
  run: (effect: F) => Promise<E>,
): [S, (event: E) => void] {
  const [state, setState] = useState(initial.state);
  const stateRef = useRef(initial.state);
  const mounted = useRef(true);

  const dispatch = useCallback(
    (event: E) => {
      if (!mounted.current) return;
      const next = reduce(stateRef.current, event);
      stateRef.current = next.state;
      setState(next.state);
      for (const effect of next.effects) void run(effect).then(dispatch);
    },
    [reduce, run],
  );

  useEffect(() => {
    mounted.current = true;
    for (const effect of initial.effects) void run(effect).then(dispatch);
    return () => {
      mounted.current = false;
    };
    // The initial effects run once, on mount.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  return [state, dispatch];
}
