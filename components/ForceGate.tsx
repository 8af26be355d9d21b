import { Box, Text } from 'ink';
import type { FailoverState } from '../src/app/failover-flow.js';
import { forceTarget, forceUnlocked } from '../src/app/failover-flow.js';
import { fingerprintDiff } from '../src/app/status-rows.js';
import { lineageSentence } from '../src/app/status-verdict.js';
import { FingerprintText } from './FingerprintText.js';
import { TypedGatePrompt } from './TypedGatePrompt.js';
import { useColor } from './hooks/use-color.js';
import { Prose } from './Prose.js';

/** "PUBLISHED" and a space: at 60 columns a whole fingerprint (50) still fits on one line beside it. */
const LABEL_WIDTH = 10;
/** `SHA256:` then the 8 characters the gate asks for: what is underlined on LOCAL. */
const TYPED_SPAN = [7, 15] as const;

export interface ForceGateProps {
  readonly state: Extract<FailoverState, { step: 'confirming-force' }>;
  readonly columns: number;
  readonly onTyped: (text: string) => void;
  readonly onConfirm: () => void;
  /** False while the help overlay is up, so keys do not land in the field behind it. */
  readonly isActive: boolean;
}

/**
 * The force screen: both fingerprints, the lineage diagnosis, the exact path ca/ will be
 * moved to, and a field for the first 8 characters after `SHA256:` of the LOCAL fingerprint.
 * The LOCAL fingerprint is the one highlighted (its 8 characters underlined, "type these"):
 * the first tester typed the PUBLISHED one because the red difference marks drew the eye
 * there, so the difference is shown neutrally, by carets only.
 */
export function ForceGate({ state, columns, onTyped, onConfirm, isActive }: ForceGateProps) {
  const paint = useColor();
  const { verdict } = state;
  const unlocked = forceUnlocked(state);
  const target = forceTarget(state);
  const width = columns - LABEL_WIDTH;
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold color={paint('red')}>
        Replace the local authority (force)
      </Text>
      <Box>
        <Box width={LABEL_WIDTH} flexShrink={0} flexDirection="column">
          <Text bold>LOCAL</Text>
          <Text bold color={paint('cyan')}>
            type these
          </Text>
        </Box>
        <Box flexDirection="column" width={width}>
          <FingerprintText
            value={{ text: verdict.local, differs: [] }}
            width={width}
            underline={TYPED_SPAN}
          />
          <Text wrap="wrap">{`${'^'.repeat(8).padStart(width >= verdict.local.length ? 15 : 8)} set aside, kept (never deleted)`}</Text>
        </Box>
      </Box>
      <Box>
        <Box width={LABEL_WIDTH} flexShrink={0}>
          <Text bold>PUBLISHED</Text>
        </Box>
        <Box flexDirection="column" width={width}>
          <FingerprintText
            value={{ text: verdict.published, differs: fingerprintDiff(verdict.published, verdict.local) }}
            width={width}
            neutral
          />
          <Text>installed in its place</Text>
        </Box>
      </Box>
      <TypedGatePrompt
        side="LOCAL"
        button="Replace"
        enabled="replaces the local authority"
        typed={state.typed}
        refusal={state.refusal}
        unlocked={unlocked}
        columns={columns}
        onTyped={onTyped}
        onConfirm={onConfirm}
        isActive={isActive}
      />
      <Prose width={columns} text={`Diagnosis: ${lineageSentence(verdict.lineage)}`} />
      <Prose width={columns} text={`${verdict.caDir} and its marker are moved to:`} />
      <Prose width={columns} indent={2} text={target} />
    </Box>
  );
}
