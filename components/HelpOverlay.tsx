import { Box, Text } from 'ink';
import { KEY_HELP } from './keys.js';

export interface HelpOverlayProps {
  readonly columns: number;
}

/** `?`: the keys, from the one key table. Esc or `?` closes it. */
export function HelpOverlay({ columns }: HelpOverlayProps) {
  return (
    <Box flexDirection="column" borderStyle="round" paddingX={1} width={Math.min(columns, 60)}>
      <Text bold>Keys</Text>
      {KEY_HELP.map((entry) => (
        <Box key={entry.keys}>
          <Box width={12} flexShrink={0}>
            <Text>{entry.keys}</Text>
          </Box>
          <Text>{entry.does}</Text>
        </Box>
      ))}
      <Text wrap="wrap">No single key writes anything: every write has its own confirm screen.</Text>
      <Text>Esc or ? closes this help.</Text>
    </Box>
  );
}
