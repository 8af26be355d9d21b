import { Box, Text } from 'ink';
import { STATE_MARKS } from '../../src/app/mesh-status-text.js';
import { formatAge } from '../../src/mesh/credential-age.js';
import type { PairStatus } from '../../src/mesh/mesh-status.js';
import { useColor } from '../hooks/use-color.js';
import { fit } from '../rotation/fit.js';

export interface MeshStatusTableProps {
  /** The filtered rows, worst first. */
  readonly rows: readonly PairStatus[];
  readonly selected: number;
  readonly top: number;
  /** How many rows fit. */
  readonly visible: number;
  readonly columns: number;
}

/**
 * The selection's marker column: a `›` before the selected row, so the selection shows where
 * inverse video does not (NO_COLOR, a terminal without attributes, a copy of the screen).
 */
export const SELECTED_MARK = '› ';
const MARK_WIDTH = SELECTED_MARK.length;

/** Column widths for a width: the pair column takes what the others leave. */
export function tableColumns(columns: number): { state: number; pair: number; age: number; last: number } {
  const state = 15; // "✗ changed-in-db"
  const age = 14; // "120d 23h (mtime)" is cut last
  // Room for "rolled-back <id>" whole once the terminal is wide enough; at 80 columns the id goes to the detail.
  const last = Math.max(12, Math.min(36, columns - state - age - 30));
  const pair = Math.max(10, columns - state - age - last - 4 - MARK_WIDTH);
  return { state, pair, age, last };
}

/** The last rotation in words: its outcome and its whole id, or "—". */
export function lastRotationText(s: PairStatus): string {
  return s.lastRotation ? `${s.lastRotation.outcome} ${s.lastRotation.id}` : '—';
}

/**
 * What the LAST ROTATION cell holds: the outcome and the id when both fit, else the outcome
 * alone. An id is never cut in the middle (`20261201T195…` names no rotation); the selected
 * row's detail carries it whole (`lastRotationCut`).
 */
export function lastRotationCell(s: PairStatus, columns: number): string {
  const whole = lastRotationText(s);
  return [...whole].length <= tableColumns(columns).last ? whole : (s.lastRotation?.outcome ?? whole);
}

/** Whether the table's LAST ROTATION cell left the id out (the detail then says it whole). */
export function lastRotationCut(s: PairStatus, columns: number): boolean {
  return lastRotationCell(s, columns) !== lastRotationText(s);
}

/** The AGE cell: how old the credential is, `!` when too old, `(mtime)` when read from a file's time. */
export function ageText(s: PairStatus): string {
  return `${s.tooOld ? '! ' : ''}${s.ageMs === undefined ? 'never' : `${formatAge(s.ageMs)}${s.lastRotated?.source === 'file-mtime' ? ' (mtime)' : ''}`}`;
}

/** One line per pair: mark and state word, pair, age, last rotation; the selected row marked `›` and inverted. */
export function MeshStatusTable({ rows, selected, top, visible, columns }: MeshStatusTableProps) {
  const paint = useColor();
  const w = tableColumns(columns);
  const shown = rows.slice(top, top + visible);
  return (
    <Box flexDirection="column">
      <Text bold>
        {fit(
          `${' '.repeat(MARK_WIDTH)}${fit('STATE', w.state)} ${fit('PAIR (ROLE)', w.pair)} ${fit('AGE', w.age)} ${fit('LAST ROTATION', w.last)}`,
          columns - 1,
        )}
      </Text>
      {shown.map((s, i) => {
        const mark = STATE_MARKS[s.state];
        const last = lastRotationCell(s, columns);
        const isSelected = top + i === selected;
        const age = ageText(s);
        const line = `${fit(`${s.pair.key} (${s.pair.role})`, w.pair)} ${fit(age, w.age)} ${fit(last, w.last)}`;
        return (
          <Box key={s.pair.key}>
            <Text bold={isSelected}>{isSelected ? SELECTED_MARK : ' '.repeat(MARK_WIDTH)}</Text>
            <Text color={paint(mark.color)} inverse={isSelected}>
              {fit(`${mark.glyph} ${s.state}`, w.state)}
            </Text>
            <Text inverse={isSelected}>{` ${fit(line, columns - w.state - 2 - MARK_WIDTH)}`}</Text>
          </Box>
        );
      })}
    </Box>
  );
}
