import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useApp } from 'ink';
import {
  canQuit,
  failover,
  forceUnlocked,
  failoverExitCode,
  initialFailover,
  pushUnlocked,
} from '../src/app/failover-flow.js';
import { failoverRunner, type FailoverPorts } from '../src/app/failover-run-effect.js';
import type { KeyIntent } from './keys.js';
import { FailoverScreen } from './FailoverScreen.js';
import { useFlow } from './hooks/use-flow.js';
import { useTerminalSize } from './hooks/use-columns.js';
import { useKeys } from './hooks/use-keys.js';
import { useTurnReport } from './hooks/use-turn-report.js';

export interface FailoverAppProps {
  readonly ports: FailoverPorts;
  /** Width; read from the terminal (useTerminalSize) when not given. Tests pass it. */
  readonly columns?: number;
  readonly baton: string;
  /** Called with the exit code when the walk ends: `q`, or Ctrl-C (on unmount). */
  readonly onExit: (code: number) => void;
  /** Clock for the force gate's set-aside stamp (tests pass a fixed one). */
  readonly now?: () => Date;
  /** q closes this view (the drill opened it) rather than quitting baton: the keys say so. */
  readonly closes?: boolean;
}

/** The failover walk wired to its flow and keys. Only `act` effects write, after a confirm. */
export function FailoverApp({
  ports,
  columns: fixedColumns,
  baton,
  onExit,
  now = () => new Date(),
  closes = false,
}: FailoverAppProps) {
  const { exit } = useApp();
  const size = useTerminalSize();
  const columns = fixedColumns ?? size.columns;
  const runner = useMemo(() => failoverRunner(ports), [ports]);
  const [state, dispatch, current] = useFlow(failover, initialFailover, runner);
  const [help, setHelpState] = useState(false);
  // Keys of one read are handled before the next render: `?j` must find the help open.
  const helpNow = useRef(help);
  const setHelp = useCallback((open: boolean) => {
    helpNow.current = open;
    setHelpState(open);
  }, []);
  const report = useTurnReport();
  const typing =
    state.step === 'confirming-force' ||
    state.step === 'confirming-push' ||
    (state.step === 'confirming' && state.gated);

  // Ctrl-C ends the app without a `q`: the exit code is still the one of where the walk stood.
  const latest = useRef(state);
  latest.current = state;
  useEffect(() => () => onExit(failoverExitCode(latest.current)), [onExit]);

  const onIntent = useCallback(
    (intent: KeyIntent) => {
      // The state this key acts on is the flow's now, after the keys before it in the read.
      const state = current();
      if (helpNow.current) {
        if (intent === 'back' || intent === 'help') setHelp(false);
        else if (intent === 'quit' && canQuit(state)) {
          onExit(failoverExitCode(state));
          exit();
        }
        return;
      }
      switch (intent) {
        case 'quit':
          if (!canQuit(state)) return;
          onExit(failoverExitCode(state));
          exit();
          return;
        case 'help':
          setHelp(true);
          return;
        case 'back':
          // Leaving a confirm or the force gate is a back-out; Esc where it changes nothing is not.
          if (
            state.step === 'confirming' ||
            state.step === 'confirming-force' ||
            state.step === 'confirming-push'
          )
            report({ kind: 'backed-out' });
          dispatch({ type: 'back' });
          return;
        case 'refresh':
          dispatch({ type: 'refresh' });
          return;
        case 'up':
          dispatch({ type: 'move', by: -1 });
          return;
        case 'down':
          dispatch({ type: 'move', by: 1 });
          return;
        case 'select':
          if (state.step === 'deciding') dispatch({ type: 'select', at: now() });
          else if (state.step === 'confirming' && !state.gated) dispatch({ type: 'confirm' });
          return;
      }
    },
    [current, setHelp, dispatch, exit, onExit, now, report],
  );

  useKeys(onIntent, { isActive: true, typing: typing && !help });

  // Stable identities: the gate's props stay the same between renders, so a field that reacts
  // to a new onChange (an effect keyed on it) cannot re-dispatch on every render — the loop
  // ("Maximum update depth exceeded") a wrong prefix once set off. The field today
  // (GateField → useLineEdit) calls onChange only on a key.
  const onTyped = useCallback((text: string) => dispatch({ type: 'typed', text }), [dispatch]);
  const onConfirm = useCallback(() => {
    const before = current();
    if (
      (before.step === 'confirming-force' && !forceUnlocked(before)) ||
      (before.step === 'confirming-push' && !pushUnlocked(before))
    )
      report({ kind: 'refused-entry', typed: before.typed });
    dispatch({ type: 'confirm' });
  }, [dispatch, current, report]);

  return (
    <FailoverScreen
      state={state}
      columns={columns}
      rows={size.rows}
      baton={baton}
      help={help}
      onTyped={onTyped}
      onConfirm={onConfirm}
      closes={closes}
    />
  );
}
