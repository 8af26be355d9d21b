/**
 * An idle `--watch` reads nothing it read before — measured on the REAL process (issue 46): the
 * built `baton provision postgres --watch` (heartbeat and all) against the sandbox PostgreSQL
 * with 5,000 applied roles, under `strace -f --seccomp-bpf -e trace=getdents64` (only that one
 * syscall stops the process, so its CPU is not strace's). Across idle cycles — counted by the
 * heartbeat each cycle writes — it reports:
 * - directory listings (getdents64) per idle cycle, goal 0 (a full pass comes at most every
 *   60 s, FULL_SCAN_MS in src/provisioner/dir-changes.ts; the idle window here is shorter, and
 *   a listing in it is reported, not hidden);
 * - the provisioner's CPU per idle cycle (utime+stime of its pid from /proc), against this
 *   process doing a readdir + 5,000 stats of the same directory — the poll a detector-less
 *   watcher would make. The round 6 in-process figure (runCycle) could not see the heartbeat.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { heartbeatPath, parseHeartbeat } from '../../../src/mesh/provisioner-heartbeat.js';
import { RECEIPTS_DIR } from '../../../src/mesh/digest.js';
import { startPostgres } from '../../../src/sandbox/postgres.js';
import { psqlMissing } from '../../helpers/psql.js';
import { BIN, type BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { summarize } from '../lib/stats.js';

const ROLES = Number(process.env['BATON_BENCH_IDLE_ROLES'] ?? '5000');
const IDLE_CYCLES = 30;
const INTERVAL_S = 0.5;
const PROVIDER = 'pg-idle';
const USER_HZ = 100;

function straceMissing(): string | undefined {
  return spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0
    ? undefined
    : 'strace is not installed (apt-get install strace)';
}

/** Listings in strace's output (`-y` names each fd's path), by directory. */
function listings(trace: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of trace.matchAll(/getdents64\(\d+<([^>]*)>/g)) out.set(m[1]!, (out.get(m[1]!) ?? 0) + 1);
  return out;
}

function cpuOfPid(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
}

