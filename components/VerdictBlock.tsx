import { Box } from 'ink';
import { Prose } from './Prose.js';
import type { Verdict } from '../src/share/types.js';
import { describeVerdict } from '../src/app/status-verdict.js';
import { MarkedLine } from './MarkedLine.js';

export interface VerdictBlockProps {
  readonly verdict: Verdict;
  /** The command prefix with the operator's global flags, for the next step. */
  readonly baton: string;
  readonly columns: number;
  /** The failover walk offers its actions instead of naming a command. */
  readonly showNext?: boolean;
}

/** The verdict in words with its mark, then the exact next step. */
export function VerdictBlock({ verdict, baton, columns, showNext = true }: VerdictBlockProps) {
  const words = describeVerdict(verdict, baton);
  return (
    <Box flexDirection="column" width={columns}>
      <MarkedLine tone={words.tone} label={words.label} text={words.headline} columns={columns} />
      {showNext ? <Prose width={columns} text={`Next: ${words.next}`} commands="baton" /> : null}
    </Box>
  );
}
