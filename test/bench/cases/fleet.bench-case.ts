/**
 * A fleet on one loopback sshd (sshd's default MaxStartups and MaxSessions): N = 10, 50, 200
 * machines, each its own ssh_config alias (so its own connection) and its own mesh_dir; db1
 * provides pg-main, every other machine consumes it. At each N, measured in the same run:
 * - `mesh status` (whole CLI) against the floor: `xargs -P 8` running one `ssh <alias> cat
 *   <its files>` per machine (one handshake and one session each);
 * - a provider-wide rotation (`mesh rotate --provider --yes`, whole CLI) against the floor of
 *   the same round trips in plain ssh: per machine one ControlMaster handshake and four
 *   sessions (`xargs -P 8`);
 * - the window of every pair (receipt's applied_at → consumer rename, from the journal),
 *   median and max;
 * - the CPU of the provider's receipt watcher (its processes' utime+stime from /proc, over
 *   its lifetime), as a share of one core;
 * - the CONTROLLER's CPU per machine for the rotation and its floor: user+sys of the whole
 *   process tree (baton or xargs, every ssh, and the ControlMasters that fork away from them),
 *   through a subreaper wrapper (lib/process-tree-cpu.ts); the loopback sshd's side is not in it.
 * The provisioner is a stand-in on db1 in this process (lib/fleet-fixture.ts).
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { RECEIPTS_DIR } from '../../../src/mesh/digest.js';
import { sshdUnavailable, startSshd, type Sshd } from '../../helpers/sshd.js';
import type { BenchCase } from '../lib/context.js';
import { figure, type Figure } from '../lib/figure.js';
import {
  FLEET_PROVIDER,
  followProvider,
  makeFleet,
  rotationFloor,
  sh,
  windowsOf,
} from '../lib/fleet-fixture.js';
import { runTree } from '../lib/process-tree-cpu.js';
import { summarize } from '../lib/stats.js';
import { occupancy, occupancyWords, type Occupancy } from '../lib/place-occupancy.js';
import { sshTally, tallyWords } from '../lib/ssh-tally.js';
import { windowParts, windowPartsWords } from '../lib/window-parts.js';

const PROVIDER = FLEET_PROVIDER;
// BATON_BENCH_FLEET_SIZES=200 (comma-separated) measures only those sizes: a probe of one N
// without the half hour of the others.
const SIZES: readonly number[] = process.env['BATON_BENCH_FLEET_SIZES']
  ? process.env['BATON_BENCH_FLEET_SIZES'].split(',').map(Number)
  : [10, 50, 200];
const CONCURRENCY = 8;

/** CPU (ms) and lifetime (ms) of the processes whose command line names `marker`, sampled from /proc. */
function sampleWatchers(marker: string): { stop(): { cpuMs: number; lifeMs: number; processes: number } } {
  const tick = 100; // USER_HZ on Linux
  const seen = new Map<number, { first: number; last: number; cpu: number }>();
  const sample = () => {
    const now = performance.now();
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
        // The watcher is the remote shell (and perl) started by sshd with WATCH's arguments.
        if (!cmd.includes(marker) || cmd.includes('ssh\0')) continue;
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const cpu = ((Number(fields[11]) + Number(fields[12])) * 1000) / tick;
        const pid = Number(name);
        const entry = seen.get(pid);
        if (entry) {
          entry.last = now;
          entry.cpu = cpu;
        } else seen.set(pid, { first: now, last: now, cpu });
      } catch {
        // gone
      }
    }
  };
  const timer = setInterval(sample, 50);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      const entries = [...seen.values()];
      const cpuMs = entries.reduce((a, e) => a + e.cpu, 0);
      const lifeMs = entries.length
        ? Math.max(...entries.map((e) => e.last)) - Math.min(...entries.map((e) => e.first))
        : 0;
      return { cpuMs, lifeMs, processes: entries.length };
    },
  };
}

/**
 * The loopback sshd's CPU so far (ms): its own and its reaped children's — every connection's
 * sshd, the login shells and what they ran (the agent, or the floor's `cat`/`true`). On this
 * one host the "machines" share the controller's two cores, so their side is in the wall time.
 */
function sshdCpuMs(sshd: Sshd): number {
  const pid = readFileSync(path.join(sshd.dir, 'sshd.pid'), 'utf8').trim();
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / 100;
}

