import { Box, Text } from 'ink';
import type { StepSpec } from '../../src/drill/scenario.js';
import { MARKS } from '../marks.js';
import { useColor } from '../hooks/use-color.js';

export interface StepExplanationProps {
  readonly step: StepSpec;
  /** The task being performed, or undefined before the step begins. */
  readonly task: number | undefined;
  readonly columns: number;
}

/** Why the step matters (two or three sentences), then its tasks: done, current, to do. */
export function StepExplanation({ step, task, columns }: StepExplanationProps) {
  const paint = useColor();
  return (
    <Box flexDirection="column" width={columns}>
      <Text wrap="wrap">{step.explanation}</Text>
      <Box flexDirection="column" marginTop={1}>
        {step.tasks.map((spec, i) => {
          const done = task !== undefined && i < task;
          const current = task === i;
          const glyph = done ? MARKS.ok.glyph : current ? '▸' : MARKS.info.glyph;
          return (
            <Box key={i} flexDirection="column">
              <Text wrap="truncate-end" bold={current}>
                <Text color={paint(done ? 'green' : current ? 'cyan' : 'gray')}>{glyph} </Text>
                {spec.label}
              </Text>
              {current ? (
                <Text wrap="truncate-end" color={paint('gray')}>
                  {`    the real night: ${spec.command}`}
                </Text>
              ) : null}
            </Box>
          );
        })}
      </Box>
    </Box>
  );
}
