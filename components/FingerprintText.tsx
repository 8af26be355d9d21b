import { Box, Text } from 'ink';
import { caretLine, type FingerprintValue } from '../src/app/status-rows.js';
import { useColor } from './hooks/use-color.js';

const PREFIX = 'SHA256:';

export interface FingerprintTextProps {
  readonly value: FingerprintValue;
  /** Columns available. A fingerprint is never cut: below its length it breaks after `SHA256:`. */
  readonly width: number;
}

/**
 * A fingerprint in full, with the characters that differ from the other side marked twice:
 * in colour (red, bold) when colour is on, and by a caret line underneath that survives
 * NO_COLOR — so the eye finds the difference on any terminal.
 */
export function FingerprintText({ value, width }: FingerprintTextProps) {
  const paint = useColor();
  const oneLine = value.text.length <= width || !value.text.startsWith(PREFIX);
  const body = oneLine ? value.text : value.text.slice(PREFIX.length);
  const offset = oneLine ? 0 : PREFIX.length;
  const differs = value.differs.map((i) => i - offset).filter((i) => i >= 0 && i < body.length);
  const headDiffers = !oneLine && value.differs.some((i) => i < PREFIX.length);
  const carets = caretLine(differs);
  return (
    <Box flexDirection="column">
      {oneLine ? null : <Text>{PREFIX}{headDiffers ? ' (prefix differs)' : ''}</Text>}
      <Text>
        {[...body].map((char, i) =>
          differs.includes(i) ? (
            <Text key={i} color={paint('red')} bold>
              {char}
            </Text>
          ) : (
            char
          ),
        )}
      </Text>
      {carets ? <Text>{carets}</Text> : null}
    </Box>
  );
}
