import { Box, Text } from 'ink';
import type { FailoverState } from '../src/app/failover-flow.js';
import { outcomeWords } from '../src/app/failover-outcome.js';
import { AuthorityPanels } from './AuthorityPanels.js';
import { ReadSummary } from './ReadSummary.js';
import { VerdictBlock } from './VerdictBlock.js';
import { ErrorMessage } from './ErrorMessage.js';
import { isNarrow } from './layout.js';
import { MARKS } from '../src/app/marks.js';
import { MarkedLine } from './MarkedLine.js';

export interface FailoverResultProps {
  readonly state: Extract<FailoverState, { step: 'done' }>;
  readonly columns: number;
  readonly baton: string;
}

/** What the action did, then both sides read again: the operator sees the result, not a promise. */
export function FailoverResult({ state, columns, baton }: FailoverResultProps) {
  const quiet = state.outcome.kind === 'left' || state.outcome.kind === 'nothing-published';
  return (
    <Box flexDirection="column" width={columns}>
      <MarkedLine
        tone={quiet ? 'info' : 'ok'}
        label={state.outcome.kind === 'left' ? 'left as it is' : 'done'}
        text={outcomeWords(state.outcome)}
        columns={columns}
      />
      {state.after === undefined && state.afterError === undefined ? (
        <Text>{MARKS.busy.glyph} Reading both sides again…</Text>
      ) : null}
      {state.afterError ? <ErrorMessage error={state.afterError} columns={columns} /> : null}
      {state.after ? (
        <>
          <Text bold>Read again:</Text>
          {isNarrow(columns) ? (
            <ReadSummary reading={state.after} columns={columns} />
          ) : (
            <AuthorityPanels report={state.after} columns={columns} baton={baton} />
          )}
          <VerdictBlock verdict={state.after.verdict} baton={baton} columns={columns} />
        </>
      ) : null}
    </Box>
  );
}
