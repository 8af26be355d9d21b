import { Box, Text } from 'ink';
import { Prose } from './Prose.js';
import type { StatusReport } from '../src/app/status-report.js';
import { localRows, publishedRows, type PanelRow, type PanelRows } from '../src/app/status-rows.js';
import { FingerprintText } from './FingerprintText.js';

const LABEL_WIDTH = 11;
const SUMMARY_LABELS = new Set(['state', 'not after', 'overlap', 'published', 'sealed', 'where']);

export interface ReadSummaryProps {
  readonly reading: StatusReport;
  readonly columns: number;
}

/**
 * What the walk read, compactly: the lock, then both fingerprints one above the other (the
 * differing characters marked under the lower one), each with its state in words. Compact so
 * the verdict and the actions still fit 80×24 beneath it.
 */
export function ReadSummary({ reading, columns }: ReadSummaryProps) {
  const lock = reading.lock;
  return (
    <Box flexDirection="column" width={columns}>
      <Row label="lock" columns={columns}>
        <Prose
          width={columns - LABEL_WIDTH}
          text={
            lock.state === 'busy'
              ? `BUSY: ${lock.error.what} (${lock.error.where ?? 'ca.lock'}) Only "leave" is offered until it is released; press r to read again.`
              : lock.state === 'free'
                ? 'free (nobody else is changing this authority)'
                : 'not probed'
          }
        />
      </Row>
      <Side panel={localRows(reading)} columns={columns} />
      <Side panel={publishedRows(reading)} columns={columns} />
    </Box>
  );
}

function Side({ panel, columns }: { readonly panel: PanelRows; readonly columns: number }) {
  const fingerprint = panel.rows.find((row) => row.kind === 'fingerprint' && row.label === 'fingerprint');
  const words = panel.rows
    .filter((row): row is PanelRow & { kind: 'text' } => row.kind === 'text' && SUMMARY_LABELS.has(row.label))
    .map((row) => (row.label === 'state' ? row.value : `${row.label} ${row.value}`))
    .join(' · ');
  return (
    <Row label={panel.title} columns={columns}>
      <Box flexDirection="column">
        {fingerprint && fingerprint.kind === 'fingerprint' ? (
          <FingerprintText value={fingerprint.value} width={columns - LABEL_WIDTH} />
        ) : null}
        <Prose width={columns - LABEL_WIDTH} text={words} commands="baton" />
      </Box>
    </Row>
  );
}

function Row({
  label,
  columns,
  children,
}: {
  readonly label: string;
  readonly columns: number;
  readonly children: React.ReactNode;
}) {
  return (
    <Box width={columns}>
      <Box width={LABEL_WIDTH} flexShrink={0}>
        <Text bold>{label}</Text>
      </Box>
      <Box width={columns - LABEL_WIDTH} flexDirection="column">
        {children}
      </Box>
    </Box>
  );
}
