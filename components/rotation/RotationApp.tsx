import { useCallback, useEffect, useRef, useState } from 'react';
import { useApp } from 'ink';
import { canQuit, exitCodeOnLeave, type RotationEvent, type RotationState } from '../../src/app/rotation-flow.js';
import type { RotationStore } from '../../src/app/rotation-store.js';
import { HelpOverlay } from '../HelpOverlay.js';
import { HOLDER_PAGE, RotationView } from './RotationView.js';
import { useRotationKeys, type RotationIntent } from './use-rotation-keys.js';

/** Progress events that can arrive by the hundred are batched (with the spinner, under 10 frames a second). */
const BATCHED: ReadonlySet<RotationEvent['type']> = new Set(['holder-resolved', 'staged', 'committed-step', 'applied-pair']);
export const FRAME_MS = 150;

export interface RotationAppProps {
  readonly store: RotationStore;
  /** Subscribes to the store's state changes; returns the unsubscribe. */
  readonly subscribe: (listener: (state: RotationState, event: RotationEvent | undefined) => void) => () => void;
  readonly columns: number;
  readonly color: boolean;
  /** Called once with the exit code when the operator leaves. */
  readonly onExit: (code: number, state: RotationState) => void;
}

/**
 * Wires the rotation store to the view: renders its state (throttled, so output over SSH stays
 * small), turns key intents into flow events, and decides when the session may end.
 */
export function RotationApp({ store, subscribe, columns, color, onExit }: RotationAppProps) {
  const { exit } = useApp();
  const [state, setState] = useState(store.state());
  const [offset, setOffset] = useState(0);
  const [tick, setTick] = useState(0);
  const [help, setHelp] = useState(false);
  const timer = useRef<NodeJS.Timeout | undefined>(undefined);
  const left = useRef(false);

  useEffect(() => {
    const unsubscribe = subscribe((next, event) => {
      if (event && BATCHED.has(event.type)) {
        timer.current ??= setTimeout(() => {
          timer.current = undefined;
          setState(store.state());
        }, FRAME_MS);
        return;
      }
      if (timer.current) clearTimeout(timer.current);
      timer.current = undefined;
      setState(next);
    });
    return () => {
      unsubscribe();
      if (timer.current) clearTimeout(timer.current);
    };
  }, [store, subscribe]);

  const busy = state.step === 'resolving' || state.step === 'preparing' || state.step === 'committing' || state.step === 'applying';
  useEffect(() => {
    if (!busy) return undefined;
    const spin = setInterval(() => setTick((t) => t + 1), 350);
    return () => clearInterval(spin);
  }, [busy]);

  const leave = useCallback(
    (code: number) => {
      if (left.current) return;
      left.current = true;
      onExit(code, store.state());
      exit();
    },
    [exit, onExit, store],
  );

  const onIntent = useCallback(
    (intent: RotationIntent) => {
      const current = store.state();
      // Esc and ? close the help; they must never also cancel the rotation behind it.
      if (help && (intent.type === 'back' || intent.type === 'help')) {
        setHelp(false);
        return;
      }
      switch (intent.type) {
        case 'help':
          setHelp(true);
          return;
        case 'type':
          if (current.step === 'confirming') store.dispatch({ type: 'typed', text: current.typed + intent.text });
          return;
        case 'erase':
          if (current.step === 'confirming') store.dispatch({ type: 'typed', text: current.typed.slice(0, -1) });
          return;
        case 'confirm':
          store.dispatch({ type: 'confirmed' });
          return;
        case 'back':
          store.dispatch({ type: 'back' });
          return;
        case 'scroll':
          setOffset((o) => Math.max(0, Math.min(o + intent.by, Math.max(0, current.plan.holders.length - HOLDER_PAGE))));
          return;
        case 'quit':
          if (canQuit(current)) leave(exitCodeOnLeave(current));
          return;
        case 'interrupt':
          leave(exitCodeOnLeave(current));
          return;
        default: {
          const never: never = intent;
          throw new Error(`unknown intent ${String(never)}`);
        }
      }
    },
    [store, leave, help],
  );

  useRotationKeys({ isActive: true, typing: state.step === 'confirming', onIntent });
  // The rotation goes on behind the help; the view shows where it stands once help closes.
  if (help) return <HelpOverlay columns={columns} />;
  return <RotationView state={state} columns={columns} offset={offset} color={color} tick={tick} />;
}
