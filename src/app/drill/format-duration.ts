/** `1:05` for a step's time in the summary (minutes:seconds; a rehearsal is not a benchmark). */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}
