/**
 * One moto_server for a whole suite run, shared by every file that asks for moto (startMoto in
 * test/helpers/moto-s3.ts): a Python start costs 2–2.5 CPU-s and ~6 s at load, and eleven files
 * started one each. Files stay apart by their names alone: each bucket and SSM prefix carries the
 * worker's pid, a counter, the time and random bytes, and no test lists what it did not create.
 *
 * The first file to ask starts the server (an exclusive `mkdir` in the run directory decides which)
 * and writes its port to `moto.json`; the others wait for that file. The server is detached from the
 * worker that started it (a worker ends with its file) and ends with the run: the teardown in
 * test/global-setup.ts stops it (endRunMoto), and the launcher exits by itself once the run's main
 * process is gone (a run killed before its teardown leaves no moto behind).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/sandbox/free-port.js';

/** The launcher that applies moto's state-changing requests one at a time (why: its doc comment). */
export const ONE_WRITE_AT_A_TIME = fileURLToPath(new URL('./moto-one-write-at-a-time.py', import.meta.url));
/** Set by test/global-setup.ts: the run's main process, which the shared moto outlives by at most a second. */
export const MAIN_PID_ENV = 'BATON_TEST_MAIN_PID';

const READY = 'moto.json';
const CLAIM = 'moto.starting';
const FAILED = 'moto.failed';
const STDERR = 'moto.stderr';
/** A Python start on a loaded 2-core machine has taken tens of seconds; the hook's timeout is 120 s. */
const START_MS = 90_000;

export async function waitForPort(port: number, child: ChildProcess, deadline: number): Promise<void> {
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`moto_server exited with ${child.exitCode} before it listened on ${port}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > deadline) throw new Error(`moto_server did not listen on 127.0.0.1:${port} within 90 s`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** The port of the run's moto_server in `runDir`, started here when no file asked before. */
export async function runMotoPort(runDir: string, python: string): Promise<number> {
  let first = true;
  try {
    mkdirSync(path.join(runDir, CLAIM));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    first = false;
  }
  if (first) return startRunMoto(runDir, python);
  const deadline = Date.now() + START_MS + 10_000;
  for (;;) {
    if (existsSync(path.join(runDir, READY)))
      return (JSON.parse(readFileSync(path.join(runDir, READY), 'utf8')) as { port: number }).port;
    if (existsSync(path.join(runDir, FAILED)))
      throw new Error(
        `the run's moto_server did not start: ${readFileSync(path.join(runDir, FAILED), 'utf8')}`,
      );
    if (Date.now() > deadline)
      throw new Error(
        `the run's moto_server was being started by another file and was not ready after ${deadline} ms`,
      );
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startRunMoto(runDir: string, python: string): Promise<number> {
  const port = await freePort();
  const stderr = openSync(path.join(runDir, STDERR), 'a');
  const watched = process.env[MAIN_PID_ENV];
  const child = spawn(python, [ONE_WRITE_AT_A_TIME, '127.0.0.1', String(port)], {
    detached: true,
    stdio: ['ignore', 'ignore', stderr],
    env: { ...process.env, ...(watched ? { BATON_MOTO_EXIT_WITH_PID: watched } : {}) },
  });
  closeSync(stderr);
  child.unref();
  try {
    await waitForPort(port, child, Date.now() + START_MS);
  } catch (error) {
    if (child.exitCode === null) child.kill('SIGKILL');
    const said = readFileSync(path.join(runDir, STDERR), 'utf8').slice(-4000);
    writeFileSync(path.join(runDir, FAILED), `${(error as Error).message}\n${said}`);
    throw new Error(`${(error as Error).message}\n${said}`, { cause: error });
  }
  const tmp = path.join(runDir, `${READY}.tmp`);
  writeFileSync(tmp, JSON.stringify({ port, pid: child.pid }));
  renameSync(tmp, path.join(runDir, READY));
  return port;
}

function alive(pid: number): boolean {
  try {
    // A zombie (its worker has not reaped it yet) has ended: state Z in /proc/<pid>/stat.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z /.test(stat);
  } catch {
    return false;
  }
}

/** Stops the run's moto_server, if a file started one (the global teardown, before it looks for leftovers). */
export async function endRunMoto(runDir: string): Promise<void> {
  const ready = path.join(runDir, READY);
  if (!existsSync(ready)) return;
  const { pid } = JSON.parse(readFileSync(ready, 'utf8')) as { pid: number };
  // Only the launcher this run started: a pid reused by another process is left alone.
  let command: string;
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return; // already gone
  }
  if (!command.includes(ONE_WRITE_AT_A_TIME)) return;
  // Its CPU is no worker's (it is detached from the one that started it): said, for the suite's figures.
  const [utime, stime] = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ')
    .slice(11, 13)
    .map(Number);
  process.stderr.write(
    `the run's moto_server used ${(((utime ?? 0) + (stime ?? 0)) / 100).toFixed(1)} CPU-s\n`,
  );
  process.kill(pid, 'SIGTERM');
  for (let waited = 0; waited < 3_000 && alive(pid); waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}
