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

/** Column widths for a width: the pair column takes what the others leave. */
export function tableColumns(columns: number): { state: number; pair: number; age: number; last: number } {
  const state = 15; // "✗ changed-in-db"
  const age = 14; // "120d 23h (mtime)" is cut last
  const last = Math.max(12, Math.min(22, columns - state - age - 30));
  const pair = Math.max(10, columns - state - age - last - 4);
  return { state, pair, age, last };
}

/** One line per pair: mark and state word, pair, age, last rotation; the selected row inverted. */
export function MeshStatusTable({ rows, selected, top, visible, columns }: MeshStatusTableProps) {
  const paint = useColor();
  const w = tableColumns(columns);
  const shown = rows.slice(top, top + visible);
  return (
    <Box flexDirection="column">
      <Text bold>
        {fit(
          `${fit('STATE', w.state)} ${fit('PAIR (ROLE)', w.pair)} ${fit('AGE', w.age)} ${fit('LAST ROTATION', w.last)}`,
          columns - 1,
        )}
      </Text>
      {shown.map((s, i) => {
        const mark = STATE_MARKS[s.state];
        const last = s.lastRotation ? `${s.lastRotation.outcome} ${s.lastRotation.id}` : '—';
        const age = `${s.tooOld ? '! ' : ''}${s.ageMs === undefined ? 'never' : `${formatAge(s.ageMs)}${s.lastRotated?.source === 'file-mtime' ? ' (mtime)' : ''}`}`;
        const line = `${fit(`${s.pair.key} (${s.pair.role})`, w.pair)} ${fit(age, w.age)} ${fit(last, w.last)}`;
        return (
          <Box key={s.pair.key}>
            <Text color={paint(mark.color)} inverse={top + i === selected}>
              {fit(`${mark.glyph} ${s.state}`, w.state)}
            </Text>
            <Text inverse={top + i === selected}>{` ${fit(line, columns - w.state - 2)}`}</Text>
          </Box>
        );
      })}
    </Box>
  );
}
