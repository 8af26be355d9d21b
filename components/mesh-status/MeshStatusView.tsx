import { Box, Text } from 'ink';
import {
  appText,
  armedText,
  notRevokedText,
  leftOpenText,
  loginsText,
  nextStep,
  summaryText,
} from '../../src/app/mesh-status-text.js';
import { confirmedText } from '../../src/app/confirmed-text.js';
import { filteredRows, type MeshStatusViewState } from '../../src/app/mesh-status-view-state.js';
import { MARKS } from '../../src/app/marks.js';
import { PLAIN_SUGGESTER, type Suggester } from '../../src/suggest-command.js';
import { HelpOverlay } from '../HelpOverlay.js';
import { QUIT_KEY, type KeyHelp } from '../keys.js';
import { fit } from '../rotation/fit.js';
import { layoutWithCommands, wrapWords } from '../layout.js';
import { ageText, lastRotationCut, lastRotationText, MeshStatusTable } from './MeshStatusTable.js';
import { STATE_MARKS } from '../../src/app/mesh-status-text.js';

export const MESH_STATUS_KEYS: readonly KeyHelp[] = [
  { keys: '↑ ↓  k j', does: 'move (the table scrolls)' },
  { keys: '/', does: 'filter: provider, consumer, role, machine or state' },
  { keys: 'd  Enter', does: 'the selected row in full, wrapped (Enter ends a filter first)' },
  { keys: 'Esc', does: 'close help / the row in full / clear the filter (never quits)' },
  { keys: 'r', does: 'read every holder again' },
  { keys: '?', does: 'this help' },
  QUIT_KEY,
];

/** Lines the frame uses besides the table rows and the detail: title, summary, header, filter, keys, and one spare. */
export const FRAME_LINES = 6;
/** The table keeps at least this many rows whatever the detail (visibleRows). */
const MIN_TABLE_ROWS = 3;

/** The line under the title: the counts of each state, or how the reading goes. */
export function summaryOf(
  state: MeshStatusViewState,
  progress: { readonly read: number; readonly total: number },
): string {
  return state.failure !== undefined
    ? `${MARKS.refused.glyph} Reading failed (r reads again, q quits): ${state.failure}`
    : state.statuses === undefined
      ? `Reading holders… ${progress.read}/${progress.total} machines (digests only)`
      : summaryText(state.statuses);
}

/** The summary wrapped to two lines at most: a count of every state is never cut at 80 columns. */
export function summaryLines(summary: string, width: number): string[] {
  const lines = wrapWords(summary, width);
  return lines.length <= 2 ? lines : [lines[0]!, fit(lines.slice(1).join(' '), width)];
}

/** Table rows that fit: a summary on two lines, and each line of the detail, take one from the table. */
export function visibleRows(rows: number, summaryLineCount: number, detailLines = 2): number {
  return Math.max(MIN_TABLE_ROWS, rows - FRAME_LINES - detailLines - (summaryLineCount - 1));
}

export interface MeshStatusViewProps {
  readonly state: MeshStatusViewState;
  readonly selectorText: string;
  readonly progress: { readonly read: number; readonly total: number };
  readonly columns: number;
  readonly rows: number;
  /** Builds the "next" line's commands with the operator's flags (plain `baton` when absent). */
  readonly suggester?: Suggester;
  /** Now (tests fix it): the age of sessions still open on a left login. */
  readonly nowMs?: number;
}

/**
 * The selected pair's detail and next step, wrapped whole (a resume id cut to
 * `baton mesh resume 2026120…` was the one thing the operator needed), and how many table rows
 * are left for the rest of the rows.
 */
