import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import type { KeyHelp } from './keys.js';

export interface HelpOverlayProps {
  readonly columns: number;
  /** This screen's keys, and only them. */
  readonly keys: readonly KeyHelp[];
  /** What this screen is for, in a sentence or two. */
  readonly about?: string;
}

/** `?`: this screen's own keys and what it is for. Esc or `?` closes it. */
export function HelpOverlay({ columns, keys, about }: HelpOverlayProps) {
  return (
    <Box flexDirection="column" borderStyle="round" paddingX={1} width={Math.min(columns, 72)}>
      <Text bold>Keys on this screen</Text>
      {about ? <Prose width={Math.min(columns, 72) - 4} text={about} /> : null}
      <KeyRows keys={keys} />
      <Prose
        width={Math.min(columns, 72) - 4}
        text="No single key writes anything: every write has its own confirm screen."
      />
      <Text>Esc or ? closes this help.</Text>
    </Box>
  );
}

export interface KeyRowsProps {
  readonly keys: readonly KeyHelp[];
  /** The key column's width; the drill's narrower help keeps its rows to one line each. */
  readonly keyWidth?: number;
  readonly wrap?: 'wrap' | 'truncate-end';
}

/** One row a key: the keys in their own column, what they do beside it. */
export function KeyRows({ keys, keyWidth = 12, wrap = 'wrap' }: KeyRowsProps) {
  return (
    <Box flexDirection="column">
      {keys.map((entry) => (
        <Box key={entry.keys}>
          <Box width={keyWidth} flexShrink={0}>
            <Text>{entry.keys}</Text>
          </Box>
          <Text wrap={wrap}>{entry.does}</Text>
        </Box>
      ))}
    </Box>
  );
}
