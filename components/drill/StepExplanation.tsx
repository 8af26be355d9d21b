import { Box } from 'ink';
import { Prose } from '../Prose.js';
import type { StepSpec } from '../../src/app/drill/scenario.js';
import { useColor } from '../hooks/use-color.js';
import { RAIL_COLORS, RAIL_GLYPHS } from './DrillRail.js';

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
      <Prose width={columns} text={step.explanation} />
      <Box flexDirection="column" marginTop={1}>
        {step.tasks.map((spec, i) => {
          const done = task !== undefined && i < task;
          const current = task === i;
          // A task is marked as the rail marks a step, so ✓ ▸ · read the same on both.
          const mark = done ? 'passed' : current ? 'current' : 'pending';
          return (
            <Box key={i} flexDirection="column">
              <Prose
                width={columns}
                indent={2}
                bold={current}
                spans={[
                  { text: `${RAIL_GLYPHS[mark]} `, color: paint(RAIL_COLORS[mark]) },
                  { text: spec.label },
                ]}
              />
              {current ? (
                // The command kept whole, or broken only between arguments (layout.ts).
                <Box marginLeft={4}>
                  <Prose
                    width={Math.max(20, columns - 4)}
                    text={`the real night: ${spec.command}`}
                    commands="baton"
                    color={paint('gray')}
                  />
                </Box>
              ) : null}
            </Box>
          );
        })}
      </Box>
    </Box>
  );
}
