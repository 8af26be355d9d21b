import { useCallback, type ReactNode } from 'react';
import { Box, Text, useApp } from 'ink';
import { useKeyStream } from '../hooks/use-key-stream.js';
import { currentTask, turnWords, type DrillState } from '../../src/app/drill/drill-flow.js';
import { useColor } from '../hooks/use-color.js';
import { ReservedRows, useTerminalSize } from '../hooks/use-columns.js';
import { TurnReport, type Turn } from '../hooks/use-turn-report.js';
import { MARKS } from '../../src/app/marks.js';
import { wrapWords } from '../layout.js';
import { DrillRail } from './DrillRail.js';

/** The rail's two lines above the task line(s). */
const RAIL_ROWS = 2;

export interface DrillTaskFrameProps {
  readonly state: DrillState;
  /** Width; read from the terminal, live, when not given. */
  readonly columns?: number;
  /** The real view the task is performed in. */
  readonly children: ReactNode;
  /** A back-out or a refused gate entry, as the view reported it: counted, shown in the summary. */
  readonly onWrongTurn: (what: string) => void;
  /** Ctrl-C: the drill quits (and removes the sandbox) once the view has closed. */
  readonly onInterrupt: () => void;
}

/**
 * The rail above a real view. The view reports its own wrong turns (only it knows whether Esc
 * closed its help or backed out of a confirm), and the view is given the rows below the rail,
 * so the two together never exceed the terminal. Ctrl-C quits the drill, not only the view.
 */
export function DrillTaskFrame({
  state,
  columns: fixedColumns,
  children,
  onWrongTurn,
  onInterrupt,
}: DrillTaskFrameProps) {
  const { exit } = useApp();
  const paint = useColor();
  const size = useTerminalSize();
  const columns = fixedColumns ?? size.columns;
  const task = currentTask(state);
  useKeyStream(
    (event) => {
      if (event.kind === 'key' && event.key.ctrl && event.input === 'c') {
        onInterrupt();
        exit();
      }
    },
    { isActive: true },
  );
  const report = useCallback(
    (turn: Turn) => {
      const what = turnWords(
        state,
        turn.kind === 'backed-out' ? { kind: 'backed-out' } : { kind: 'refused-entry', typed: turn.typed },
      );
      if (what) onWrongTurn(what);
    },
    [state, onWrongTurn],
  );
  // Shown only where it fits whole beside the task: cut, it read "✓ the last…".
  const passed =
    state.checks.length > 0 && state.checks.every((check) => check.ok)
      ? `  ${MARKS.ok.glyph} the last task passed ${state.checks.length === 1 ? 'its check' : `all ${state.checks.length} checks`}`
      : '';
  // The task is WRAPPED, never cut: inside a view `?` opens the view's help, not the drill's,
  // so a cut task line ("Rotate every pair of pg-main again, revoking the login web2-a…") had
  // no key to read it whole. The view is given the rows the wrapped line leaves.
  const taskLines = wrapWords(`▸ ${task.label}`, columns, 2);
  const withPassed = taskLines.length === 1 && [...`${taskLines[0]!}${passed}`].length <= columns;
  return (
    <Box flexDirection="column" width={columns}>
      <DrillRail state={state} columns={columns} hint="the view's keys apply · q closes it" />
      {taskLines.map((line, i) => (
        <Text key={i}>
          <Text color={paint('cyan')}>{line}</Text>
          {withPassed && passed ? <Text color={paint(MARKS.ok.color)}>{passed}</Text> : null}
        </Text>
      ))}
      <ReservedRows.Provider value={RAIL_ROWS + taskLines.length}>
        <TurnReport.Provider value={report}>{children}</TurnReport.Provider>
      </ReservedRows.Provider>
    </Box>
  );
}