export function meshStatusLayout(
  state: MeshStatusViewState,
  columns: number,
  rows: number,
  suggester: Suggester = PLAIN_SUGGESTER,
  progress: { readonly read: number; readonly total: number } = { read: 0, total: 0 },
  /** Now, for the age of sessions still open on a left login. */
  nowMs: number = Date.now(),
): { detail: string[]; visible: number } {
  const width = columns - 1;
  const current = filteredRows(state)[state.selected];
  const next = current ? nextStep(current, suggester) : undefined;
  const open = state.detail && !state.help && current !== undefined;
  if (state.help || !current)
    return { detail: [], visible: visibleRows(rows, summaryCount(state, progress, width), 0) };
  const head = [
    // Opened (`d`): every column of the row whole, as the table would show it with room.
    ...(open
      ? [
          `state: ${STATE_MARKS[current.state].glyph} ${current.state}`,
          `pair (role): ${current.pair.key} (${current.pair.role})`,
          `age: ${ageText(current)}`,
          `last rotation: ${lastRotationText(current)}`,
        ].flatMap((line) => wrapWords(line, width, 2))
      : []),
    // The pair whole (the table cuts it to its column), then where and what.
    ...wrapWords(
      `${current.pair.key} (${current.pair.role}) ${current.pair.providerMachine} → ${current.pair.consumerMachine}: ${current.detail}`,
      width,
      2,
    ),
    // An alternating pair: which login is live and the other's state (a single pair has no such line).
    ...(loginsText(current) ? wrapWords(`logins: ${loginsText(current)}`, width) : []),
  ];
  const sessions = leftOpenText(current, nowMs);
  const armed = armedText(current);
  const notRevoked = notRevokedText(current);
  const extra = [
    // Issue 45: sessions a revoke or a move left open, and a revoke still armed, are part of the truth.
    ...(sessions ? wrapWords(`sessions: ${sessions}`, width, 2) : []),
    ...(armed ? wrapWords(`armed: ${armed}`, width, 2) : []),
    ...(notRevoked ? wrapWords(`not revoked: ${notRevoked}`, width, 2) : []),
    // Opened: which of an applied pair's steps were confirmed (the table's ✓ says only that the files agree).
    ...(open && current.confirmed && (current.state === 'applied' || current.state === 'app-behind')
      ? [
          ...(current.app ? wrapWords(`app: ${appText(current)}`, width, 2) : []),
          ...wrapWords(`confirmed: ${confirmedText(current.confirmed)}`, width, 2),
        ]
      : []),
  ];
  const tail = [
    // The id the table's column had no room for, whole (unless the next step already names it).
    ...(!open && lastRotationCut(current, columns) && !(next ?? '').includes(current.lastRotation?.id ?? '')
      ? wrapWords(`last rotation: ${lastRotationText(current)}`, width)
      : []),
    ...(next
      ? layoutWithCommands(`next: ${next}`, width, suggester.prefix)
      : current.resumeId
        ? wrapWords(`resume id: ${current.resumeId}`, width)
        : []),
  ];
  // The next step is never cut; the sessions and marks give way on a small terminal, saying so.
  // Opened, the row takes the table's place: title, summary, its heading, the window line and the keys remain.
  const room = open
    ? rows - 4 - summaryCount(state, progress, width)
    : rows - FRAME_LINES - MIN_TABLE_ROWS - (summaryCount(state, progress, width) - 1);
  const left = Math.max(1, room - head.length - tail.length);
  const detail = [
    ...head,
    ...(extra.length <= left
      ? extra
      : [...extra.slice(0, left - 1), fit('… more than fits: widen the terminal, or run it piped', width)]),
    ...tail,
  ];
  return { detail, visible: visibleRows(rows, summaryCount(state, progress, width), detail.length) };
}

function summaryCount(
  state: MeshStatusViewState,
  progress: { readonly read: number; readonly total: number },
  width: number,
): number {
  return summaryLines(summaryOf(state, progress), width).length;
}

/** The whole screen at `columns` × `rows`: every line fits, the table scrolls inside it. */
export function MeshStatusView({
  state,
  selectorText,
  progress,
  columns,
  rows,
  suggester = PLAIN_SUGGESTER,
  nowMs = Date.now(),
}: MeshStatusViewProps) {
  const width = columns - 1;
  const { detail, visible } = meshStatusLayout(state, columns, rows, suggester, progress, nowMs);
  const shown = filteredRows(state);
  // The selection always in the window, even after a resize or a taller detail shrank it.
  const top = Math.max(
    0,
    Math.min(state.top, state.selected, Math.max(0, shown.length - visible)),
    state.selected - visible + 1,
  );
  const summary = summaryLines(summaryOf(state, progress), width);
  const total = state.statuses?.length ?? 0;
  const matching = `${shown.length} of ${total} match`;
  const hidden = shown.length - Math.min(visible, shown.length - top);
  const window =
    shown.length > visible
      ? `rows ${top + 1}–${Math.min(shown.length, top + visible)} of ${shown.length}, ${hidden} hidden: ↑↓ scrolls, / filters`
      : '';
  const bottom = state.typingFilter
    ? `filter: ${state.filter}▏ ${matching} (Enter done, Esc leave)`
    : [state.filter ? `filter "${state.filter}": ${matching} (Esc clears)` : '', window]
        .filter(Boolean)
        .join('  ');
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>{fit(`Mesh status — ${selectorText} (read-only; no secret is read)`, width)}</Text>
      {summary.map((line, i) => (
        <Text key={i}>{fit(line, width)}</Text>
      ))}
      {state.help ? (
        <HelpOverlay
          columns={columns}
          keys={MESH_STATUS_KEYS}
          about="Every pair by digest, worst first. This view only reads."
        />
      ) : state.detail && shown[state.selected] ? (
        <Text bold>
          {fit(`Row ${state.selected + 1} of ${shown.length} in full (Esc back to the table):`, width)}
        </Text>
      ) : (
        <MeshStatusTable
          rows={shown}
          selected={state.selected}
          top={top}
          visible={visible}
          columns={columns}
        />
      )}
      {detail.map((line, i) => (
        <Text key={i}>{fit(line, width)}</Text>
      ))}
      <Text>{fit(bottom, width)}</Text>
      <Text dimColor>
        {fit(
          state.detail
            ? 'Esc back  ↑↓ next row  r read again  ? help  q quit'
            : // `q quit` must stay in view at 60 columns: `d`'s words shorten first.
              ([
                '↑↓ move  / filter  d row in full  r read again  ? help  q quit',
                '↑↓ move  / filter  d full  r read again  ? help  q quit',
              ].find((keys) => [...keys].length <= width) ??
                '↑↓ move  / filter  d full  r read  ? help  q quit'),
          width,
        )}
      </Text>
    </Box>
  );
}
