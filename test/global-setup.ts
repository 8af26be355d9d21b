/**
 * The run's global setup (vitest.config.ts `globalSetup`, in the main process): a run directory
 * that is every worker's TMPDIR and holds the process registry (test/helpers/process-registry.ts),
 * and a teardown that ends every process of the run still alive and FAILS the run naming them.
 * A test that failed or timed out, or a worker killed on timeout, leaves its servers running
 * otherwise: PostgreSQL and caching apps were found with parent 1 nearly two hours after a run.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { POSTGRES_TEMPLATES_ENV } from '../src/sandbox/postgres.js';
import { endRunMoto, MAIN_PID_ENV } from './helpers/moto-run.js';
import {
  createRegistry,
  endAll,
  leftRunning,
  ownWorkers,
  RUN_ENV,
  selfAndAncestors,
} from './helpers/process-registry.js';

/**
 * vitest calls the setup once for the root config and once per project (vitest.config.ts has two):
 * the run keeps the first call's directory and registry, and the later calls do nothing. A mark on
 * this process, not the environment: a vitest a test starts inherits the environment and must set
 * up a run of its own (test/suite/left-running.test.ts).
 */
const SET_UP = Symbol.for('baton.test.global-setup');

export default function setup(): () => Promise<void> {
  const marks = globalThis as { [SET_UP]?: true };
  if (marks[SET_UP]) return () => Promise.resolve();
  marks[SET_UP] = true;
  // A short name under the real temp dir: unix socket paths below it stay short enough.
  const runDir = mkdtempSync(path.join(os.tmpdir(), 'baton-suite-'));
  // 1777 as /tmp is: the sandbox PostgreSQL runs as `postgres` and needs its data dir reachable.
  chmodSync(runDir, 0o1777);
  createRegistry(runDir);
  // Set before the workers are forked: they, and everything they spawn, inherit both.
  process.env[RUN_ENV] = runDir;
  process.env.TMPDIR = runDir;
  // One initdb per PostgreSQL build for the run; each server starts from a copy (src/sandbox/postgres.ts).
  // Set to the empty string, every server runs its own initdb (how the saving was measured).
  process.env[POSTGRES_TEMPLATES_ENV] ??= path.join(runDir, 'pg-templates');
  // One moto_server for the run, started by the first file that asks (test/helpers/moto-run.ts);
  // it exits by itself once this process is gone, should the teardown below never run.
  process.env[MAIN_PID_ENV] = String(process.pid);

  return async () => {
    // The run's moto is the run's, not a leftover: stopped before the look for what a test left.
    await endRunMoto(runDir);
    const running = leftRunning(runDir, new Set([...selfAndAncestors(), ...(await ownWorkers())]));
    const unkillable = await endAll(running);
    // An ssh master of a baton that a test SIGKILLed outlives it by design, for ControlPersist
    // (src/transport/ssh-connection-share.ts): ended here, and said, but no leak of the suite's.
    const isMaster = (p: (typeof running)[number]) => /^ssh: \S+ \[mux\]$/.test(p.command.trim());
    const masters = running.filter((p) => isMaster(p) && !unkillable.includes(p.pid));
    const left = running.filter((p) => !masters.includes(p));
    if (masters.length > 0)
      process.stderr.write(
        `the suite ended ${masters.length} ssh master(s) left by a SIGKILLed baton (ControlPersist): ${masters.map((p) => p.pid).join(', ')}\n`,
      );
    if (left.length === 0) {
      rmSync(runDir, { recursive: true, force: true });
      return;
    }
    // vitest reports a teardown's error but still exits 0: the exit code is set here.
    process.exitCode = 1;
    // The run's files are kept when something was left: they may say why.
    const lines = left.map(
      (p) =>
        `  pid ${p.pid} (${p.why}): ${p.command.slice(0, 200)}${unkillable.includes(p.pid) ? ' — STILL RUNNING after SIGKILL' : ''}`,
    );
    throw new Error(
      `${left.length} process(es) the tests started were still running at the end of the run; ended now:\n${lines.join('\n')}\n` +
        `A test must stop what it starts (afterAll / try-finally) and register servers with test/helpers/process-registry.ts. Run directory kept: ${runDir}`,
    );
  };
}
