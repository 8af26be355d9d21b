import { Box, Text } from 'ink';
import type { StatusState } from '../src/app/status-flow.js';
import { AuthorityPanels } from './AuthorityPanels.js';
import { VerdictBlock } from './VerdictBlock.js';
import { ErrorMessage } from './ErrorMessage.js';
import { MARKS } from '../src/app/marks.js';

export interface StatusScreenProps {
  readonly state: StatusState;
  readonly columns: number;
  /** Command prefix for the next step (the operator's global flags included). */
  readonly baton: string;
  /** Under --watch the header names the keys and the refresh interval. */
  readonly watchSeconds: number | undefined;
}

/** `baton status` on a terminal: LOCAL | PUBLISHED, the verdict, the next step. Read-only. */
export function StatusScreen({ state, columns, baton, watchSeconds }: StatusScreenProps) {
  const busy = state.step === 'reading' || state.refreshing;
  return (
    <Box flexDirection="column" width={columns}>
      <Text wrap="truncate-end">
        <Text bold>baton status</Text>
        {state.step === 'showing' ? `  deployment ${state.report.deployment}  read ${state.report.readAt.toISOString().slice(11, 19)} UTC` : ''}
        {busy ? `  ${MARKS.busy.glyph} reading` : ''}
        {watchSeconds !== undefined ? `  · every ${watchSeconds} s · r read · q quit` : ''}
      </Text>
      {state.step === 'reading' ? <Text>{MARKS.busy.glyph} Reading the local and published authorities…</Text> : null}
      {state.step === 'failed' ? <ErrorMessage error={state.error} columns={columns} /> : null}
      {state.step === 'showing' ? (
        <>
          <AuthorityPanels report={state.report} columns={columns} />
          <VerdictBlock verdict={state.report.verdict} baton={baton} columns={columns} />
        </>
      ) : null}
    </Box>
  );
}
