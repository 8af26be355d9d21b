/**
 * Every process a test run starts, so the run can end them when a test did not: a failed or
 * timed-out test skips its own cleanup, and a worker killed on timeout never runs its afterAll
 * (the forks pool). The registry therefore lives on disk, one file per pid in a per-run
 * directory named by `BATON_TEST_RUN`, and is read by test/global-setup.ts in the main process.
 *
 * Three ways a process is known to belong to the run (a colleague's run on the same machine
 * starts the same servers, so never by name):
 * - registered here by the helper that started it (servers started with a cleared environment,
 *   such as the sandbox PostgreSQL, are found no other way);
 * - `BATON_TEST_RUN=<dir>` in its environment: everything spawned with the inherited environment;
 * - the run's directory in its command line: the run's TMPDIR is that directory, so a PostgreSQL
 *   that a baton CLI under test started (`-D <TMPDIR>/baton-pg-…`) is found too.
 * A process found is ended with all its descendants (PostgreSQL's backends, sshd's sessions).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The run's directory (its TMPDIR); the registry is a folder inside it. */
export const RUN_ENV = 'BATON_TEST_RUN';
const REGISTRY = '.processes';

interface Registered {
  readonly pid: number;
  /** /proc/<pid>/stat's start time: a pid reused by another process after ours ended is not ours. */
  readonly started: string;
  readonly label: string;
  readonly by: string;
}

/**
 * Records `pid` as started by this run (a no-op outside a run with the global setup, e.g. a helper
 * used from a script). `label` says what it is in the teardown's report.
 */
export function registerProcess(pid: number | undefined, label: string): void {
  const run = process.env[RUN_ENV];
  if (run === undefined || pid === undefined) return;
  const started = startTime(pid);
  if (started === undefined) return; // already gone
  const record: Registered = { pid, started, label, by: testFile() };
  writeFileSync(path.join(run, REGISTRY, String(pid)), JSON.stringify(record));
}

/** registerProcess for a spawned child; its record goes when it exits. */
export function registerChild(child: ChildProcess, label: string): void {
  const pid = child.pid;
  registerProcess(pid, label);
  child.once('exit', () => {
    const run = process.env[RUN_ENV];
    if (run !== undefined && pid !== undefined)
      rmSync(path.join(run, REGISTRY, String(pid)), { force: true });
  });
}

function testFile(): string {
  // Set by vitest in each worker; a helper may run outside one.
  const state = (globalThis as { __vitest_worker__?: { filepath?: string } }).__vitest_worker__;
  return state?.filepath ?? `pid ${process.pid}`;
}

/** Makes the registry folder of a run directory (the global setup). */
export function createRegistry(runDir: string): void {
  mkdirSync(path.join(runDir, REGISTRY), { mode: 0o700 });
}

export interface LeftRunning {
  readonly pid: number;
  readonly command: string;
  /** Why it counts as the run's: the label it was registered with, or how it was found. */
  readonly why: string;
}

export interface ProcessRow {
  readonly pid: number;
  readonly ppid: number;
  readonly state: string;
  readonly started: string;
  readonly command: string;
  readonly environ: string;
}

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name is in parentheses and may itself contain spaces or parentheses:
    // fields from the state on (field 3) follow the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

function startTime(pid: number): string | undefined {
  return statFields(pid)?.[19];
}

function readOr(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return '';
  }
}

/** Every live process as /proc shows it (its command line's arguments joined by spaces). */
export function processTable(): ProcessRow[] {
  const rows: ProcessRow[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const fields = statFields(pid);
    if (fields === undefined) continue;
    rows.push({
      pid,
      ppid: Number(fields[1]),
      state: fields[0]!,
      started: fields[19]!,
      command: readOr(`/proc/${pid}/cmdline`).split('\0').join(' ').trim(),
      environ: readOr(`/proc/${pid}/environ`),
    });
  }
  return rows;
}

/**
 * Every live process whose command line mentions `text` (but the test runner's own), as
 * `<pid>: <command>`: what a test that left nothing running expects to be empty.
 */
export function processesMentioning(text: string): string[] {
  return processTable()
    .filter((row) => row.state !== 'Z' && row.command.includes(text) && !row.command.includes('vitest'))
    .map((row) => `${row.pid}: ${row.command.slice(0, 200)}`);
}

