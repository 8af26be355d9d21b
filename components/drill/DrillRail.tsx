import { Box, Text } from 'ink';
import { currentStep, railMarks, type DrillState, type RailMark } from '../../src/app/drill/drill-flow.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';
import { MARKS } from '../../src/app/marks.js';
import { useColor } from '../hooks/use-color.js';
import { clip } from '../rotation/fit.js';

export interface DrillRailProps {
  readonly state: DrillState;
  readonly columns: number;
  /** The keys line beside the marks: the drill's own, or the note that a view has the keys. */
  readonly hint?: string;
}

/** Marks that carry the meaning without colour; the help overlay says what each one means. */
export const RAIL_GLYPHS: Record<RailMark, string> = {
  passed: MARKS.ok.glyph,
  current: '▸',
  pending: MARKS.info.glyph,
  prepared: '–',
};

export const RAIL_COLORS: Record<RailMark, 'green' | 'cyan' | 'gray'> = {
  passed: 'green',
  current: 'cyan',
  pending: 'gray',
  prepared: 'gray',
};

/**
 * The progress rail: one line of step marks, then the current step's title (cut to fit, never
 * wrapped: the rail is two rows); `?` shows the title whole with the step's explanation.
 */
export function DrillRail({ state, columns, hint = '? explains · q quits' }: DrillRailProps) {
  const paint = useColor();
  const marks = railMarks(state);
  const step = currentStep(state);
  const title = `Step ${step.number} of ${DRILL_STEPS.length}: ${step.title}`;
  // Cut to what is left beside the marks: a row that wraps makes the rail three lines, and
  // a frame one line taller than the terminal scrolls the rail away.
  const beside = columns - 'baton drill '.length - marks.length * 3;
  // Whole or not at all: a hint cut to `q clo…` said neither what q does nor how to read the
  // rest. The footer carries the keys, and ? explains them.
  const keys = [`   ${hint}`, '   ? explains'].find((k) => [...k].length <= beside) ?? '';
  return (
    <Box flexDirection="column" width={columns}>
      <Box flexShrink={0}>
        <Text bold>baton drill </Text>
        {marks.map((mark, i) => (
          <Text key={i} color={paint(RAIL_COLORS[mark])} bold={mark === 'current'}>
            {` ${RAIL_GLYPHS[mark]}${i + 1}`}
          </Text>
        ))}
        <Text>{keys}</Text>
      </Box>
      <Text bold wrap="truncate-end">
        {clip(title, columns)}
      </Text>
    </Box>
  );
}
