import React from 'react';
import { Box, Text } from 'ink';
import { MARKS, type Tone } from './marks.js';
import { useColor } from './hooks/use-color.js';

export interface MarkedLineProps {
  readonly tone: Tone;
  /** The word(s) after the mark: "in sync", "refused", "done". */
  readonly label: string;
  /** The sentence, wrapped under itself (a hanging indent) so the mark column stays clear. */
  readonly text: string;
  readonly columns: number;
}

/** `✗ refused: …` — the mark and its word, never colour alone, then the sentence. */
export function MarkedLine({ tone, label, text, columns }: MarkedLineProps) {
  const paint = useColor();
  const mark = MARKS[tone];
  const head = `${mark.glyph} ${label}:`;
  return (
    <Box width={columns}>
      <Box flexShrink={0} marginRight={1}>
        <Text color={paint(mark.color)} bold>
          {head}
        </Text>
      </Box>
      <Box width={Math.max(columns - head.length - 1, 20)}>
        <Text wrap="wrap">{text}</Text>
      </Box>
    </Box>
  );
}