/** Runs `run`, then waits for sshd to have reaped the run's sessions (masters exit after it): sshd's CPU in it. */
async function withSshdCpu<T>(sshd: Sshd, run: () => Promise<T>): Promise<{ result: T; sshdMs: number }> {
  const before = sshdCpuMs(sshd);
  const result = await run();
  await new Promise((r) => setTimeout(r, 500));
  return { result, sshdMs: sshdCpuMs(sshd) - before };
}

export const fleetCase: BenchCase = {
  name: 'fleet',
  async run(ctx) {
    const unavailable = sshdUnavailable();
    if (unavailable)
      return {
        figures: [],
        skipped: [{ id: 'fleet', title: 'A fleet on one loopback sshd', reason: unavailable }],
      };
    const figures: Figure[] = [];
    let sshd: Sshd | undefined;
    let provisioner: { stop(): void } | undefined;
    try {
      // sshd's own defaults (MaxStartups 10:30:100, MaxSessions 10): the limits a fleet meets.
      sshd = await startSshd({ settings: { MaxStartups: undefined } });
      for (const n of SIZES) {
        const fleet = makeFleet(ctx, sshd, n, 'fleet');
        const { root, machines, config, inventory, providesDir, meshOf } = fleet;
        provisioner?.stop();
        provisioner = followProvider(providesDir);
        const env = { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' };
        let traced = 0;
        const traceFile = () => path.join(root, `places-${traced++}.txt`);
        const rotate = async (runEnv: NodeJS.ProcessEnv = env) => {
          const watcher = sampleWatchers(path.join(providesDir, RECEIPTS_DIR));
          const trace = traceFile();
          const windowsTrace = `${trace}.windows`;
          const startedAt = Date.now();
          const before = sshdCpuMs(sshd!);
          // The whole tree's CPU: baton, its ssh, and the masters that fork away from them.
          const run = await runTree(
            fleet.batonArgv([
              'mesh',
              'rotate',
              '--provider',
              PROVIDER,
              '--inventory',
              inventory,
              '--yes',
              '--wait',
              '120',
              '--timeout',
              '60',
            ]),
            { cwd: root, env: { ...runEnv, BATON_TRACE_PLACES: trace, BATON_TRACE_WINDOWS: windowsTrace } },
          );
          const endedAt = startedAt + run.wallMs;
          await new Promise((r) => setTimeout(r, 500));
          const sshdMs = sshdCpuMs(sshd!) - before;
          const cpu = watcher.stop();
          const windows = run.exitCode === 0 ? windowsOf(fleet, run.stdout) : [];
          if (windows.length !== n - 1)
            throw new Error(
              `fleet ${n}: the rotation (exit ${run.exitCode}) applied ${windows.length} of ${n - 1} pairs: ${run.stdout.slice(-2000)}${run.stderr.slice(-1000)}`,
            );
          return {
            ms: run.wallMs,
            windows,
            cpu,
            controllerCpuMs: run.cpuMs,
            sshdMs,
            places: occupancy(trace, startedAt, endedAt),
            parts: windowParts(windowsTrace),
          };
        };
        ctx.log(`fleet: ${n} machines — a first rotation (creates every file)`);
        await rotate();

        // Untimed: the ssh processes one rotation and one status start, per machine and operation.
        ctx.log(`fleet: ${n} machines — counting the ssh processes of a rotation and a status`);
        const tally = sshTally(ctx.tempDir(`fleet-tally-${n}`));
        await rotate(tally.env(env));
        const rotationTally = tallyWords(tally.take(), 'db1');
        const tallyStatus = await runTree(
          fleet.batonArgv([
            'mesh',
            'status',
            '--provider',
            PROVIDER,
            '--inventory',
            inventory,
            '--timeout',
            '60',
          ]),
          { cwd: root, env: tally.env(env) },
        );
        if (tallyStatus.exitCode !== 0)
          throw new Error(`fleet ${n}: the counted mesh status exited ${tallyStatus.exitCode}`);
        const statusTally = tallyWords(tally.take(), 'db1');

        // The floors: the same machines in plain ssh, `xargs -P 8`.
        const files = (m: string) =>
          m === 'db1'
            ? `${providesDir}/* ${providesDir}/${RECEIPTS_DIR}/*`
            : `${path.join(meshOf(m), 'consumes', PROVIDER)}/*`;
        // One command per machine, run by xargs as the fleet's floor (globs expand on the machine).
        const floorList = path.join(root, 'floor-status.txt');
        writeFileSync(
          floorList,
          machines.map((m) => `ssh -F ${config} -T ${m} 'cat ${files(m)}' >/dev/null\n`).join(''),
        );
        const statusFloor = async () => {
          const started = performance.now();
          await sh(`xargs -P ${CONCURRENCY} -d '\\n' -I{} sh -c '{}' < ${floorList}`);
          return performance.now() - started;
        };
        const runRotationFloor = rotationFloor({ root, config, machines }, CONCURRENCY);
        const statusRuns: number[] = [];
        const statusFloors: number[] = [];
        const statusSshd: number[] = [];
        const statusFloorSshd: number[] = [];
        const statusPlaces: (Occupancy | undefined)[] = [];
        for (let i = 0; i < 3; i++) {
          ctx.log(`fleet: ${n} machines — mesh status ${i + 1} of 3, and its floor`);
          const trace = traceFile();
          const startedAt = Date.now();
          const started = performance.now();
          const before = sshdCpuMs(sshd);
          const status = await fleet.baton(
            ['mesh', 'status', '--provider', PROVIDER, '--inventory', inventory, '--timeout', '60'],
            { env: { BATON_TRACE_PLACES: trace } },
          );
          if (status.exitCode !== 0)
            throw new Error(
              `fleet ${n}: mesh status exited ${status.exitCode}: ${status.stdout.slice(-2000)}`,
            );
          statusRuns.push(performance.now() - started);
          statusPlaces.push(occupancy(trace, startedAt, Date.now()));
          await new Promise((r) => setTimeout(r, 500));
          statusSshd.push((sshdCpuMs(sshd) - before) / n);
          const floor = await withSshdCpu(sshd, statusFloor);
          statusFloors.push(floor.result);
          statusFloorSshd.push(floor.sshdMs / n);
        }
        const rotations: Awaited<ReturnType<typeof rotate>>[] = [];
        const rotationFloors: { ms: number; cpuMs: number; sshdMs: number }[] = [];
        for (let i = 0; i < 2; i++) {
          ctx.log(`fleet: ${n} machines — provider-wide rotation ${i + 1} of 2, and its floor`);
          rotations.push(await rotate());
          const floor = await withSshdCpu(sshd, runRotationFloor);
          rotationFloors.push({ ...floor.result, sshdMs: floor.sshdMs });
        }
        const st = summarize(statusRuns);
        const sf = summarize(statusFloors);
        const rt = summarize(rotations.map((r) => r.ms));
        const rf = summarize(rotationFloors.map((f) => f.ms));
        // Per machine: every machine of the fleet, db1 included (the floor touches each one the same way).
        const cpuPer = summarize(rotations.map((r) => r.controllerCpuMs / n));
        const floorCpuPer = summarize(rotationFloors.map((f) => f.cpuMs / n));
        const windows = summarize(rotations.flatMap((r) => r.windows));
        const cpuMs = rotations.reduce((a, r) => a + r.cpu.cpuMs, 0);
        const lifeMs = rotations.reduce((a, r) => a + r.cpu.lifeMs, 0);
        const share = lifeMs > 0 ? (100 * cpuMs) / lifeMs : 0;
        figures.push(
          figure({
            id: `fleet.status-${n}`,
            title: `Fleet of ${n}: mesh status over ${n} machines on one loopback sshd (median of 3, whole CLI)`,
            measured: {
              label: `baton mesh status, ${n - 1} pairs`,
              value: st.median,
              unit: 'ms',
              summary: st,
            },
            baseline: {
              label: `xargs -P ${CONCURRENCY} ssh <alias> cat <its files>, one per machine`,
              value: sf.median,
              unit: 'ms',
              summary: sf,
            },
            goal: { kind: 'ratio', max: 1.3 },
            notes: [
              `each machine its own ssh_config alias and connection; --concurrency ${CONCURRENCY} (default)`,
              `the machines' side (the loopback sshd, its sessions and what they ran) per machine: ${summarize(statusSshd).median.toFixed(0)} ms CPU against the floor's ${summarize(statusFloorSshd).median.toFixed(0)} ms`,
              ...statusPlaces.map((o, i) => `run ${i + 1}: ${occupancyWords(o)}`),
            ],
          }),
          figure({
            id: `fleet.rotation-${n}`,
            title: `Fleet of ${n}: provider-wide rotation, ${n - 1} pairs (median of 2, whole CLI)`,
            measured: {
              label: `baton mesh rotate --provider --yes`,
              value: rt.median,
              unit: 'ms',
              summary: rt,
            },
            baseline: {
              label: `xargs -P ${CONCURRENCY}: per machine one ControlMaster handshake and 4 sessions`,
              value: rf.median,
              unit: 'ms',
              summary: rf,
            },
            goal: { kind: 'ratio', max: 1.3 },
            notes: [
              'the stand-in provisioner writes every receipt as soon as the provider files change',
              ...rotations.map((r, i) => `run ${i + 1}: ${occupancyWords(r.places)}`),
              // What the rotation costs each machine in ssh (src/operations/rotate.ts, rotation-run-effect.ts):
              // the protocol's minimum — one read (the resolve), one write, one channel for the rename.
              "ssh per consumer machine (this tree's build; a BATON_BENCH_BIN build may differ, its counts are in fleet.rotation-cpu's notes): 1 handshake and 1 session, the agent session that opens the connection (the first seven's while db1's lock is taken, answering a hello: src/operations/provider-locks.ts), carries the resolve's read, the consumer record and the stage, and is then made the rename channel (2 round trips on it: its clock, the rename); on db1: the handshake, the lock, the agent session (the read, the stage, the record writes, the keep; then made the channel: its clock, the provider renames), the receipt watcher, and a second agent session for what follows the renames (the last record, the discard) — src/transport/ssh-serve.ts",
            ],
          }),
          figure({
            id: `fleet.rotation-cpu-${n}`,
            title: `Fleet of ${n}: provider-wide rotation, the controller's CPU per machine (median of 2)`,
            measured: {
              label: 'baton mesh rotate: user+sys of baton, its ssh and their masters ÷ machines',
              value: cpuPer.median,
              unit: 'ms CPU/machine',
              summary: cpuPer,
            },
            baseline: {
              label: `the floor's xargs, ssh and masters ÷ machines`,
              value: floorCpuPer.median,
              unit: 'ms CPU/machine',
              summary: floorCpuPer,
            },
            goal: { kind: 'none' },
            notes: [
              `ssh processes started (a separate, counted run; each machine's ControlMaster is forked by its first ssh, not counted here): rotation — ${rotationTally}; mesh status — ${statusTally}; the floor: per machine 1 sh, 4 ssh, the master and 1 ssh -O exit`,
              'the whole process tree through a subreaper (test/bench/lib/process-tree-cpu.ts); the loopback sshd the machines share is not in it',
              `per rotation: ${rotations.map((r) => (r.controllerCpuMs / n).toFixed(0)).join(', ')} ms; floor: ${rotationFloors.map((f) => (f.cpuMs / n).toFixed(0)).join(', ')} ms`,
              `the machines' side (the loopback sshd, its sessions and what they ran) per machine: ${rotations.map((r) => (r.sshdMs / n).toFixed(0)).join(', ')} ms; floor: ${rotationFloors.map((f) => (f.sshdMs / n).toFixed(0)).join(', ')} ms`,
            ],
          }),
          figure({
            id: `fleet.window-${n}`,
            title: `Fleet of ${n}: window per pair, receipt → consumer rename (median over ${windows.n} pairs of 2 rotations)`,
            measured: {
              label: 'applied_at → consumer end renamed',
              value: windows.median,
              unit: 'ms',
              summary: windows,
            },
            goal: { kind: 'absolute', max: 50, unit: 'ms' },
            notes: [
              `max ${windows.max.toFixed(0)} ms (goal ≤ 200 ms); windows per rotation: ${rotations.map((r) => `median ${summarize(r.windows).median.toFixed(0)} / max ${summarize(r.windows).max.toFixed(0)} ms`).join('; ')}`,
              // Round 11: where each window went (BATON_TRACE_WINDOWS, lib/window-parts.ts).
              ...rotations.map((r, i) => `rotation ${i + 1}: ${windowPartsWords(r.parts)}`),
            ],
          }),
          figure({
            id: `fleet.watcher-cpu-${n}`,
            title: `Fleet of ${n}: the provider's receipt watcher, CPU over its lifetime (2 rotations)`,
            measured: { label: 'utime+stime of the watcher processes on db1', value: cpuMs, unit: 'ms CPU' },
            goal: { kind: 'none' },
            notes: [
              `${share.toFixed(1)}% of one core over ${(lifeMs / 1000).toFixed(1)} s of watching (goal ≤ 5%); ${rotations.map((r) => r.cpu.processes).join(' + ')} processes`,
            ],
          }),
        );
      }
      return { figures, skipped: [] };
    } finally {
      provisioner?.stop();
      await sshd?.stop();
    }
  },
};
