import { Text } from 'ink';
import type { StatusState } from '../src/app/status-flow.js';
import { AuthorityPanels } from './AuthorityPanels.js';
import { VerdictBlock } from './VerdictBlock.js';
import { ErrorMessage } from './ErrorMessage.js';
import { MARKS } from '../src/app/marks.js';
import { formatTime } from '../src/app/status-rows.js';
import { Frame } from './Frame.js';

export interface StatusScreenProps {
  readonly state: StatusState;
  readonly columns: number;
  /** Rows the screen may take (it scrolls inside them); undefined prints it whole. */
  readonly rows?: number;
  /** Command prefix for the next step (the operator's global flags included). */
  readonly baton: string;
  /** Under --watch the header names the keys and the refresh interval. */
  readonly watchSeconds: number | undefined;
}

/** `baton status` on a terminal: LOCAL | PUBLISHED, the verdict, the next step. Read-only. */
export function StatusScreen({ state, columns, rows, baton, watchSeconds }: StatusScreenProps) {
  const busy = state.step === 'reading' || state.refreshing;
  const header = (
    <Text wrap="truncate-end">
      <Text bold>baton status</Text>
      {state.step === 'showing' ? `  deployment ${state.report.deployment}  read ${formatTime(state.report.readAt)}` : ''}
      {busy ? `  ${MARKS.busy.glyph} reading` : ''}
    </Text>
  );
  // Plain `status` takes no keys: its footer offers none (a `?` that does nothing is a lie).
  const footer = watchSeconds !== undefined ? <Text dimColor wrap="truncate-end">{`every ${watchSeconds} s · r read now · q quit`}</Text> : null;
  return (
    <Frame columns={columns} rows={rows} header={header} footer={footer}>
      {state.step === 'reading' ? <Text>{MARKS.busy.glyph} Reading the local and published authorities…</Text> : null}
      {state.step === 'failed' ? <ErrorMessage error={state.error} columns={columns} /> : null}
      {state.step === 'showing' ? (
        rows === undefined ? (
          <>
            <AuthorityPanels report={state.report} columns={columns} />
            <VerdictBlock verdict={state.report.verdict} baton={baton} columns={columns} />
          </>
        ) : (
          // Redrawn within the rows: the verdict first, so narrowing never scrolls it away.
          <>
            <VerdictBlock verdict={state.report.verdict} baton={baton} columns={columns} />
            <AuthorityPanels report={state.report} columns={columns} />
          </>
        )
      ) : null}
    </Frame>
  );
}
