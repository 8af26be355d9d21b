import React from 'react';
import { Box, Text } from 'ink';
import type { Verdict } from '../src/share/types.js';
import { describeVerdict } from '../src/app/status-verdict.js';
import { MARKS } from './marks.js';
import { useColor } from './hooks/use-color.js';

export interface VerdictBlockProps {
  readonly verdict: Verdict;
  /** The command prefix with the operator's global flags, for the next step. */
  readonly baton: string;
  readonly columns: number;
}

/** The verdict in words with its mark, then the exact next step. */
export function VerdictBlock({ verdict, baton, columns }: VerdictBlockProps) {
  const paint = useColor();
  const words = describeVerdict(verdict, baton);
  const mark = MARKS[words.tone];
  return (
    <Box flexDirection="column" width={columns}>
      <Text wrap="wrap">
        <Text color={paint(mark.color)} bold>
          {mark.glyph} {words.label}
        </Text>
        {': '}
        {words.headline}
      </Text>
      <Text wrap="wrap">Next: {words.next}</Text>
    </Box>
  );
}