export const idleWatchCase: BenchCase = {
  name: 'idle-watch',
  async run(ctx) {
    const missing = psqlMissing() ?? straceMissing();
    if (missing)
      return {
        figures: [],
        skipped: [{ id: 'idle-watch', title: 'An idle --watch, the real process', reason: missing }],
      };
    ctx.log('idle-watch: starting the sandbox PostgreSQL');
    const pg = await startPostgres();
    let child: ReturnType<typeof spawn> | undefined;
    let pid: number | undefined;
    try {
      const meshDir = ctx.tempDir('idle-watch', { tmpfs: true });
      const scratch = ctx.tempDir('idle-watch-trace');
      const provides = path.join(meshDir, 'provides', PROVIDER);
      mkdirSync(provides, { recursive: true, mode: 0o700 });
      for (let i = 0; i < ROLES; i++) {
        const role = `idle_role_${String(i).padStart(5, '0')}`;
        writeFileSync(path.join(provides, `${role}.next`), randomBytes(32).toString('base64url'), {
          mode: 0o600,
        });
        renameSync(path.join(provides, `${role}.next`), path.join(provides, role));
      }
      const traceFile = path.join(scratch, 'strace.out');
      let output = '';
      child = spawn(
        'strace',
        [
          '-f',
          '--seccomp-bpf',
          '-y',
          '-qq',
          '-e',
          'trace=getdents64',
          '-o',
          traceFile,
          process.execPath,
          BIN,
          'provision',
          'postgres',
          '--mesh-dir',
          meshDir,
          '--provider',
          PROVIDER,
          '--pg-host',
          pg.host,
          '--pg-port',
          String(pg.port),
          '--superuser',
          pg.superuser,
          '--superuser-file',
          pg.superuserPasswordFile,
          '--watch',
          '--interval',
          String(INTERVAL_S),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } },
      );
      child.stdout?.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
      child.stderr?.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-4000)));
      const exited = new Promise<void>((resolve) => child!.once('exit', () => resolve()));
      const beat = heartbeatPath(provides);
      /** Resolves at the next `n` distinct heartbeats (one per finished cycle); their times. */
      const cycles = async (n: number, timeoutMs: number): Promise<number> => {
        const seen = new Set<string>();
        const until = performance.now() + timeoutMs;
        while (seen.size < n) {
          if (child!.exitCode !== null) throw new Error(`the provisioner exited: ${output}`);
          if (performance.now() > until)
            throw new Error(`${seen.size} of ${n} cycles in ${timeoutMs} ms: ${output}`);
          const read = existsSync(beat) ? parseHeartbeat(readFileSync(beat, 'utf8')) : undefined;
          if (read?.login === 'ok') {
            seen.add(read.at);
            pid = read.pid;
          }
          await new Promise((r) => setTimeout(r, 20));
        }
        return seen.size;
      };
      ctx.log(`idle-watch: the real --watch creating ${ROLES} roles (its first cycle)`);
      const applied = path.join(provides, RECEIPTS_DIR);
      const until = performance.now() + 20 * 60_000;
      while (!existsSync(applied) || readdirSync(applied).filter((n) => !n.startsWith('.')).length < ROLES) {
        if (child.exitCode !== null) throw new Error(`the provisioner exited: ${output}`);
        if (performance.now() > until) throw new Error(`not every role applied in 20 min: ${output}`);
        await new Promise((r) => setTimeout(r, 500));
      }
      // Settles: the cycle after the apply, racy stat caches (a file written within its mtime's granularity).
      await cycles(4, 120_000);
      ctx.log(`idle-watch: ${IDLE_CYCLES} idle cycles at --interval ${INTERVAL_S}`);
      const before = readFileSync(traceFile, 'utf8').length;
      const cpuBefore = cpuOfPid(pid!);
      const started = performance.now();
      const counted = await cycles(IDLE_CYCLES, 120_000);
      const idleMs = performance.now() - started;
      const cpuAfter = cpuOfPid(pid!);
      const idle = listings(readFileSync(traceFile, 'utf8').slice(before));
      const idleListings = [...idle.values()].reduce((a, b) => a + b, 0);
      const cpuPerCycle = (cpuAfter - cpuBefore) / counted;
      process.kill(pid!, 'SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);

      const floor: number[] = [];
      for (let i = 0; i < 15; i++) {
        const t = process.cpuUsage();
        for (const name of readdirSync(provides))
          if (!name.startsWith('.')) statSync(path.join(provides, name));
        const used = process.cpuUsage(t);
        floor.push((used.user + used.system) / 1000);
      }
      const floorS = summarize(floor);
      const note = `the real process (bin/baton.js provision postgres --watch --interval ${INTERVAL_S}) under strace --seccomp-bpf; ${ROLES} roles; mesh dir on tmpfs; ${counted} idle cycles in ${(idleMs / 1000).toFixed(1)} s (a full pass at most every 60 s)`;
      return {
        figures: [
          figure({
            id: `idle-watch.listings-${ROLES}`,
            title: `Idle --watch over ${ROLES} applied roles: directory listings (getdents64) per idle cycle`,
            measured: {
              label: 'getdents64 per idle cycle',
              value: idleListings / counted,
              unit: 'listings/cycle',
            },
            goal: { kind: 'absolute', max: 0, unit: 'listings/cycle' },
            notes: [
              note,
              idleListings === 0
                ? 'no directory listed in the idle window'
                : `listed: ${[...idle].map(([dir, n]) => `${dir} ×${n}`).join(', ')}`,
            ],
          }),
          figure({
            id: `idle-watch.cpu-${ROLES}`,
            title: `Idle --watch over ${ROLES} applied roles: CPU per idle cycle (the real process)`,
            measured: {
              label: 'utime+stime of the provisioner ÷ cycles',
              value: cpuPerCycle,
              unit: 'ms CPU',
            },
            baseline: {
              label: `readdir + ${ROLES} stats, in the bench process (median of 15)`,
              value: floorS.median,
              unit: 'ms CPU',
              summary: floorS,
            },
            goal: { kind: 'ratio', max: 1 },
            notes: [
              note,
              `CPU from /proc/<pid>/stat at ${1000 / USER_HZ} ms resolution, over all ${counted} cycles`,
            ],
          }),
        ],
        skipped: [],
      };
    } finally {
      // The provisioner (strace's child) first, then strace: neither outlives the case.
      for (const p of [pid, child?.pid])
        try {
          if (p !== undefined) process.kill(p, 'SIGKILL');
        } catch {
          // already gone
        }
      await pg.destroy();
    }
  },
};
