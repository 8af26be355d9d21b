import { Box, Text } from 'ink';
import { caretLine, type FingerprintValue } from '../src/app/status-rows.js';
import { useColor } from './hooks/use-color.js';

const PREFIX = 'SHA256:';

type CharStyle = 'typed' | 'differs' | 'plain';
interface StyleRun {
  readonly start: number;
  readonly style: CharStyle;
  readonly text: string;
}

/**
 * Neighbouring characters of one style as one piece of text: a fingerprint in sync is a single
 * node, not one per character (the cold first frame over SSH pays for every node).
 */
function styleRuns(text: string, styleAt: (i: number) => CharStyle): StyleRun[] {
  const runs: StyleRun[] = [];
  [...text].forEach((char, i) => {
    const style = styleAt(i);
    const last = runs[runs.length - 1];
    if (last && last.style === style) runs[runs.length - 1] = { ...last, text: last.text + char };
    else runs.push({ start: i, style, text: char });
  });
  return runs;
}

export interface FingerprintTextProps {
  readonly value: FingerprintValue;
  /** Columns available. A fingerprint is never cut: below its length it breaks after `SHA256:`. */
  readonly width: number;
  /**
   * The differing characters marked by the caret line only, not in red: on a gate the
   * difference is information, and red drew the eye to the fingerprint NOT to be typed.
   */
  readonly neutral?: boolean;
  /** Characters (in `text`) to underline: the ones a gate asks the operator to type. */
  readonly underline?: readonly [start: number, end: number];
}

/**
 * A fingerprint in full, with the characters that differ from the other side marked twice:
 * in colour (red, bold) when colour is on, and by a caret line underneath that survives
 * NO_COLOR — so the eye finds the difference on any terminal.
 */
export function FingerprintText({ value, width, neutral = false, underline }: FingerprintTextProps) {
  const paint = useColor();
  const oneLine = value.text.length <= width || !value.text.startsWith(PREFIX);
  const body = oneLine ? value.text : value.text.slice(PREFIX.length);
  const offset = oneLine ? 0 : PREFIX.length;
  const differs = value.differs.map((i) => i - offset).filter((i) => i >= 0 && i < body.length);
  const headDiffers = !oneLine && value.differs.some((i) => i < PREFIX.length);
  const carets = caretLine(differs);
  const underlined = (i: number) =>
    underline !== undefined && i + offset >= underline[0] && i + offset < underline[1];
  const style = (i: number): CharStyle =>
    underlined(i) ? 'typed' : differs.includes(i) && !neutral ? 'differs' : 'plain';
  return (
    <Box flexDirection="column">
      {oneLine ? null : (
        <Text>
          {PREFIX}
          {headDiffers ? ' (prefix differs)' : ''}
        </Text>
      )}
      <Text>
        {styleRuns(body, style).map((run) =>
          run.style === 'typed' ? (
            <Text key={run.start} underline bold>
              {run.text}
            </Text>
          ) : run.style === 'differs' ? (
            <Text key={run.start} color={paint('red')} bold>
              {run.text}
            </Text>
          ) : (
            run.text
          ),
        )}
      </Text>
      {carets ? <Text>{carets}</Text> : null}
    </Box>
  );
}
