/**
 * `--watch`: reconcile now, then again every interval, for as long as the machine is up.
 *
 * IT POLLS, ON PURPOSE. The mesh replaces delivered files atomically (write a temp file,
 * rename it over the old one), so a filesystem watch on the path keeps watching the inode
 * that was replaced and goes blind after the first rotation (mesh seed). A watcher that
 * silently stops working is worse than a poll, and the poll is stat-first, so an idle cycle
 * costs a readdir and a stat per role.
 */
import { messageOf } from './postgres-roles.js';
import type { CycleReport, PostgresProvisioner } from './postgres-provisioner.js';

export interface WatchOptions {
  readonly intervalMs: number;
  /** Aborting it ends the watch: the current cycle stops between roles, the connection closes. */
  readonly signal: AbortSignal;
  /** Ceiling of the backoff while the database is unreachable (default 30 s). */
  readonly maxBackoffMs?: number;
  readonly log: (line: string) => void;
  /** Called after every cycle (the drill shows progress from it). */
  readonly onCycle?: (report: CycleReport) => void;
}

/**
 * Never rejects: a database that is down, a directory that is not there yet, even a bug in a
 * cycle is logged and tried again (with backoff while the database fails) — a crashed
 * provisioner applies nothing ever again.
 */
export async function watchProvisioner(
  provisioner: Pick<PostgresProvisioner, 'runCycle'> &
    Partial<Pick<PostgresProvisioner, 'keepConnectionOpen' | 'closeConnection'>>,
  options: WatchOptions,
): Promise<void> {
  // One connection for the whole watch, re-opened by a cycle after one that lost it.
  provisioner.keepConnectionOpen?.();
  try {
    await watchLoop(provisioner, options);
  } finally {
    await provisioner.closeConnection?.().catch(() => undefined);
  }
}

async function watchLoop(
  provisioner: Pick<PostgresProvisioner, 'runCycle'>,
  options: WatchOptions,
): Promise<void> {
  const ceiling = Math.max(options.intervalMs, options.maxBackoffMs ?? 30_000);
  let delay = options.intervalMs;
  while (!options.signal.aborted) {
    let troubled: boolean;
    try {
      const report = await provisioner.runCycle(options.signal);
      options.onCycle?.(report);
      // Backoff only while the database itself fails: a bad file or a missing directory costs
      // no statement, a role refused or skipped has its own retry, and another provisioner
      // holding the provider may stop at any time (postgres-provisioner.ts) — backing off the
      // whole loop for any of them would delay every other role.
      troubled = report.databaseDown || report.failed.some((failure) => failure.scope === 'database');
    } catch (error) {
      options.log(`cycle failed unexpectedly: ${messageOf(error)}`);
      troubled = true;
    }
    delay = troubled ? Math.min(ceiling, delay * 2) : options.intervalMs;
    await sleep(delay, options.signal);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
