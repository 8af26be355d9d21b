import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import type { FailoverState } from '../src/app/failover-flow.js';
import { actionWords } from '../src/app/failover-actions.js';
import { assertNever } from '../src/app/status-verdict.js';
import { ReadSummary } from './ReadSummary.js';
import { VerdictBlock } from './VerdictBlock.js';
import { ActionMenu } from './ActionMenu.js';
import { ConfirmAction } from './ConfirmAction.js';
import { ForceGate } from './ForceGate.js';
import { PushGate } from './PushGate.js';
import { FailoverResult } from './FailoverResult.js';
import { ErrorMessage } from './ErrorMessage.js';
import { HelpOverlay } from './HelpOverlay.js';
import { MARKS } from '../src/app/marks.js';
import { Frame } from './Frame.js';
import { failoverKeys, HELP_ABOUT } from './failover-help.js';
import { qWords } from './keys.js';

export interface FailoverScreenProps {
  readonly state: FailoverState;
  readonly columns: number;
  /** Rows the screen may take (it scrolls inside them); undefined draws it whole. */
  readonly rows?: number;
  readonly baton: string;
  readonly help: boolean;
  readonly onTyped: (text: string) => void;
  readonly onConfirm: () => void;
  /** q closes this view (the drill opened it) rather than quitting baton: the keys say so. */
  readonly closes?: boolean;
}

const FOOTERS: Record<FailoverState['step'], string> = {
  reading: 'q quit · ? help',
  deciding: '↑↓ j k move · Enter select · r read again · ? help · q quit',
  confirming: 'Enter confirm · Esc back · ? help · q quit',
  'confirming-force': 'type 8 chars · Enter confirm · Esc back · Ctrl-C quit',
  'confirming-push': 'type 8 chars · Enter confirm · Esc back · Ctrl-C quit',
  acting: 'working… Ctrl-C quits',
  done: 'r read again · q quit',
  failed: 'Esc read again and decide again · q quit',
};

/** `baton failover`, one screen per step of the walk; `?` lays the key help over any of them. */
export function FailoverScreen({
  state,
  columns,
  rows,
  baton,
  help,
  onTyped,
  onConfirm,
  closes = false,
}: FailoverScreenProps) {
  const header = (
    <Text bold wrap="truncate-end">
      baton failover
      {state.step === 'deciding' ||
      state.step === 'confirming' ||
      state.step === 'confirming-force' ||
      state.step === 'confirming-push' ||
      state.step === 'acting'
        ? `  deployment ${state.reading.deployment}`
        : ''}
    </Text>
  );
  const footer = (
    <Text dimColor wrap="truncate-end">
      {qWords(
        help
          ? 'Esc or ? closes this help · q quit'
          : state.step === 'confirming' && state.gated
            ? FOOTERS['confirming-force'].replace('8 chars', 'the id')
            : FOOTERS[state.step],
        closes,
      )}
    </Text>
  );
  return (
    // A new step (or the help) is a new screen: it opens at its top, not where the last one was scrolled.
    <Frame
      key={`${state.step}${help ? '-help' : ''}`}
      columns={columns}
      rows={rows}
      header={header}
      footer={footer}
    >
      {help ? (
        <HelpOverlay columns={columns} keys={failoverKeys(state, closes)} about={HELP_ABOUT[state.step]} />
      ) : (
        <Body state={state} columns={columns} baton={baton} onTyped={onTyped} onConfirm={onConfirm} />
      )}
    </Frame>
  );
}

function Body({ state, columns, baton, onTyped, onConfirm }: Omit<FailoverScreenProps, 'help'>) {
  switch (state.step) {
    case 'reading':
      return <Text>{MARKS.busy.glyph} Reading the lock, the local authority and the published one…</Text>;
    case 'deciding':
      return (
        <Box flexDirection="column">
          <ReadSummary reading={state.reading} columns={columns} />
          <VerdictBlock
            verdict={state.reading.verdict}
            baton={baton}
            columns={columns}
            showNext={state.reading.verdict.kind === 'blocked'}
          />
          <Text bold>Choose:</Text>
          <ActionMenu
            reading={state.reading}
            actions={state.actions}
            cursor={state.cursor}
            columns={columns}
          />
        </Box>
      );
    case 'confirming':
      return (
        <ConfirmAction state={state} columns={columns} onTyped={onTyped} onConfirm={onConfirm} isActive />
      );
    case 'confirming-force':
      return <ForceGate state={state} columns={columns} onTyped={onTyped} onConfirm={onConfirm} isActive />;
    case 'confirming-push':
      return (
        <PushGate
          state={state}
          columns={columns}
          baton={baton}
          onTyped={onTyped}
          onConfirm={onConfirm}
          isActive
        />
      );
    case 'acting':
      return (
        <Prose
          width={columns}
          text={`${MARKS.busy.glyph} ${actionWords(state.action, state.reading).title}: taking the lock, reading again, then writing…`}
        />
      );
    case 'done':
      return <FailoverResult state={state} columns={columns} baton={baton} />;
    case 'failed':
      return (
        <Box flexDirection="column">
          <ErrorMessage error={state.error} columns={columns} />
          {state.action ? (
            <Prose
              width={columns}
              text="What was confirmed did not happen as asked; read the message above."
            />
          ) : null}
        </Box>
      );
    default:
      return assertNever(state);
  }
}
