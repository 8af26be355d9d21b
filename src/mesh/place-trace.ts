/**
 * The bench's view of how full the concurrency limit is kept (docs/benchmarks.md, "Round 10:
 * places and processes"): with BATON_TRACE_PLACES=<file>, every place taken and given back in
 * mapBounded (and the receipt wait's slots) is a line `<epoch ms> <+1|-1> <window> <caller>`,
 * written when the process exits. Off (the default), it costs one check per mapBounded call. A
 * measuring aid only: nothing reads the file but the bench.
 */
import { readFileSync, writeFileSync } from 'node:fs';

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

const windowsFile = process.env['BATON_TRACE_WINDOWS'];
const windowLines: string[] = [];
if (windowsFile) process.once('exit', () => writeFileSync(windowsFile, windowLines.join(''), { flag: 'a' }));

/** One consumer rename's moments, each in epoch ms on the controller's clock. */
export interface WindowMoments {
  /** The receipt's `applied_at`, put on the controller's clock (the window's start). */
  readonly appliedAt: number;
  /** When the controller read the receipt off the provider's reader. */
  readonly seenAt: number;
  /** When the rename request was handed to the consumer's channel. */
  readonly sentAt: number;
  /** When the consumer machine renamed (its clock, put on the controller's). */
  readonly renamedAt: number;
}

/**
 * With BATON_TRACE_WINDOWS=<file>, each consumer rename's moments are a line `<pair> <applied>
 * <seen> <sent> <renamed>` (epoch ms), written at exit: the bench splits a window into the
 * receipt's way to the controller, the controller's turn, and the rename's way to the machine
 * (docs/benchmarks.md, "Round 11: where a window goes"). Off (the default), one check per batch.
 */
export function windowTrace(): ((pair: string, moments: WindowMoments) => void) | undefined {
  if (!windowsFile) return undefined;
  return (pair, m) =>
    void windowLines.push(
      `${pair} ${m.appliedAt.toFixed(1)} ${m.seenAt.toFixed(1)} ${m.sentAt.toFixed(1)} ${m.renamedAt.toFixed(1)}\n`,
    );
}

const cpuLines: string[] = [];
if (windowsFile)
  process.once('exit', () => writeFileSync(`${windowsFile}.cpu`, cpuLines.join(''), { flag: 'a' }));

/**
 * With BATON_TRACE_WINDOWS=<file>, at each reading of a provider's receipts that carried a
 * receipt the wait acts on: how long this process's main thread had run and how long it had
 * waited, runnable, for a core (Linux's /proc/self/schedstat, ns) as the reading arrived, a line
 * `<epoch ms> <run ns> <wait ns>` in `<file>.cpu`. Between the first such reading and the last,
 * the bench tells a controller busy with the receipts from one waiting for the host's cores
 * (docs/benchmarks.md, "Round 12: the receipt's way"). Called as a reading arrives; what it
 * returns keeps the line, called once the reading turned out to carry one.
 */
export function cpuTrace(): (() => () => void) | undefined {
  if (!windowsFile) return undefined;
  return () => {
    let line: string | undefined;
    try {
      const [run, wait] = readFileSync('/proc/self/schedstat', 'utf8').split(' ');
      line = `${(performance.timeOrigin + performance.now()).toFixed(1)} ${run} ${wait}\n`;
    } catch {
      // Not Linux: no line, and the bench says nothing of it.
    }
    return () => void (line && cpuLines.push(line));
  };
}
