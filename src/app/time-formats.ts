/**
 * The time formats baton prints, in one table: docs/cli.md's list is generated from it
 * (`npm run docs:tables`) and test/docs/tables.test.ts holds every format to its pattern, so
 * the docs cannot say `HH:MM UTC` for a header that shows seconds.
 */
import { formatReadTime, formatTime } from './status-rows.js';

export interface TimeFormat {
  /** Where it is printed. */
  readonly where: string;
  /** Its shape, as the docs write it: Y M D H S are digits, s a fraction's digits. */
  readonly pattern: string;
  readonly format: (date: Date) => string;
}

export const TIME_FORMATS: readonly TimeFormat[] = [
  {
    where: 'screens and plain lines: expiry, the overlap, the last store check, a rotation',
    pattern: 'YYYY-MM-DD HH:MM UTC',
    format: formatTime,
  },
  {
    where: 'when a read was made: the status header, each `status --watch` read',
    pattern: 'YYYY-MM-DD HH:MM:SS UTC',
    format: formatReadTime,
  },
  {
    where: 'JSON (`--json`), the mesh journal, `ca show`: RFC 3339 in UTC',
    pattern: 'YYYY-MM-DDTHH:MM:SS.sssZ',
    format: (date) => date.toISOString(),
  },
];

/** The pattern as a regular expression: each of Y M D H S s a digit, the rest as written. */
export function timePatternRegExp(pattern: string): RegExp {
  const body = [...pattern]
    .map((c) => (/[YMDHSs]/.test(c) ? '\\d' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${body}$`);
}
