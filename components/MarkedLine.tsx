import { Box, Text } from 'ink';
import { MARKS, type Tone } from '../src/app/marks.js';
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
  const width = Math.max(columns - head.length - 1, 20);
  return (
    <Box width={columns}>
      <Box flexShrink={0} marginRight={1}>
        <Text color={paint(mark.color)} bold>
          {head}
        </Text>
      </Box>
      <Box width={width} flexDirection="column">
        {wrapWords(text, width).map((line, i) => (
          <Text key={i}>{line}</Text>
        ))}
      </Box>
    </Box>
  );
}

/**
 * Greedy word wrap. Ink's own wrap keeps the space it broke at at the start of the next line,
 * which knocks a hanging indent out of line; a word longer than the width is split hard.
 */
export function wrapWords(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (let word of text.split(/\s+/).filter(Boolean)) {
    while (word.length > width) {
      if (line) lines.push(line);
      lines.push(word.slice(0, width));
      word = word.slice(width);
      line = '';
    }
    if (!line) line = word;
    else if (line.length + 1 + word.length <= width) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line || lines.length === 0) lines.push(line);
  return lines;
}
