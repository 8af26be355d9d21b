import { Box, Text } from 'ink';
import { TextInput } from '@inkjs/ui';
import type { FailoverState } from '../src/app/failover-flow.js';
import { forceTarget, forceUnlocked } from '../src/app/failover-flow.js';
import { fingerprintDiff } from '../src/app/status-rows.js';
import { lineageSentence } from '../src/app/status-verdict.js';
import { FingerprintText } from './FingerprintText.js';
import { MARKS } from '../src/app/marks.js';
import { useColor } from './hooks/use-color.js';

const LABEL_WIDTH = 11;

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
 * Anything else keeps the confirm disabled: the operator must have READ the key being set
 * aside, not just pressed Enter on a default.
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
        <Box width={LABEL_WIDTH} flexShrink={0}>
          <Text bold>LOCAL</Text>
        </Box>
        <Box flexDirection="column" width={width}>
          <FingerprintText value={{ text: verdict.local, differs: [] }} width={width} />
          <Text>set aside, kept (never deleted)</Text>
        </Box>
      </Box>
      <Box>
        <Box width={LABEL_WIDTH} flexShrink={0}>
          <Text bold>PUBLISHED</Text>
        </Box>
        <Box flexDirection="column" width={width}>
          <FingerprintText value={{ text: verdict.published, differs: fingerprintDiff(verdict.published, verdict.local) }} width={width} />
          <Text>installed in its place</Text>
        </Box>
      </Box>
      <Text wrap="wrap">Diagnosis: {lineageSentence(verdict.lineage)}</Text>
      <Text wrap="wrap">{verdict.caDir} and its marker will be moved to:</Text>
      <Text wrap="wrap">  {target}</Text>
      <Text> </Text>
      <Text wrap="wrap">Type the first 8 characters after SHA256: of the LOCAL fingerprint:</Text>
      <Box>
        <Text>{'> '}</Text>
        <TextInput isDisabled={!isActive} placeholder="8 characters" onChange={onTyped} onSubmit={() => onConfirm()} />
      </Box>
      <Text wrap="wrap">
        {unlocked ? (
          <Text color={paint(MARKS.action.color)} bold>
            [ Replace ] enabled: Enter replaces the local authority
          </Text>
        ) : (
          <Text>[ Replace ] disabled: the 8 characters do not match the LOCAL fingerprint yet</Text>
        )}
      </Text>
      <Text>Esc goes back · nothing has been written yet</Text>
    </Box>
  );
}
