/**
 * `--concurrency 64` on a LOADED controller (issue 46): N machines (ssh_config aliases of one
 * loopback sshd whose MaxStartups lets everything in, so the only limit is the controller),
 * and 2 × nproc busy-loop processes at the controller's own priority while `mesh status` and a
 * provider-wide rotation run at `--concurrency 64` with baton's default `--timeout 15`. Round 6
 * measured 49 of 49 machines "no answer within 120 s" this way, with 0 drops in sshd's log.
 *
 * Reported, each against a goal of 0:
 * - machines `mesh status` called unreachable, split by what it said ("no answer within", "not
 *   reached: the controller was busy", anything else);
 * - machines the rotation left unresolved (a closed gate for a false reason), and its exit code;
 * - the limit's trajectory as it happened: baton's ssh children in flight, the most in each
 *   second (sampled from /proc every 100 ms), beside the host's CPU pressure.
 * The same `mesh status` at the default `--concurrency 8` under the same load is context.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { sshdUnavailable, startSshd, type Sshd } from '../../helpers/sshd.js';
import type { BenchCase } from '../lib/context.js';
import { figure, type Figure } from '../lib/figure.js';
import {
  FLEET_PROVIDER,
  followProvider,
  makeFleet,
  windowsOf,
  type BatonRun,
  type Fleet,
} from '../lib/fleet-fixture.js';

/** BATON_BENCH_LOADED_SIZE=20 for a short probe; the figure is at 50. */
const SIZE = Number(process.env['BATON_BENCH_LOADED_SIZE'] ?? '50');
const CONCURRENCY = 64;
const TIMEOUT_S = 15; // baton's default --timeout

