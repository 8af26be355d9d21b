import { Box, Text } from 'ink';
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
      {about ? <Text wrap="wrap">{about}</Text> : null}
      {keys.map((entry) => (
        <Box key={entry.keys}>
          <Box width={12} flexShrink={0}>
            <Text>{entry.keys}</Text>
          </Box>
          <Text wrap="wrap">{entry.does}</Text>
        </Box>
      ))}
      <Text wrap="wrap">No single key writes anything: every write has its own confirm screen.</Text>
      <Text>Esc or ? closes this help.</Text>
    </Box>
  );
}
