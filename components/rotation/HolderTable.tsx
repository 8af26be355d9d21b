import { Box, Text } from 'ink';
import { MARKS } from '../../src/app/marks.js';
import { holderStatus, receivesShort } from '../../src/app/rotation-text.js';
import type { RotationState } from '../../src/app/rotation-flow.js';
import { planIndex } from '../../src/mesh/rotation-plan.js';
import { fit } from './fit.js';

export interface HolderTableProps {
  readonly state: RotationState;
  readonly columns: number;
  /** First visible row. */
  readonly offset: number;
  /** How many rows fit. */
  readonly pageSize: number;
  readonly color: boolean;
  /** Frame of the busy mark, so a pending row visibly moves. */
  readonly tick: number;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** The affected holders, one row each, scrolled to `offset`: hundreds of them fit 24 rows. */
export function HolderTable({ state, columns, offset, pageSize, color, tick }: HolderTableProps) {
  const holders = state.plan.holders;
  const machineWidth = Math.min(18, Math.max(8, planIndex(state.plan).longestMachine));
  // One column spare: a row that fills the last column makes some terminals wrap.
  const width = columns - 1;
  const rest = width - 2 - machineWidth - 1 - 6 - 1;
  const receivesWidth = Math.floor(rest * 0.5);
  const statusWidth = rest - receivesWidth - 1;
  const visible = holders.slice(offset, offset + pageSize);
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
        return (
          <Text key={holder.machine} wrap="truncate-end">
            {color ? <Text color={mark.color}>{glyph}</Text> : glyph} {fit(holder.machine, machineWidth)}{' '}
            {fit(holder.transport, 6)} {fit(receivesShort(holder), receivesWidth)}{' '}
            {fit(status.text, statusWidth)}
          </Text>
        );
      })}
      {holders.length > pageSize ? (
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
