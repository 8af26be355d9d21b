/**
 * The bench's view of how full the concurrency limit is kept (docs/benchmarks.md, "Round 10:
 * places and processes"): with BATON_TRACE_PLACES=<file>, every place taken and given back in
 * mapBounded (and the receipt wait's slots) is a line `<epoch ms> <+1|-1> <window> <caller>`,
 * written when the process exits. Off (the default), it costs one check per mapBounded call. A
 * measuring aid only: nothing reads the file but the bench.
 */
import { writeFileSync } from 'node:fs';

const file = process.env['BATON_TRACE_PLACES'];
const lines: string[] = [];
if (file) process.once('exit', () => writeFileSync(file, lines.join(''), { flag: 'a' }));

export interface PlaceTrace {
  taken(window: number): void;
  given(window: number): void;
}

/** A trace for one mapBounded call, named by its caller; undefined unless the bench asked for one. */
export function placeTrace(name?: string): PlaceTrace | undefined {
  if (!file) return undefined;
  // Unnamed: the function that called mapBounded, the stack's third frame (this, mapBounded, the caller).
  const frame = name === undefined ? (new Error().stack?.split('\n')[3] ?? '') : '';
  const caller = name ?? /at (?:async )?([\w$.]+)/.exec(frame)?.[1] ?? 'unknown';
  const at = () => (performance.timeOrigin + performance.now()).toFixed(1);
  return {
    taken: (window) => void lines.push(`${at()} +1 ${window} ${caller}\n`),
    given: (window) => void lines.push(`${at()} -1 ${window} ${caller}\n`),
  };
}
