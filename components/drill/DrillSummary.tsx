import { Box, Text } from 'ink';
import { railMarks, stepDuration, type DrillState } from '../../src/app/drill/drill-flow.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';
import { formatDuration } from '../../src/app/drill/format-duration.js';
import { MARKS } from '../../src/app/marks.js';
import { useColor } from '../hooks/use-color.js';

export interface DrillSummaryProps {
  readonly state: DrillState;
  readonly columns: number;
}

/** The end of the drill: time per step, and every wrong turn (a back-out, a failed check). */
export function DrillSummary({ state, columns }: DrillSummaryProps) {
  const paint = useColor();
  const marks = railMarks(state);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>
        <Text color={paint(MARKS.ok.color)}>{MARKS.ok.glyph}</Text> Drill complete
      </Text>
      <Box flexDirection="column" marginTop={1}>
        {DRILL_STEPS.map((step, i) => {
          const duration = stepDuration(state, i);
          const time =
            marks[i] === 'prepared' ? 'prepared' : duration === undefined ? '—' : formatDuration(duration);
          return (
            <Box key={step.number}>
              <Box width={10} flexShrink={0}>
                <Text>{`step ${step.number}`}</Text>
              </Box>
              <Box width={10} flexShrink={0}>
                <Text>{time}</Text>
              </Box>
              {/* Wrapped, never cut: the summary is the screen an operator reads last, and its frame scrolls. */}
              <Text wrap="wrap">{step.title}</Text>
            </Box>
          );
        })}
      </Box>
      <Box flexDirection="column" marginTop={1}>
        {state.wrongTurns.length === 0 ? (
          <Text>No wrong turns.</Text>
        ) : (
          <>
            <Text bold>{`Wrong turns (${state.wrongTurns.length}):`}</Text>
            {state.wrongTurns.slice(-6).map((turn, i) => (
              <Text key={i} wrap="wrap">
                <Text color={paint(MARKS.action.color)}>{MARKS.action.glyph}</Text>
                {` step ${turn.step}: ${turn.what}`}
              </Text>
            ))}
          </>
        )}
      </Box>
    </Box>
  );
}
