/**
 * Runs bench cases in order and keeps what each one measured THE MOMENT it finishes: its rows
 * are printed and bench-results.json is rewritten (temp file → rename, so a reader or a kill
 * never sees half a file) after every case. A run cut short — SIGINT, SIGTERM, a case that
 * throws — leaves every figure measured so far, marked `complete: false` with why it stopped
 * and which case was running. Before, the table and the file were written only at the end: an
 * hour of figures went with a Ctrl-C in the last case.
 */
import { renameSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import type { BenchCase, BenchContext } from './context.js';
import type { Figure, Skipped } from './figure.js';
import { renderTable } from './report.js';

export interface BenchSummary {
  readonly format: 'baton.bench/1';
  readonly at: string;
  seconds: number;
  /** False until every selected case ran (or threw); a cut-short run stays false. */
  complete: boolean;
  /** The signal that stopped the run, when one did. */
  interrupted?: string;
  /** The case running when the file was written (cut short: the one whose figures are missing). */
  running?: string;
  readonly machine: Record<string, unknown>;
  readonly figures: Figure[];
  readonly skipped: Skipped[];
  readonly failed: { name: string; error: string }[];
}

export interface RunCasesOptions {
  readonly resultsFile: string;
  readonly machine: Record<string, unknown>;
  /** Each case's rows as it finishes (default stdout). */
  readonly out?: (text: string) => void;
  readonly log?: (text: string) => void;
  /** Removes temp dirs; runs once, on the way out (signals included). */
  readonly cleanup: () => void;
}

export async function runCases(
  cases: readonly BenchCase[],
  ctx: BenchContext,
  options: RunCasesOptions,
): Promise<BenchSummary> {
  const out = options.out ?? ((text) => process.stdout.write(text));
  const log = options.log ?? ((text) => process.stderr.write(text));
  const started = Date.now();
  const summary: BenchSummary = {
    format: 'baton.bench/1',
    at: new Date(started).toISOString(),
    seconds: 0,
    complete: false,
    machine: options.machine,
    figures: [],
    skipped: [],
    failed: [],
  };
  const save = () => {
    summary.seconds = Math.round((Date.now() - started) / 1000);
    const temp = `${options.resultsFile}.tmp-${process.pid}`;
    writeFileSync(temp, `${JSON.stringify(summary, null, 2)}\n`);
    renameSync(temp, options.resultsFile);
  };
  let cleaned = false;
  const cleanup = () => {
    if (cleaned) return;
    cleaned = true;
    options.cleanup();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    summary.interrupted = signal;
    summary.machine.loadAverageAtEnd = os.loadavg()[0];
    save();
    log(
      `bench: ${signal} during ${summary.running ?? 'the run'}: ${summary.figures.length} figure(s) kept in ${options.resultsFile}\n`,
    );
    cleanup();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const benchCase of cases) {
      log(`bench: ${benchCase.name}\n`);
      summary.running = benchCase.name;
      save();
      try {
        const result = await benchCase.run(ctx);
        summary.figures.push(...result.figures);
        summary.skipped.push(...result.skipped);
        out(renderTable(result.figures, result.skipped, []));
      } catch (error) {
        const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
        log(`bench: ${benchCase.name} could not run: ${text}\n`);
        summary.failed.push({
          name: benchCase.name,
          error: error instanceof Error ? error.message : String(error),
        });
      }
      delete summary.running;
      save();
    }
    summary.complete = true;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    summary.machine.loadAverageAtEnd = os.loadavg()[0];
    save();
    cleanup();
  }
  return summary;
}