/**
 * The run's processes still alive (zombies excluded: they are already ended), each with its
 * descendants, leaving out `keep` (the main process and its ancestors, which carry the run's
 * environment themselves).
 */
export function leftRunning(runDir: string, keep: ReadonlySet<number>): LeftRunning[] {
  const table = processTable().filter((row) => row.state !== 'Z' && !keep.has(row.pid));
  const byPid = new Map(table.map((row) => [row.pid, row]));
  const found = new Map<number, string>();
  for (const record of registered(runDir)) {
    const row = byPid.get(record.pid);
    if (row?.started === record.started) found.set(row.pid, `${record.label}, started by ${record.by}`);
  }
  const marker = `${RUN_ENV}=${runDir}\0`;
  for (const row of table) {
    if (found.has(row.pid)) continue;
    if (row.environ.includes(marker)) found.set(row.pid, `has ${RUN_ENV} of this run`);
    else if (row.command.includes(`${runDir}/`)) found.set(row.pid, "names this run's temp dir");
  }
  // Descendants: a server's forks (PostgreSQL's backends, sshd's sessions) run with a cleared
  // or rewritten environment and command line.
  const children = new Map<number, ProcessRow[]>();
  for (const row of table) children.set(row.ppid, [...(children.get(row.ppid) ?? []), row]);
  for (const pid of [...found.keys()]) {
    const stack = [pid];
    while (stack.length > 0) {
      for (const child of children.get(stack.pop()!) ?? []) {
        if (found.has(child.pid)) continue;
        found.set(child.pid, `below pid ${pid}`);
        stack.push(child.pid);
      }
    }
  }
  return [...found].map(([pid, why]) => ({ pid, command: byPid.get(pid)?.command ?? '?', why }));
}

function registered(runDir: string): Registered[] {
  const dir = path.join(runDir, REGISTRY);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    try {
      return [JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as Registered];
    } catch {
      return [];
    }
  });
}

/**
 * vitest's own workers, children of this (the main) process: the pool may still be closing them
 * when the global teardown runs. Waited for a little, then left out of the check (what they
 * started is not).
 */
export async function ownWorkers(waitMs = 10_000): Promise<number[]> {
  const workers = () =>
    processTable()
      .filter((row) => row.ppid === process.pid && row.state !== 'Z' && row.command.includes('/vitest/dist/'))
      .map((row) => row.pid);
  for (const deadline = Date.now() + waitMs; workers().length > 0 && Date.now() < deadline;)
    await new Promise((r) => setTimeout(r, 50));
  return workers();
}

/** The pids of this process and every ancestor up to init. */
export function selfAndAncestors(): Set<number> {
  const out = new Set<number>();
  for (let pid = process.pid; pid > 1 && !out.has(pid);) {
    out.add(pid);
    const fields = statFields(pid);
    if (fields === undefined) break;
    pid = Number(fields[1]);
  }
  return out;
}

function alive(pid: number, started: string | undefined): boolean {
  const fields = statFields(pid);
  return fields !== undefined && fields[0] !== 'Z' && (started === undefined || fields[19] === started);
}

/**
 * Ends `processes`: SIGTERM, then SIGKILL for whatever still runs after `graceMs`. Returns the
 * pids that outlived even SIGKILL (uninterruptible sleep), which the caller reports as well.
 */
export async function endAll(processes: readonly LeftRunning[], graceMs = 5_000): Promise<number[]> {
  const started = new Map(processes.map((p) => [p.pid, startTime(p.pid)]));
  const signal = (name: NodeJS.Signals) => {
    for (const [pid, at] of started) {
      if (!alive(pid, at)) continue;
      try {
        // A stopped process (a test's SIGSTOP) takes its SIGTERM only once continued.
        process.kill(pid, 'SIGCONT');
        process.kill(pid, name);
      } catch {
        // gone meanwhile
      }
    }
  };
  const still = () => [...started].filter(([pid, at]) => alive(pid, at)).map(([pid]) => pid);
  const waitGone = async (ms: number) => {
    for (const deadline = Date.now() + ms; still().length > 0 && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 50));
  };
  signal('SIGTERM');
  await waitGone(graceMs);
  signal('SIGKILL');
  await waitGone(2_000);
  return still();
}
