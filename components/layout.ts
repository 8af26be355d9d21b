/** Side by side from 100 columns, stacked below (DESIGN.md §9). The one width predicate. */
export const SIDE_BY_SIDE_MIN_COLUMNS = 100;

export function isNarrow(columns: number): boolean {
  return columns < SIDE_BY_SIDE_MIN_COLUMNS;
}

/**
 * A path cut in the MIDDLE to `width` columns: its start (the root) and its end (the file
 * that matters) both stay readable, where cutting the end hid "…/worker1/.baton…".
 */
export function middleEllipsis(text: string, width: number): string {
  const chars = [...text];
  if (chars.length <= width) return text;
  if (width < 5) return chars.slice(0, Math.max(0, width)).join('');
  const tail = Math.ceil((width - 1) / 2);
  const head = width - 1 - tail;
  return `${chars.slice(0, head).join('')}…${chars.slice(chars.length - tail).join('')}`;
}
