import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import { Focused } from './Frame.js';
import type { Action } from '../src/share/types.js';
import type { StatusReport } from '../src/app/status-report.js';
import { actionWords } from '../src/app/failover-actions.js';
import { useColor } from './hooks/use-color.js';

export interface ActionMenuProps {
  readonly reading: StatusReport;
  /** Only the actions the decision table allows (offeredActions). */
  readonly actions: readonly Action[];
  readonly cursor: number;
  readonly columns: number;
}

/** The allowed actions, each with its one-line consequence; `›` marks the one Enter picks. */
export function ActionMenu({ reading, actions, cursor, columns }: ActionMenuProps) {
  const paint = useColor();
  return (
    <Box flexDirection="column" width={columns}>
      {actions.map((action, i) => {
        const words = actionWords(action, reading);
        const here = i === cursor;
        const choice = (
          <Box key={action} flexDirection="column">
            <Text color={here ? paint('cyan') : undefined} bold={here}>
              {here ? '› ' : '  '}
              {words.title}
            </Text>
            <Box paddingLeft={4} width={columns}>
              <Prose width={columns - 4} dimColor={!here} text={words.consequence} />
            </Box>
          </Box>
        );
        // The frame scrolls to the selected choice: ↓ past the fold never selects out of sight.
        return here ? <Focused key={action}>{choice}</Focused> : choice;
      })}
    </Box>
  );
}
