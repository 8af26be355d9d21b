import { Box } from 'ink';
import type { StatusReport } from '../src/app/status-report.js';
import { localRows, publishedRows } from '../src/app/status-rows.js';
import { isNarrow } from './layout.js';
import { AuthorityPanel } from './AuthorityPanel.js';

export interface AuthorityPanelsProps {
  readonly report: StatusReport;
  readonly columns: number;
  /**
   * The `baton` with the global flags given, for the commands the rows name (`store check`):
   * the same words as the plain output, `--config` and all. Plain `baton` when not given.
   */
  readonly baton?: string;
}

/** LOCAL | PUBLISHED: side by side from 100 columns, stacked below (docs/cli.md). */
export function AuthorityPanels({ report, columns, baton = 'baton' }: AuthorityPanelsProps) {
  const narrow = isNarrow(columns);
  const width = narrow ? columns : Math.floor(columns / 2);
  return (
    <Box flexDirection={narrow ? 'column' : 'row'}>
      <AuthorityPanel panel={localRows(report)} width={width} ruled={narrow} />
      <AuthorityPanel panel={publishedRows(report, baton)} width={width} ruled={narrow} />
    </Box>
  );
}
