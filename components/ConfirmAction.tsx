import { Box, Text } from 'ink';
import type { StatusReport } from '../src/app/status-report.js';
import type { PlainAction } from '../src/app/failover-flow.js';
import { actionWords } from '../src/app/failover-actions.js';

export interface ConfirmActionProps {
  readonly reading: StatusReport;
  readonly action: PlainAction;
  readonly columns: number;
}

/** The last stop before a write: what will happen, and that nothing has happened yet. */
export function ConfirmAction({ reading, action, columns }: ConfirmActionProps) {
  const words = actionWords(action, reading);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>Confirm: {words.title}</Text>
      <Text wrap="wrap">{words.consequence}</Text>
      <Text wrap="wrap">baton takes the authority lock and reads both sides again first; if anything changed since this read, it stops and says what.</Text>
      <Text> </Text>
      <Text bold>Enter confirms · Esc goes back</Text>
      <Text>Nothing has been written yet.</Text>
    </Box>
  );
}
