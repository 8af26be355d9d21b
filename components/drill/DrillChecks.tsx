import { Box, Text } from 'ink';
import type { CheckResult } from '../../src/app/drill/check.js';
import { MARKS } from '../../src/app/marks.js';
import { useColor } from '../hooks/use-color.js';

export interface DrillChecksProps {
  readonly checks: readonly CheckResult[];
  readonly columns: number;
}

/** Each check as a mark, the sentence of what must be true, and what was found. */
export function DrillChecks({ checks, columns }: DrillChecksProps) {
  const paint = useColor();
  return (
    <Box flexDirection="column" width={columns}>
      {checks.map((result, i) => {
        const mark = result.ok ? MARKS.ok : MARKS.refused;
        return (
          <Text key={i} wrap="truncate-end">
            <Text color={paint(mark.color)}>{mark.glyph} </Text>
            {result.label}
            {result.detail && !result.ok ? <Text>{` — ${result.detail}`}</Text> : null}
          </Text>
        );
      })}
    </Box>
  );
}
