import { Box, Text } from 'ink';
import { Prose } from '../Prose.js';
import type { StepSpec } from '../../src/app/drill/scenario.js';
import { KeyRows } from '../HelpOverlay.js';
import type { KeyHelp } from '../keys.js';
import { RAIL_GLYPHS } from './DrillRail.js';

export interface DrillHelpProps {
  readonly step: StepSpec;
  readonly columns: number;
}

export const DRILL_KEYS: readonly KeyHelp[] = [
  { keys: 'Enter', does: 'begin / perform / go on' },
  { keys: '?', does: 'this explanation' },
  { keys: 'Esc', does: 'close this (never quits)' },
  { keys: 'q', does: 'leave the drill (asked first); the sandbox is removed' },
  { keys: 'Ctrl-C', does: 'quit the drill; the sandbox is removed' },
];

/** `?`: what the current step rehearses and why, the drill's keys, and what the rail marks mean. */
export function DrillHelp({ step, columns }: DrillHelpProps) {
  const width = Math.min(columns, 78);
  return (
    <Box flexDirection="column" borderStyle="round" paddingX={1} width={width}>
      <Text bold wrap="wrap">{`Step ${step.number}: ${step.title}`}</Text>
      <Prose width={width - 4} text={step.explanation} />
      <Prose
        width={width - 4}
        text="Each task opens the real view; its own keys apply there (q closes it). The drill then checks the sandbox itself and lets you go on only when every check passed."
      />
      <Box marginTop={1}>
        <KeyRows keys={DRILL_KEYS} keyWidth={9} wrap="truncate-end" />
      </Box>
      <Text wrap="wrap">
        {`Rail: ${RAIL_GLYPHS.passed} passed  ${RAIL_GLYPHS.current} current  ${RAIL_GLYPHS.pending} to do  ${RAIL_GLYPHS.prepared} prepared (--step)`}
      </Text>
    </Box>
  );
}
