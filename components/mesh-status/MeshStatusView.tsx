import { Box, Text } from 'ink';
import { nextStep, summaryText } from '../../src/app/mesh-status-text.js';
import { filteredRows, type MeshStatusViewState } from '../../src/app/mesh-status-view-state.js';
import { MARKS } from '../../src/app/marks.js';
import { PLAIN_SUGGESTER, type Suggester } from '../../src/suggest-command.js';
import { HelpOverlay } from '../HelpOverlay.js';
import { wrapWords } from '../MarkedLine.js';
import { QUIT_KEY, type KeyHelp } from '../keys.js';
import { fit } from '../rotation/fit.js';
import { MeshStatusTable } from './MeshStatusTable.js';

export const MESH_STATUS_KEYS: readonly KeyHelp[] = [
  { keys: '↑ ↓  k j', does: 'move (the table scrolls)' },
  { keys: '/', does: 'filter: provider, consumer, role, machine or state' },
  { keys: 'Enter', does: 'end typing the filter' },
  { keys: 'Esc', does: 'close help / clear the filter (never quits)' },
  { keys: 'r', does: 'read every holder again' },
  { keys: '?', does: 'this help' },
  QUIT_KEY,
];

/** Lines the frame uses besides the table rows: title, summary, header, detail ×2, filter, keys, and one spare. */
export const FRAME_LINES = 8;

/** The line under the title: the counts of each state, or how the reading goes. */
export function summaryOf(state: MeshStatusViewState, progress: { readonly read: number; readonly total: number }): string {
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

/** Table rows that fit: a summary on two lines takes one from the table. */
export function visibleRows(rows: number, summaryLineCount: number): number {
  return Math.max(3, rows - FRAME_LINES - (summaryLineCount - 1));
}

export interface MeshStatusViewProps {
  readonly state: MeshStatusViewState;
  readonly selectorText: string;
  readonly progress: { readonly read: number; readonly total: number };
  readonly columns: number;
  readonly rows: number;
  /** Builds the "next" line's commands with the operator's flags (plain `baton` when absent). */
  readonly suggester?: Suggester;
}

/** The whole screen at `columns` × `rows`: every line fits, the table scrolls inside it. */
export function MeshStatusView({ state, selectorText, progress, columns, rows, suggester = PLAIN_SUGGESTER }: MeshStatusViewProps) {
  const width = columns - 1;
  const summary = summaryLines(summaryOf(state, progress), width);
  const visible = visibleRows(rows, summary.length);
  const shown = filteredRows(state);
  const current = shown[state.selected];
  const total = state.statuses?.length ?? 0;
  const matching = `${shown.length} of ${total} match`;
  const window = shown.length > visible ? `rows ${state.top + 1}–${Math.min(shown.length, state.top + visible)} of ${shown.length}` : '';
  const next = current ? nextStep(current, suggester) : undefined;
  const bottom = state.typingFilter
    ? `filter: ${state.filter}▏ ${matching} (Enter done, Esc leave)`
    : [state.filter ? `filter "${state.filter}": ${matching} (Esc clears)` : '', window].filter(Boolean).join('  ');
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>{fit(`Mesh status — ${selectorText} (read-only; no secret is read)`, width)}</Text>
      {summary.map((line, i) => (
        <Text key={i}>{fit(line, width)}</Text>
      ))}
      {state.help ? (
        <HelpOverlay columns={columns} keys={MESH_STATUS_KEYS} about="Every pair by digest, worst first. This view only reads." />
      ) : (
        <MeshStatusTable rows={shown} selected={state.selected} top={state.top} visible={visible} columns={columns} />
      )}
      {!state.help && current ? (
        <Box flexDirection="column">
          <Text>{fit(`${current.pair.providerMachine} → ${current.pair.consumerMachine}: ${current.detail}`, width)}</Text>
          <Text>{fit(next ? `next: ${next}` : current.resumeId ? `resume id: ${current.resumeId}` : '', width)}</Text>
        </Box>
      ) : null}
      <Text>{fit(bottom, width)}</Text>
      <Text dimColor>{fit('↑↓ move  / filter  r read again  ? help  q quit', width)}</Text>
    </Box>
  );
}
