import { Box, Text } from 'ink';
import { layoutWithCommands, wrapRanges } from './layout.js';

/** A piece of text in one style. */
export interface Span {
  readonly text: string;
  readonly bold?: boolean;
  readonly underline?: boolean;
  readonly color?: string | undefined;
}

export interface ProseProps {
  /** Columns the text may take. */
  readonly width: number;
  /** The text, or the same in styled pieces. */
  readonly text?: string;
  readonly spans?: readonly Span[];
  /** Columns each line after the first is indented by. */
  readonly indent?: number;
  readonly bold?: boolean;
  readonly dimColor?: boolean;
  readonly color?: string | undefined;
  /**
   * The text holds commands the operator copies, starting with this prefix (`baton`): each is
   * kept whole on its line, or broken only between arguments with a ` \` (layoutWithCommands).
   */
  readonly commands?: string;
}

/**
 * Text wrapped at word boundaries with no stray space opening a line, and words longer than
 * a line (paths, ids) carried on to the next rather than cut: the one way views wrap a
 * sentence (layout.ts's wrapRanges).
 */
export function Prose({ width, text, spans, indent = 0, bold, dimColor, color, commands }: ProseProps) {
  if (commands !== undefined && text !== undefined) {
    return (
      <Box flexDirection="column" width={width} flexShrink={0}>
        {layoutWithCommands(text, width, commands).map((line, i) => (
          <Text key={i} bold={bold} dimColor={dimColor} color={color} wrap="truncate-end">
            {line || ' '}
          </Text>
        ))}
      </Box>
    );
  }
  const pieces: readonly Span[] = spans ?? [{ text: text ?? '' }];
  const whole = pieces.map((piece) => piece.text).join('');
  // Each piece's code-point range in the whole, to cut the pieces along the lines.
  let at = 0;
  const placed = pieces.map((piece) => {
    const start = at;
    at += [...piece.text].length;
    return { piece, start, chars: [...piece.text] };
  });
  const lines = wrapRanges(whole, width, indent);
  return (
    <Box flexDirection="column" width={width} flexShrink={0}>
      {lines.map((line, i) => (
        <Text key={i} bold={bold} dimColor={dimColor} color={color} wrap="truncate-end">
          {i > 0 && indent > 0 ? ' '.repeat(indent) : ''}
          {placed.map(({ piece, start, chars }, j) => {
            const from = Math.max(line.start, start) - start;
            const to = Math.min(line.end, start + chars.length) - start;
            if (to <= from) return null;
            const part = chars.slice(from, to).join('');
            return piece.bold || piece.underline || piece.color ? (
              <Text key={j} bold={piece.bold} underline={piece.underline} color={piece.color}>
                {part}
              </Text>
            ) : (
              part
            );
          })}
          {line.end === line.start ? ' ' : ''}
        </Text>
      ))}
    </Box>
  );
}
