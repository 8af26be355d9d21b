import { Box } from 'ink';
import { Prose } from './Prose.js';
import type { BatonError } from '../src/errors.js';
import { MarkedLine } from './MarkedLine.js';

export interface ErrorMessageProps {
  readonly error: BatonError;
  readonly columns: number;
}

const LABELS: Partial<Record<BatonError['code'], string>> = {
  refused: 'refused',
  'lock-busy': 'lock busy',
  'store-changed': 'store changed',
  usage: 'refused',
  config: 'config',
};

/** A refusal or failure as its three parts (what, where, next) and what changed — never a stack trace. */
export function ErrorMessage({ error, columns }: ErrorMessageProps) {
  const [what, ...rest] = error.lines();
  return (
    <Box flexDirection="column" width={columns}>
      <MarkedLine tone="refused" label={LABELS[error.code] ?? 'failed'} text={what ?? ''} columns={columns} />
      {rest.map((line, i) => (
        <Prose key={i} width={columns} text={line} commands="baton" />
      ))}
    </Box>
  );
}
