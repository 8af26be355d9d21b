import { Box, Text } from 'ink';
import type { FailoverState } from '../src/app/failover-flow.js';
import { pushUnlocked } from '../src/app/failover-flow.js';
import { pushOverCommand, pushOverConsequences } from '../src/app/failover-actions.js';
import { fingerprintDiff } from '../src/app/status-rows.js';
import { lineageSentence } from '../src/app/status-verdict.js';
import { FingerprintText } from './FingerprintText.js';
import { TypedGatePrompt } from './TypedGatePrompt.js';
import { useColor } from './hooks/use-color.js';
import { Prose } from './Prose.js';

/** "PUBLISHED" and a space, as on the force gate: both gates read the same way. */
const LABEL_WIDTH = 10;
/** `SHA256:` then the 8 characters the gate asks for: what is underlined on PUBLISHED. */
const TYPED_SPAN = [7, 15] as const;

export interface PushGateProps {
  readonly state: Extract<FailoverState, { step: 'confirming-push' }>;
  readonly columns: number;
  readonly baton: string;
  readonly onTyped: (text: string) => void;
  readonly onConfirm: () => void;
  /** False while the help overlay is up, so keys do not land in the field behind it. */
  readonly isActive: boolean;
}

/**
 * Keep THIS host's authority: publish it over the published one (`sync --push --confirm
 * <PUBLISHED 8>`). Both fingerprints in the force gate's order, LOCAL then PUBLISHED; the one
 * to type is PUBLISHED — the authority the store stops holding — underlined and marked "type
 * these", the difference shown neutrally (carets only), so the eye is not drawn to the other.
 * What the write does and leaves is said before the field; nothing is written until Enter on
 * the matching value.
 */
export function PushGate({ state, columns, baton, onTyped, onConfirm, isActive }: PushGateProps) {
  const paint = useColor();
  const { verdict } = state;
  const unlocked = pushUnlocked(state);
  const width = columns - LABEL_WIDTH;
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold color={paint('red')} wrap="wrap">
        {"Keep this host's authority: publish it over the store's"}
      </Text>
      <Box>
        <Box width={LABEL_WIDTH} flexShrink={0}>
          <Text bold>LOCAL</Text>
        </Box>
        <Box flexDirection="column" width={width}>
          <FingerprintText
            value={{ text: verdict.local, differs: fingerprintDiff(verdict.local, verdict.published) }}
            width={width}
            neutral
          />
          <Text wrap="wrap">published in its place, kept here as it is</Text>
        </Box>
      </Box>
      <Box>
        <Box width={LABEL_WIDTH} flexShrink={0} flexDirection="column">
          <Text bold>PUBLISHED</Text>
          <Text bold color={paint('cyan')}>
            type these
          </Text>
        </Box>
        <Box flexDirection="column" width={width}>
          <FingerprintText
            value={{ text: verdict.published, differs: [] }}
            width={width}
            underline={TYPED_SPAN}
          />
          <Text wrap="wrap">{`${'^'.repeat(8).padStart(width >= verdict.published.length ? 15 : 8)} replaced in the store`}</Text>
        </Box>
      </Box>
      <TypedGatePrompt
        side="PUBLISHED"
        button="Publish"
        enabled="publishes this host's authority over the store's"
        typed={state.typed}
        refusal={state.refusal}
        unlocked={unlocked}
        columns={columns}
        onTyped={onTyped}
        onConfirm={onConfirm}
        isActive={isActive}
      />
      <Prose width={columns} text={`Diagnosis: ${lineageSentence(verdict.lineage)}`} />
      {pushOverConsequences(verdict, state.reading).map((text) => (
        <Prose key={text} width={columns} text={text} />
      ))}
      <Prose width={columns} text={pushOverCommand(verdict, baton)} commands={baton} />
    </Box>
  );
}
