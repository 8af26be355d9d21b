/** The table `npm run bench` prints: one row per figure, with baseline, ratio and goal. */
import { formatValue, goalText, type Figure, type Skipped } from './figure.js';

export function renderTable(
  figures: readonly Figure[],
  skipped: readonly Skipped[],
  failed: readonly { name: string; error: string }[],
): string {
  const rows = figures.map((f) => [
    f.title,
    formatValue(f.measured.value, f.measured.unit),
    f.baseline ? `${formatValue(f.baseline.value, f.baseline.unit)} (${f.baseline.label})` : '—',
    f.ratio === undefined ? '—' : `${f.ratio.toFixed(2)}×`,
    goalText(f.goal),
    f.met === undefined ? '' : f.met ? 'met' : 'MISSED',
  ]);
  const head = ['figure', 'value', 'baseline (same run)', 'ratio', 'goal', ''];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const out = [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  const notes = figures.filter((f) => f.notes.length > 0).map((f) => `  ${f.id}: ${f.notes.join('; ')}`);
  if (notes.length > 0) out.push('', 'Notes:', ...notes);
  if (skipped.length > 0) out.push('', 'Not measured:', ...skipped.map((s) => `  ${s.title}: ${s.reason}`));
  if (failed.length > 0) out.push('', 'Could not run:', ...failed.map((f) => `  ${f.name}: ${f.error}`));
  return `${out.join('\n')}\n`;
}
