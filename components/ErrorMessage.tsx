import React from 'react';
import { Box, Text } from 'ink';
import type { BatonError } from '../src/errors.js';
import { MARKS } from './marks.js';
import { useColor } from './hooks/use-color.js';

export interface ErrorMessageProps {
  readonly error: BatonError;
  readonly columns: number;
}

/** A refusal or failure as its three parts (what, where, next) and what changed — never a stack trace. */
export function ErrorMessage({ error, columns }: ErrorMessageProps) {
  const paint = useColor();
  const mark = MARKS.refused;
  const [what, ...rest] = error.lines();
  return (
    <Box flexDirection="column" width={columns}>
      <Text wrap="wrap">
        <Text color={paint(mark.color)} bold>
          {mark.glyph} {error.code === 'refused' ? 'refused' : error.code === 'lock-busy' ? 'lock busy' : error.code === 'store-changed' ? 'store changed' : 'failed'}
        </Text>
        {': '}
        {what}
      </Text>
      {rest.map((line, i) => (
        <Text key={i} wrap="wrap">
          {line}
        </Text>
      ))}
    </Box>
  );
}