/** 2 × nproc processes that never sleep: a controller whose cores are all taken. */
function saturate(): { stop(): void; count: number } {
  const count = 2 * os.availableParallelism();
  const children: ChildProcess[] = [];
  for (let i = 0; i < count; i++) children.push(spawn('perl', ['-e', '1 while 1'], { stdio: 'ignore' }));
  return {
    count,
    stop: () => {
      for (const child of children)
        if (child.pid !== undefined && child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** The most ssh children `pid` had at once in each second, and the host's PSI CPU "some avg10" then. */
function sampleInFlight(): {
  watch(pid: number): void;
  stop(): { perSecond: number[]; peak: number; pressure: number[] };
} {
  let parent: number | undefined;
  const perSecond: number[] = [];
  const pressure: number[] = [];
  const started = performance.now();
  const sample = () => {
    if (parent === undefined) return;
    let n = 0;
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
        const close = stat.lastIndexOf(')');
        const comm = stat.slice(stat.indexOf('(') + 1, close);
        const ppid = Number(stat.slice(close + 2).split(' ')[1]);
        if (ppid === parent && comm === 'ssh') n += 1;
      } catch {
        // gone between the listing and the read
      }
    }
    const second = Math.floor((performance.now() - started) / 1000);
    perSecond[second] = Math.max(perSecond[second] ?? 0, n);
    if (pressure[second] === undefined) {
      try {
        pressure[second] = Number(
          /^some avg10=([\d.]+)/m.exec(readFileSync('/proc/pressure/cpu', 'utf8'))?.[1] ?? NaN,
        );
      } catch {
        pressure[second] = NaN;
      }
    }
  };
  const timer = setInterval(sample, 100);
  return {
    watch: (pid) => (parent = pid),
    stop: () => {
      clearInterval(timer);
      const filled = Array.from({ length: perSecond.length }, (_, i) => perSecond[i] ?? 0);
      return {
        perSecond: filled,
        peak: Math.max(0, ...filled),
        pressure: Array.from({ length: pressure.length }, (_, i) => pressure[i] ?? NaN),
      };
    },
  };
}

type StatusJson = { pairs: { state: string; unreadable: { machine: string; reason: string }[] }[] };

/** Machines `mesh status --json` could not read, by machine, with what it said. */
function unreadOf(run: BatonRun): Map<string, string> {
  const out = new Map<string, string>();
  let parsed: StatusJson;
  try {
    parsed = JSON.parse(run.stdout) as StatusJson;
  } catch {
    throw new Error(`mesh status --json printed no JSON (exit ${run.exitCode}): ${run.stderr.slice(-2000)}`);
  }
  for (const pair of parsed.pairs) for (const u of pair.unreadable) out.set(u.machine, u.reason);
  return out;
}

function kinds(reasons: Iterable<string>): string {
  let noAnswer = 0;
  let notReached = 0;
  let other = 0;
  for (const r of reasons) {
    if (/not reached/.test(r)) notReached += 1;
    else if (/no answer within/.test(r)) noAnswer += 1;
    else other += 1;
  }
  return `${noAnswer} "no answer within", ${notReached} "not reached: the controller was busy", ${other} other`;
}

function trajectory(t: { perSecond: number[]; peak: number; pressure: number[] }): string {
  const psi = t.pressure.filter((p) => !Number.isNaN(p));
  const psiText = psi.length
    ? `; CPU pressure (PSI some avg10) ${Math.min(...psi).toFixed(0)}–${Math.max(...psi).toFixed(0)}%`
    : '';
  return `ssh in flight, most per second: ${t.perSecond.join(' ')} (peak ${t.peak})${psiText}`;
}

export const loadedControllerCase: BenchCase = {
  name: 'loaded-controller',
  async run(ctx) {
    const unavailable = sshdUnavailable();
    if (unavailable)
      return {
        figures: [],
        skipped: [{ id: 'loaded', title: '--concurrency 64 on a loaded controller', reason: unavailable }],
      };
    let sshd: Sshd | undefined;
    let provisioner: { stop(): void } | undefined;
    let load: { stop(): void; count: number } | undefined;
    try {
      // Everything let in (no MaxStartups drop): the controller is the only limit measured here.
      sshd = await startSshd({ settings: { MaxStartups: '400:30:800', MaxSessions: '20' } });
      const fleet: Fleet = makeFleet(ctx, sshd, SIZE, 'loaded');
      provisioner = followProvider(fleet.providesDir);
      const common = [
        '--provider',
        FLEET_PROVIDER,
        '--inventory',
        fleet.inventory,
        '--timeout',
        String(TIMEOUT_S),
      ];
      ctx.log(`loaded-controller: ${SIZE} machines — a first rotation, unloaded (creates every file)`);
      const first = await fleet.baton(['mesh', 'rotate', ...common, '--yes', '--wait', '120']);
      if (first.exitCode !== 0)
        throw new Error(`the unloaded first rotation exited ${first.exitCode}: ${first.stdout.slice(-2000)}`);

      load = saturate();
      ctx.log(`loaded-controller: ${load.count} busy loops started; settling 5 s`);
      await new Promise((r) => setTimeout(r, 5_000));
      const loadAt = os.loadavg()[0]!;

      const status = async (concurrency: number) => {
        const sampler = sampleInFlight();
        const started = performance.now();
        const run = await fleet.baton(
          ['mesh', 'status', ...common, '--concurrency', String(concurrency), '--json'],
          { onSpawn: (pid) => sampler.watch(pid) },
        );
        return {
          ms: performance.now() - started,
          unread: unreadOf(run),
          exitCode: run.exitCode,
          t: sampler.stop(),
        };
      };
      const statuses: Awaited<ReturnType<typeof status>>[] = [];
      for (let i = 0; i < 2; i++) {
        ctx.log(`loaded-controller: mesh status --concurrency ${CONCURRENCY} under load, ${i + 1} of 2`);
        statuses.push(await status(CONCURRENCY));
      }
      ctx.log(`loaded-controller: a provider-wide rotation --concurrency ${CONCURRENCY} under load`);
      const sampler = sampleInFlight();
      const started = performance.now();
      const rotation = await fleet.baton(
        ['mesh', 'rotate', ...common, '--concurrency', String(CONCURRENCY), '--yes', '--wait', '300'],
        { onSpawn: (pid) => sampler.watch(pid) },
      );
      const rotationMs = performance.now() - started;
      const rotationT = sampler.stop();
      const unresolved = [
        ...`${rotation.stdout}\n${rotation.stderr}`.matchAll(/(\S+) unresolved: (.*)$/gm),
      ].map((m) => m[2]!);
      const applied = rotation.exitCode === 0 ? windowsOf(fleet, rotation.stdout).length : 0;
      ctx.log('loaded-controller: mesh status at the default --concurrency 8 under the same load (context)');
      const at8 = await status(8);
      const loadEnd = os.loadavg()[0]!;
      load.stop();
      load = undefined;

      const unreachable = Math.max(...statuses.map((s) => s.unread.size));
      const context = `${2 * os.availableParallelism()} busy loops at the controller's priority; load average ${loadAt.toFixed(1)} → ${loadEnd.toFixed(1)}; --timeout ${TIMEOUT_S} (default); sshd MaxStartups 400:30:800 (no drop)`;
      const figures: Figure[] = [
        figure({
          id: `loaded.status-${SIZE}`,
          title: `Loaded controller: mesh status over ${SIZE} machines at --concurrency ${CONCURRENCY}, machines called unreachable (worst of 2)`,
          measured: {
            label: `baton mesh status --concurrency ${CONCURRENCY}`,
            value: unreachable,
            unit: 'machines',
          },
          goal: { kind: 'absolute', max: 0, unit: 'machines' },
          notes: [
            context,
            ...statuses.map(
              (s, i) =>
                `run ${i + 1}: ${(s.ms / 1000).toFixed(1)} s, exit ${s.exitCode}, ${s.unread.size} unread (${kinds(s.unread.values())}); ${trajectory(s.t)}`,
            ),
            `at --concurrency 8 (context): ${(at8.ms / 1000).toFixed(1)} s, exit ${at8.exitCode}, ${at8.unread.size} unread (${kinds(at8.unread.values())}); ${trajectory(at8.t)}`,
          ],
        }),
        figure({
          id: `loaded.rotation-${SIZE}`,
          title: `Loaded controller: provider-wide rotation over ${SIZE} machines at --concurrency ${CONCURRENCY}, machines left unresolved`,
          measured: {
            label: `baton mesh rotate --provider --concurrency ${CONCURRENCY}`,
            value: unresolved.length,
            unit: 'machines',
          },
          goal: { kind: 'absolute', max: 0, unit: 'machines' },
          notes: [
            context,
            `${(rotationMs / 1000).toFixed(1)} s, exit ${rotation.exitCode}, ${applied} of ${SIZE - 1} pairs applied; unresolved: ${kinds(unresolved)}`,
            trajectory(rotationT),
            ...(rotation.exitCode === 0
              ? []
              : [`its last words: ${rotation.stdout.slice(-600).replace(/\s+/g, ' ')}`]),
          ],
        }),
      ];
      return { figures, skipped: [] };
    } finally {
      load?.stop();
      provisioner?.stop();
      await sshd?.stop();
    }
  },
};
