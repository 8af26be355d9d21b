/**
 * Runs a command as a fresh process and measures it from spawn to exit: wall time from this
 * process's monotonic clock, and — through GNU time when the machine has it — the child's
 * peak RSS and CPU. The baseline goes through the same wrapper, so whatever the wrapper costs
 * is on both sides of the ratio.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Command {
  readonly file: string;
  readonly args: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
}

export interface Run {
  readonly wallMs: number;
  /** Peak resident set in KiB; undefined without GNU time. */
  readonly maxRssKb: number | undefined;
  /** user + sys CPU in ms (10 ms resolution); undefined without GNU time. */
  readonly cpuMs: number | undefined;
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export const GNU_TIME = '/usr/bin/time';

export function hasGnuTime(): boolean {
  return existsSync(GNU_TIME);
}

const scratch = mkdtempSync(path.join(os.tmpdir(), 'baton-bench-time-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
let counter = 0;

export async function timedRun(command: Command, options: { readonly gnuTime?: boolean } = {}): Promise<Run> {
  const useTime = (options.gnuTime ?? true) && hasGnuTime();
  const report = path.join(scratch, `time-${process.pid}-${counter++}.txt`);
  const file = useTime ? GNU_TIME : command.file;
  const args = useTime ? ['-f', '%M %U %S', '-o', report, command.file, ...command.args] : [...command.args];
  const started = process.hrtime.bigint();
  const child = spawn(file, args, {
    env: command.env ?? process.env,
    cwd: command.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exitCode = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => resolve(code));
  });
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  let maxRssKb: number | undefined;
  let cpuMs: number | undefined;
  if (useTime) {
    const line = readFileSync(report, 'utf8').trim().split('\n').pop() ?? '';
    rmSync(report, { force: true });
    const [rss, user, sys] = line.split(' ').map(Number);
    maxRssKb = rss;
    cpuMs = user !== undefined && sys !== undefined ? (user + sys) * 1000 : undefined;
  }
  return { wallMs, maxRssKb, cpuMs, exitCode, stdout, stderr };
}

/**
 * `runs` of each command, interleaved (A B, B A, A B …) after `warmup` unrecorded rounds, so
 * a burst of load on a shared machine lands on both sides instead of on one. Throws when the
 * subject fails: a benchmark of a command that errors out measures the error path.
 */
export async function interleaved(
  subject: Command,
  baseline: Command,
  options: {
    readonly runs: number;
    readonly warmup?: number;
    readonly check?: (run: Run) => string | undefined;
  },
): Promise<{ readonly subject: Run[]; readonly baseline: Run[] }> {
  const out = { subject: [] as Run[], baseline: [] as Run[] };
  const check = (run: Run, what: string) => {
    const problem = options.check?.(run) ?? (run.exitCode === 0 ? undefined : `exit ${run.exitCode}`);
    if (problem)
      throw new Error(`${what} failed (${problem}): ${run.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  };
  for (let i = 0; i < (options.warmup ?? 2); i++) {
    check(await timedRun(subject), 'warm-up run');
    await timedRun(baseline);
  }
  for (let i = 0; i < options.runs; i++) {
    const order = i % 2 === 0 ? (['subject', 'baseline'] as const) : (['baseline', 'subject'] as const);
    for (const side of order) {
      const run = await timedRun(side === 'subject' ? subject : baseline);
      if (side === 'subject') check(run, 'the measured command');
      out[side].push(run);
    }
  }
  return out;
}
