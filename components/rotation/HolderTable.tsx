import { Box, Text } from 'ink';
import { Prose } from '../Prose.js';
import { MARKS } from '../../src/app/marks.js';
import { holderStatus, receivesShort } from '../../src/app/rotation-text.js';
import type { RotationState } from '../../src/app/rotation-flow.js';
import { planIndex } from '../../src/mesh/rotation-plan.js';
import { fit, wrapCell } from './fit.js';
import type { Holder } from '../../src/mesh/rotation-plan.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';

export interface HolderTableProps {
  readonly state: RotationState;
  readonly columns: number;
  /** First visible row. */
  readonly offset: number;
  /** How many lines the holders may take (a holder whose cells wrap takes more than one). */
  readonly pageSize: number;
  readonly color: boolean;
  /** Frame of the busy mark, so a pending row visibly moves. */
  readonly tick: number;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** The table's columns at `columns`: MACHINE and RECEIVES wrap inside theirs, STATUS is cut to its own. */
function columnsOf(plan: RotationPlan, columns: number) {
  const machineWidth = Math.min(18, Math.max(8, planIndex(plan).longestMachine));
  // One column spare: a row that fills the last column makes some terminals wrap.
  const width = columns - 1;
  const rest = width - 2 - machineWidth - 1 - 6 - 1;
  const receivesWidth = Math.floor(rest * 0.5);
  const statusWidth = rest - receivesWidth - 1;
  return { width, machineWidth, receivesWidth, statusWidth };
}

/**
 * A holder's MACHINE and RECEIVES cells, each on as many lines as it takes: a machine name or
 * a delivery path is an id, and an id cut in the middle (`consumes/pg-main/web…`) cannot be
 * read anywhere else on this screen.
 */
function cellLines(holder: Holder, machineWidth: number, receivesWidth: number) {
  const machine = wrapCell(holder.machine, machineWidth);
  const receives = wrapCell(receivesShort(holder), receivesWidth);
  return { machine, receives, height: Math.max(machine.length, receives.length) };
}

/** How many lines each holder's row takes at `columns`. */
function rowHeights(plan: RotationPlan, columns: number): number[] {
  const { machineWidth, receivesWidth } = columnsOf(plan, columns);
  return plan.holders.map((holder) => cellLines(holder, machineWidth, receivesWidth).height);
}

/**
 * The holders shown from `offset`: as many whole rows as fit `pageSize` lines, never none. The
 * page is counted in LINES, so a wrapped row never pushes the table past the rows the screen
 * gave it (the gate's prompt under it stays in view).
 */
export function visibleHolders(
  plan: RotationPlan,
  columns: number,
  offset: number,
  pageSize: number,
): number {
  const heights = rowHeights(plan, columns).slice(offset);
  let used = 0;
  let shown = 0;
  for (const height of heights) {
    if (shown > 0 && used + height > pageSize) break;
    used += height;
    shown += 1;
  }
  return shown;
}

/** The last offset worth scrolling to: from it every remaining row fits the page. */
export function lastHolderOffset(plan: RotationPlan, columns: number, pageSize: number): number {
  const heights = rowHeights(plan, columns);
  let used = 0;
  let offset = heights.length;
  while (offset > 0 && (offset === heights.length || used + heights[offset - 1]! <= pageSize)) {
    used += heights[offset - 1]!;
    offset -= 1;
  }
  return offset;
}

/** Whether the table scrolls at all: some holder is off the page from the top. */
export function holdersScroll(plan: RotationPlan, columns: number, pageSize: number): boolean {
  return visibleHolders(plan, columns, 0, pageSize) < plan.holders.length;
}

/** Lines the table takes at `columns` for the page at `offset`: its header, the rows shown, the "more" line. */
export function holderTableHeight(
  plan: RotationPlan,
  columns: number,
  offset: number,
  pageSize: number,
): number {
  const shown = visibleHolders(plan, columns, offset, pageSize);
  const rows = rowHeights(plan, columns)
    .slice(offset, offset + shown)
    .reduce((n, height) => n + height, 0);
  return 1 + rows + (holdersScroll(plan, columns, pageSize) ? 1 : 0);
}

/** The affected holders, one row each (more lines where a cell wraps), scrolled to `offset`: hundreds of them fit 24 rows. */
export function HolderTable({ state, columns, offset, pageSize, color, tick }: HolderTableProps) {
  const holders = state.plan.holders;
  const { width, machineWidth, receivesWidth, statusWidth } = columnsOf(state.plan, columns);
  const visible = holders.slice(offset, offset + visibleHolders(state.plan, columns, offset, pageSize));
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>
        {fit(
          `  ${fit('MACHINE', machineWidth)} ${fit('VIA', 6)} ${fit('RECEIVES', receivesWidth)} STATUS`,
          width,
        )}
      </Text>
      {visible.map((holder) => {
        const status = holderStatus(state, holder);
        const mark = MARKS[status.tone];
        const glyph = status.tone === 'busy' ? SPINNER[tick % SPINNER.length]! : mark.glyph;
        const cells = cellLines(holder, machineWidth, receivesWidth);
        return (
          <Box key={holder.machine} flexDirection="column">
            <Text wrap="truncate-end">
              {color ? <Text color={mark.color}>{glyph}</Text> : glyph} {fit(cells.machine[0]!, machineWidth)}{' '}
              {fit(holder.transport, 6)} {fit(cells.receives[0]!, receivesWidth)}{' '}
              {fit(status.text, statusWidth)}
            </Text>
            {Array.from({ length: cells.height - 1 }, (_, i) => (
              <Text key={i} wrap="truncate-end">
                {`  ${fit(cells.machine[i + 1] ?? '', machineWidth)} ${fit('', 6)} ${cells.receives[i + 1] ?? ''}`.trimEnd()}
              </Text>
            ))}
          </Box>
        );
      })}
      {holdersScroll(state.plan, columns, pageSize) ? (
        // How many are out of sight and how to see them first: a narrow terminal cuts the end.
        <Text dimColor={color}>
          {fit(
            `  ${holders.length - visible.length} more hidden · rows ${offset + 1}–${offset + visible.length} of ${holders.length} · j/k or ↑/↓ to scroll`,
            width,
          )}
        </Text>
      ) : null}
    </Box>
  );
}

/**
 * Every holder's row whole (`d`): the table cuts STATUS to its column (`ssh failed: connect to
 * host 1…`), and this is where the rest is read. Each holder's words wrap, none cut.
 */
export function HoldersInFull({
  state,
  columns,
}: {
  readonly state: RotationState;
  readonly columns: number;
}) {
  const width = columns - 1;
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>{fit('Every holder in full (Esc back to the rotation):', width)}</Text>
      {state.plan.holders.map((holder) => {
        const status = holderStatus(state, holder);
        return (
          <Prose
            key={holder.machine}
            width={width}
            indent={2}
            text={`${MARKS[status.tone].glyph} ${holder.machine} via ${holder.transport}, receives ${receivesShort(holder)}: ${status.text}`}
          />
        );
      })}
      <Text dimColor>{fit('Esc back · ? help', width)}</Text>
    </Box>
  );
}
