import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import { Focused } from './Frame.js';
import type { FailoverState } from '../src/app/failover-flow.js';
import { actionWords } from '../src/app/failover-actions.js';
import { deploymentPrefix, mintGateQuestion } from '../src/app/typed-gate.js';
import { useColor } from './hooks/use-color.js';
import { GateField } from './GateField.js';

export interface ConfirmActionProps {
  readonly state: Extract<FailoverState, { step: 'confirming' }>;
  readonly columns: number;
  readonly onTyped: (text: string) => void;
  readonly onConfirm: () => void;
  /** False while help is up. */
  readonly isActive: boolean;
}

/**
 * The last stop before a write: what will happen, and that nothing has happened yet. A step
 * that cannot be undone (minting a first authority, adopting over the lost marker) asks for
 * the first 8 characters of the deployment id: on a typo'd store, the id the operator types
 * is the moment they notice which deployment this is.
 */
export function ConfirmAction({ state, columns, onTyped, onConfirm, isActive }: ConfirmActionProps) {
  const paint = useColor();
  const { reading, action } = state;
  const words = actionWords(action, reading);
  const prefix = deploymentPrefix(reading.deployment);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>Confirm: {words.title}</Text>
      <Prose width={columns} text={words.consequence} />
      <Prose
        width={columns}
        text="baton takes the authority lock and reads both sides again first; if anything changed since this read, it stops and says what."
      />
      {state.gated ? (
        <>
          <Prose
            width={columns}
            color={paint('yellow')}
            text={
              action === 'first-controller'
                ? "This cannot be undone: if another controller already holds this deployment's authority (a wrong --store?), the fleet gets a second one."
                : 'This cannot be undone: the authority this host held (the marker says so) is replaced by the published one.'
            }
          />
          <Focused>
            <Prose
              width={columns}
              spans={[
                ...(action === 'first-controller'
                  ? [
                      { text: 'Publishes to: ' },
                      { text: reading.published.location, bold: true },
                      { text: '. ' },
                    ]
                  : []),
                { text: mintGateQuestion(prefix.length) },
              ]}
            />
            <GateField
              value={state.typed}
              onChange={onTyped}
              onSubmit={onConfirm}
              isActive={isActive}
              refusal={state.refusal}
              columns={columns}
            />
          </Focused>
        </>
      ) : (
        <Focused>
          <Text bold>Enter confirms · Esc goes back</Text>
        </Focused>
      )}
      <Text>Nothing has been written yet.</Text>
    </Box>
  );
}
