import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useApp } from 'ink';
import { initialStatus, statusFlow, statusStateExitCode } from '../src/app/status-flow.js';
import { statusRunner } from '../src/app/status-run-effect.js';
import type { StatusReport } from '../src/app/status-report.js';
import { StatusScreen } from './StatusScreen.js';
import { useFlow } from './hooks/use-flow.js';
import { useTerminalSize } from './hooks/use-columns.js';
import { useKeys } from './hooks/use-keys.js';

export interface StatusAppProps {
  readonly read: () => Promise<StatusReport>;
  /** Width; read from the terminal (useTerminalSize) when not given. Tests pass it. */
  readonly columns?: number;
  readonly baton: string;
  /** Re-read interval under --watch; undefined renders once and exits. */
  readonly watchSeconds: number | undefined;
  /** Called with the exit code when the screen ends: after one read, `q`, or Ctrl-C (on unmount). */
  readonly onExit: (code: number) => void;
  /** Whether this terminal can take keys (raw mode); without it --watch cannot be quit by `q`. */
  readonly interactive: boolean;
  /** Esc (with no help open) closes the view: the drill's status task, where closing is the way on. */
  readonly escCloses?: boolean;
}

/** The status screen wired to its flow: reads, re-reads on `r` and on the watch timer, quits on `q`. */
export function StatusApp({
  read,
  columns: fixedColumns,
  baton,
  watchSeconds,
  onExit,
  interactive,
  escCloses = false,
}: StatusAppProps) {
  const { exit } = useApp();
  const size = useTerminalSize();
  const columns = fixedColumns ?? size.columns;
  const runner = useMemo(() => statusRunner(read), [read]);
  const [state, dispatch] = useFlow(statusFlow, initialStatus, runner);
  const [help, setHelp] = useState(false);

  // Ctrl-C under --watch ends the app without a `q`: exit with the code of the last read.
  const latest = useRef(state);
  latest.current = state;
  useEffect(() => () => onExit(statusStateExitCode(latest.current)), [onExit]);

  const finish = useCallback(() => {
    onExit(statusStateExitCode(state));
    exit();
  }, [state, onExit, exit]);

  // Without --watch the screen is one read: it ends as soon as the read is shown.
  useEffect(() => {
    if (watchSeconds === undefined && state.step !== 'reading') finish();
  }, [watchSeconds, state, finish]);

  useEffect(() => {
    if (watchSeconds === undefined) return undefined;
    const timer = setInterval(() => dispatch({ type: 'refresh' }), watchSeconds * 1000);
    return () => clearInterval(timer);
  }, [watchSeconds, dispatch]);

  useKeys(
    (intent) => {
      if (intent === 'quit') finish();
      else if (intent === 'help') setHelp(!help);
      else if (intent === 'back') {
        if (help) setHelp(false);
        else if (escCloses) finish();
      } else if (intent === 'refresh') dispatch({ type: 'refresh' });
    },
    { isActive: interactive && watchSeconds !== undefined },
  );

  // One read prints whole and exits (it stays in the scrollback); --watch redraws, so it keeps within the rows.
  return (
    <StatusScreen
      state={state}
      columns={columns}
      rows={watchSeconds === undefined ? undefined : size.rows}
      baton={baton}
      watchSeconds={watchSeconds}
      help={help}
      escCloses={escCloses}
    />
  );
}
