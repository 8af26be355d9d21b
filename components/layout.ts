/** Side by side from 100 columns, stacked below (DESIGN.md §9). The one width predicate. */
export const SIDE_BY_SIDE_MIN_COLUMNS = 100;

export function isNarrow(columns: number): boolean {
  return columns < SIDE_BY_SIDE_MIN_COLUMNS;
}
