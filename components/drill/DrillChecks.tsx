import { Box } from 'ink';
import { Prose } from '../Prose.js';
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
          <Prose
            key={i}
            width={columns}
            indent={2}
            spans={[
              { text: `${mark.glyph} `, color: paint(mark.color) },
              { text: result.label },
              ...(result.detail && !result.ok ? [{ text: ` — ${result.detail}` }] : []),
            ]}
          />
        );
      })}
    </Box>
  );
}
