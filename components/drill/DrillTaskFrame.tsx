import { useRef, type ReactNode } from 'react';
import { Box, Text, useApp, useInput } from 'ink';
import { currentTask, escapeWrongTurn, prefixWrongTurn, type DrillState } from '../../src/app/drill/drill-flow.js';
import { useColor } from '../hooks/use-color.js';
import { MARKS } from '../../src/app/marks.js';
import { DrillRail } from './DrillRail.js';

export interface DrillTaskFrameProps {
  readonly state: DrillState;
  readonly columns: number;
  /** The real view the task is performed in. */
  readonly children: ReactNode;
  /** An Esc back-out or a wrong force prefix: counted, shown in the summary. */
  readonly onWrongTurn: (what: string) => void;
  /** Ctrl-C: the drill quits (and removes the sandbox) once the view has closed. */
  readonly onInterrupt: () => void;
  /** The force gate's expected prefix on this task, if it has one (for counting wrong ones). */
  readonly forcePrefix: string | undefined;
}

/**
 * The rail above a real view. It only LISTENS to the keys the view receives — the view
 * handles them — to note wrong turns, and turns Ctrl-C into quitting the drill, because the
 * view alone would only close itself.
 */
export function DrillTaskFrame({ state, columns, children, onWrongTurn, onInterrupt, forcePrefix }: DrillTaskFrameProps) {
  const { exit } = useApp();
  const paint = useColor();
  const typed = useRef('');
  const task = currentTask(state);
  useInput((input, key) => {
    if (key.ctrl && input === 'c') {
      onInterrupt();
      exit();
      return;
    }
    if (key.escape) {
      const wrong = escapeWrongTurn(state);
      if (wrong) onWrongTurn(wrong);
      typed.current = '';
      return;
    }
    if (key.return) {
      const text = typed.current;
      typed.current = '';
      const wrong = prefixWrongTurn(text, forcePrefix);
      if (wrong) onWrongTurn(wrong);
      return;
    }
    if (key.backspace || key.delete) {
      typed.current = typed.current.slice(0, -1);
      return;
    }
    // Only what a text field would show: a burst of control bytes is not typing.
    if (!key.ctrl && !key.meta) typed.current += input.replace(/[^\x20-\x7e]/g, '');
  });
  return (
    <Box flexDirection="column" width={columns}>
      <DrillRail state={state} columns={columns} hint="the view's keys apply · q closes it" />
      <Text wrap="truncate-end">
        <Text color={paint('cyan')}>{`▸ ${task.label}`}</Text>
        {state.checks.length > 0 && state.checks.every((check) => check.ok) ? (
          <Text color={paint(MARKS.ok.color)}>{`  ${MARKS.ok.glyph} the last task passed ${state.checks.length} checks`}</Text>
        ) : null}
      </Text>
      {children}
    </Box>
  );
}
