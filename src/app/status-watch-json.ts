/**
 * `baton status --json --watch`: one JSON object per read, each on ONE line (NDJSON), until
 * interrupted — what `tail -f`-style monitors and `jq -c` expect. A read that fails is a line
 * too (the error object), and the loop goes on: a monitor must see a store that came back.
 */
import { jsonForTerminal } from '../outside-text.js';
import { asBatonError } from '../errors.js';
import { statusExitCode, type StatusReport } from './status-report.js';
import { statusErrorJson } from './status-json.js';

export interface WatchJson {
  readonly read: () => Promise<StatusReport>;
  /** The JSON object of one read (statusJson with the run's suggester). */
  readonly json: (report: StatusReport) => unknown;
  readonly write: (line: string) => void;
  /**
   * Waits out the interval between reads, ending early (never rejecting) when `signal` aborts:
   * the command's timer, so this loop stays a rule without a clock of its own.
   */
  readonly pause: () => Promise<void>;
  /** Aborted by SIGINT / SIGTERM or a closed stdout: the loop ends after the read under way. */
  readonly signal: AbortSignal;
}

/** Reads until `signal` aborts; the exit code is the last read's (1 when it failed). */
export async function watchStatusJson({ read, json, write, pause, signal }: WatchJson): Promise<number> {
  let code: number | undefined;
  while (!signal.aborted) {
    try {
      const report = await read();
      write(`${jsonForTerminal(json(report))}\n`);
      code = statusExitCode(report);
    } catch (error) {
      const batonError = asBatonError(error, { what: 'baton status failed' });
      write(`${jsonForTerminal(statusErrorJson(batonError))}\n`);
      code = batonError.exitCode;
    }
    await pause();
  }
  return code ?? 0;
}
