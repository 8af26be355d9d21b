/**
 * `baton status` without a TTY: the same rows and verdict as the panels, as plain lines. It
 * never goes through Ink, whose non-TTY output still carries erase-line escapes that would
 * corrupt a log or a pipe.
 */
import type { StatusReport } from './status-report.js';
import { caretLine, localRows, publishedRows, type PanelRows } from './status-rows.js';
import type { Suggester } from '../suggest-command.js';
import { describeVerdict, type VerdictTone } from './status-verdict.js';

const LABEL_WIDTH = 13;

function panelText(panel: PanelRows): string[] {
  const lines = [`${panel.title}  ${panel.where}`];
  for (const row of panel.rows) {
    const label = `  ${row.label.padEnd(LABEL_WIDTH)}`;
    if (row.kind === 'text') lines.push(`${label}${row.value}`);
    else {
      lines.push(`${label}${row.value.text}`);
      const carets = caretLine(row.value.differs);
      if (carets) lines.push(`${' '.repeat(label.length)}${carets}  (differs from the other side)`);
    }
  }
  return lines;
}

/** `glyphs` maps a tone to its mark (src/app/marks.ts), passed in so plain text and the view share one table. */
export function statusText(
  report: StatusReport,
  glyphs: Record<VerdictTone, string>,
  baton: string | Suggester = 'baton',
): string {
  const words = describeVerdict(report.verdict, baton);
  return [
    `baton status: deployment ${report.deployment}`,
    '',
    ...panelText(localRows(report)),
    '',
    ...panelText(publishedRows(report, baton)),
    '',
    `${glyphs[words.tone]} ${words.label}: ${words.headline}`,
    `Next: ${words.next}`,
    '',
  ].join('\n');
}
