import { Text } from 'ink';
import type { StatusState } from '../src/app/status-flow.js';
import { AuthorityPanels } from './AuthorityPanels.js';
import { VerdictBlock } from './VerdictBlock.js';
import { ErrorMessage } from './ErrorMessage.js';
import { HelpOverlay } from './HelpOverlay.js';
import { MARKS } from '../src/app/marks.js';
import { formatReadTime } from '../src/app/status-rows.js';
import { CLOSE_KEY, QUIT_KEY, type KeyHelp } from './keys.js';
import { Frame } from './Frame.js';
import { Prose } from './Prose.js';

export interface StatusScreenProps {
  readonly state: StatusState;
  readonly columns: number;
  /** Rows the screen may take (it scrolls inside them); undefined prints it whole. */
  readonly rows?: number;
  /** Command prefix for the next step (the operator's global flags included). */
  readonly baton: string;
  /** Under --watch the header names the keys and the refresh interval. */
  readonly watchSeconds: number | undefined;
  /** `?` was pressed: the keys of this screen over it. */
  readonly help?: boolean;
  /** Esc closes the view (the drill's status task), not only the help. */
  readonly escCloses?: boolean;
}

export function statusKeys(escCloses: boolean): KeyHelp[] {
  return [
    { keys: 'r', does: 'read both sides again now' },
    { keys: 'PgUp PgDn', does: 'scroll when the screen is taller than the terminal' },
    { keys: '?', does: 'this help' },
    { keys: 'Esc', does: escCloses ? 'close this help, or the view' : 'close this help (never quits)' },
    escCloses ? CLOSE_KEY : QUIT_KEY,
  ];
}

const STATUS_ABOUT =
  "This host's authority beside the published one, read again every few seconds. Read-only: nothing here writes.";

/** `baton status` on a terminal: LOCAL | PUBLISHED, the verdict, the next step. Read-only. */
export function StatusScreen({
  state,
  columns,
  rows,
  baton,
  watchSeconds,
  help = false,
  escCloses = false,
}: StatusScreenProps) {
  const busy = state.step === 'reading' || state.refreshing;
  // The read time first and whole: it is the only sign a refresh happened. The deployment
  // id follows it when it fits whole; otherwise it is the body's first line, wrapped, never cut.
  const read = state.step === 'showing' ? `  read ${formatReadTime(state.report.readAt)}` : '';
  const busyText = busy ? `  ${MARKS.busy.glyph} reading` : '';
  const deployment = state.step === 'showing' ? `deployment ${state.report.deployment}` : '';
  const inHeader =
    deployment !== '' && [...`baton status${read}  ${deployment}${busyText}`].length <= columns;
  const header = (
    <Text wrap="truncate-end">
      <Text bold>baton status</Text>
      {read}
      {inHeader ? `  ${deployment}` : ''}
      {busyText}
    </Text>
  );
  // Plain `status` takes no keys: its footer offers none (a `?` that does nothing is a lie).
  const footer =
    watchSeconds !== undefined ? (
      <Text dimColor wrap="truncate-end">
        {help
          ? `Esc or ? closes this help · ${escCloses ? 'q close' : 'q quit'}`
          : `every ${watchSeconds} s · r read now · ? help · ${escCloses ? 'Esc or q close' : 'q quit'}`}
      </Text>
    ) : null;
  if (help) {
    return (
      <Frame key="help" columns={columns} rows={rows} header={header} footer={footer}>
        <HelpOverlay columns={columns} keys={statusKeys(escCloses)} about={STATUS_ABOUT} />
      </Frame>
    );
  }
  return (
    <Frame key="status" columns={columns} rows={rows} header={header} footer={footer}>
      {state.step === 'reading' ? (
        <Text>{MARKS.busy.glyph} Reading the local and published authorities…</Text>
      ) : null}
      {state.step === 'failed' ? <ErrorMessage error={state.error} columns={columns} /> : null}
      {state.step === 'showing' && !inHeader ? <Prose width={columns} text={deployment} /> : null}
      {state.step === 'showing' ? (
        rows === undefined ? (
          <>
            <AuthorityPanels report={state.report} columns={columns} baton={baton} />
            <VerdictBlock verdict={state.report.verdict} baton={baton} columns={columns} />
          </>
        ) : (
          // Redrawn within the rows: the verdict first, so narrowing never scrolls it away.
          <>
            <VerdictBlock verdict={state.report.verdict} baton={baton} columns={columns} />
            <AuthorityPanels report={state.report} columns={columns} baton={baton} />
          </>
        )
      ) : null}
    </Frame>
  );
}
