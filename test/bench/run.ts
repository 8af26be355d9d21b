/**
 * `npm run bench`: every figure of docs/benchmarks.md with its baseline measured in the same run, the
 * ratio and the goal, as a table on stdout and a JSON summary in bench-results.json — both
 * written as each case finishes, so a run cut short keeps what it measured.
 *
 * Benchmarks, not tests: nothing here fails on a slow machine. A missed goal is printed and
 * recorded; the exit code is non-zero only when the harness itself could not run a case.
 *
 *   npm run bench                       all cases
 *   npm run bench -- --only startup,s3  some of them (names: see CASES)
 *   npm run bench -- --runs 20          more repetitions of the process figures
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { makeContext, REPO, type BenchCase } from './lib/context.js';
import { renderTable } from './lib/report.js';
import { runCases } from './lib/run-cases.js';
import { startupCase } from './cases/startup.bench-case.js';
import { s3StatusCase } from './cases/s3-status.bench-case.js';
import { firstFrameCase } from './cases/first-frame.bench-case.js';
import { fanOutCase } from './cases/fan-out.bench-case.js';
import { planCase } from './cases/plan.bench-case.js';
import { inventoryCase } from './cases/inventory.bench-case.js';
import { provisionerCase } from './cases/provisioner.bench-case.js';
import { terminalBytesCase } from './cases/terminal-bytes.bench-case.js';
import { rotationWindowCase } from './cases/rotation-window.bench-case.js';
import { rotationRollbackCase } from './cases/rotation-rollback.bench-case.js';
import { sshHandshakesCase } from './cases/ssh-handshakes.bench-case.js';
import { sshWindowCase } from './cases/ssh-window.bench-case.js';
import { alternatingWindowCase } from './cases/alternating-window.bench-case.js';
import { fleetCase } from './cases/fleet.bench-case.js';
import { provisioner5000Case } from './cases/provisioner-5000.bench-case.js';
import { loadedControllerCase } from './cases/loaded-controller.bench-case.js';
import { idleWatchCase } from './cases/idle-watch.bench-case.js';

const CASES: readonly BenchCase[] = [
  startupCase,
  s3StatusCase,
  firstFrameCase,
  fanOutCase,
  planCase,
  inventoryCase,
  provisionerCase,
  terminalBytesCase,
  rotationWindowCase,
  rotationRollbackCase,
  sshHandshakesCase,
  sshWindowCase,
  alternatingWindowCase,
  fleetCase,
  provisioner5000Case,
  loadedControllerCase,
  idleWatchCase,
];

export const RESULTS_FILE = path.join(REPO, 'bench-results.json');

export interface Machine {
  readonly cpus: number;
  readonly cpuModel: string;
  readonly node: string;
  readonly platform: string;
  /** 1-minute load average when the run started: read the figures against it. */
  readonly loadAverage: number;
}

function machine(): Machine {
  let cpus = os.availableParallelism();
  try {
    cpus = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    // os.availableParallelism() is the same question asked of libuv
  }
  let cpuModel = os.cpus()[0]?.model ?? 'unknown';
  try {
    cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpuModel;
  } catch {
    // not Linux: the model Node reports
  }
  return {
    cpus,
    cpuModel,
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    loadAverage: os.loadavg()[0]!,
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { only: { type: 'string' }, runs: { type: 'string', default: '15' } },
    allowPositionals: false,
  });
  const only = values.only
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = only?.filter((name) => !CASES.some((c) => c.name === name)) ?? [];
  if (unknown.length > 0) {
    process.stderr.write(
      `bench: unknown case ${unknown.join(', ')}; known: ${CASES.map((c) => c.name).join(', ')}\n`,
    );
    return 2;
  }
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) {
    process.stderr.write(`bench: --runs "${values.runs}" is not a positive whole number\n`);
    return 2;
  }
  const ctx = makeContext(runs);
  const host = machine();
  process.stderr.write(
    `bench: ${host.cpus} CPU(s), ${host.cpuModel}, Node ${host.node}, load ${host.loadAverage.toFixed(2)}\n`,
  );
  // Each case's rows are printed and the JSON rewritten as the case finishes; a signal keeps them
  // and removes the temp dirs (lib/run-cases.ts).
  const summary = await runCases(
    CASES.filter((c) => !only || only.includes(c.name)),
    ctx,
    { resultsFile: RESULTS_FILE, machine: { ...host }, cleanup: () => ctx.cleanup() },
  );
  const { figures, skipped, failed } = summary;
  process.stdout.write(`\nAll cases:\n${renderTable(figures, skipped, failed)}`);
  process.stdout.write(
    `\nMachine: ${host.cpus} CPU(s), ${host.cpuModel}, Node ${host.node}; load average ${host.loadAverage.toFixed(2)} → ${os.loadavg()[0]!.toFixed(2)}\n`,
  );
  process.stdout.write(`JSON summary: ${RESULTS_FILE}\n`);
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = await main();
