/**
 * The fleet case's provider-wide rotation, two builds in interleaved turns on ONE fleet, each
 * turn beside the same floor (docs/benchmarks.md,
 * "Round 13: the rotation's start-up and closing (issue 46)"): a candidate is compared with the
 * build before it rotation by rotation, A floor B floor …, in the same minutes, so a burst of
 * load lands on both. Not a case (no figures):
 *
 *   BATON_AB_BINS=/a/bin/baton.js,/b/bin/baton.js BATON_AB_N=50 BATON_AB_ROUNDS=4 \
 *     npx tsx test/bench/fleet-rotation-ab.ts
 *
 * Each rotation prints its time against the floor just before it, the controller's CPU per
 * machine (the whole tree, lib/process-tree-cpu.ts), and its start-up and closing (from the
 * place trace, lib/place-occupancy.ts), its windows (median and max); the end, each build's medians.
 * BATON_AB_BEFORE_READS=<bin>: that build predates the inventory's `reads:` (round 6's b4ed335,
 * issue 43's "before"): it rotates from a copy of the inventory without it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startSshd } from '../helpers/sshd.js';
import { BIN, makeContext } from './lib/context.js';
import { FLEET_PROVIDER, followProvider, makeFleet, rotationFloor, windowsOf } from './lib/fleet-fixture.js';
import { occupancy } from './lib/place-occupancy.js';
import { runTree } from './lib/process-tree-cpu.js';
import { summarize } from './lib/stats.js';

const N = Number(process.env['BATON_AB_N'] ?? 50);
const ROUNDS = Number(process.env['BATON_AB_ROUNDS'] ?? 3);
const BINS = (process.env['BATON_AB_BINS'] ?? BIN).split(',');
const CONCURRENCY = 8;
// BATON_AB_WRAP='strace -f -tt -o /tmp/x': every rotation under that command (a timeline, not a time).
const WRAP = (process.env['BATON_AB_WRAP'] ?? '').split(' ').filter(Boolean);
const name = (i: number) => String.fromCharCode(65 + i);
const BEFORE_READS = process.env['BATON_AB_BEFORE_READS'];

const ctx = makeContext(1);
const sshd = await startSshd({ settings: { MaxStartups: undefined } });
const fleet = makeFleet(ctx, sshd, N, 'rotation-ab');
const provisioner = followProvider(fleet.providesDir);
const env = { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' };
const withoutReads = path.join(fleet.root, 'mesh-without-reads.yaml');
writeFileSync(withoutReads, readFileSync(fleet.inventory, 'utf8').replace(/, reads: [a-z-]+/g, ''));
const inventoryOf = (bin: string) => (bin === BEFORE_READS ? withoutReads : fleet.inventory);
let traced = 0;

const rotate = async (bin: string) => {
  const trace = path.join(fleet.root, `places-${traced++}.txt`);
  const startedAt = Date.now();
  const argv = fleet.batonArgv([
    ...['mesh', 'rotate', '--provider', FLEET_PROVIDER, '--inventory', inventoryOf(bin)],
    ...['--yes', '--wait', '120', '--timeout', '60'],
  ]);
  argv[argv.indexOf(BIN)] = bin;
  const run = await runTree([...WRAP, ...argv], {
    cwd: fleet.root,
    env: { ...env, BATON_TRACE_PLACES: trace },
  });
  const windows = run.exitCode === 0 ? windowsOf(fleet, run.stdout) : [];
  if (windows.length !== N - 1)
    throw new Error(
      `${bin}: exit ${run.exitCode}, ${windows.length} of ${N - 1} pairs applied: ${run.stderr}`,
    );
  return {
    ms: run.wallMs,
    cpuMs: run.cpuMs,
    places: occupancy(trace, startedAt, startedAt + run.wallMs),
    windows: summarize(windows),
  };
};

// The fleet case's rotation floor (lib/fleet-fixture.ts).
const floor = rotationFloor(fleet, CONCURRENCY);

try {
  for (const bin of BINS) await rotate(bin); // creates every file; each build once, untimed
  const ratios = BINS.map((): number[] => []);
  const cpus = BINS.map((): number[] => []);
  const starts = BINS.map((): number[] => []);
  const closings = BINS.map((): number[] => []);
  const windowMedians = BINS.map((): number[] => []);
  const windowMaxes = BINS.map((): number[] => []);
  for (let round = 1; round <= ROUNDS; round++) {
    // A B, then B A: neither build always follows the other.
    const order = round % 2 === 1 ? [...BINS.keys()] : [...BINS.keys()].reverse();
    for (const i of order) {
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      const f = await floor();
      const r = await rotate(BINS[i]!);
      ratios[i]!.push(r.ms / f.ms);
      cpus[i]!.push(r.cpuMs / N);
      starts[i]!.push(r.places?.beforeMs ?? NaN);
      closings[i]!.push(r.places?.afterMs ?? NaN);
      windowMedians[i]!.push(r.windows.median);
      windowMaxes[i]!.push(r.windows.max);
      process.stdout.write(
        `${new Date().toISOString().slice(11, 19)} round ${round} ${name(i)} (load ${load}): ${r.ms.toFixed(0)} / ${f.ms.toFixed(0)} ms = ${(r.ms / f.ms).toFixed(3)}×; CPU ${(r.cpuMs / N).toFixed(1)} against ${(f.cpuMs / N).toFixed(1)} ms/machine; start-up ${r.places?.beforeMs.toFixed(0)} ms, closing ${r.places?.afterMs.toFixed(0)} ms; windows median ${r.windows.median.toFixed(0)}, max ${r.windows.max.toFixed(0)} ms\n`,
      );
    }
  }
  for (const [i, bin] of BINS.entries()) {
    const m = (xs: number[]) => summarize(xs).median;
    process.stdout.write(
      `${name(i)} ${bin}: ratio median ${m(ratios[i]!).toFixed(3)}× (${ratios[i]!.map((x) => x.toFixed(2)).join(', ')}); CPU ${m(cpus[i]!).toFixed(1)} ms/machine; start-up ${m(starts[i]!).toFixed(0)} ms; closing ${m(closings[i]!).toFixed(0)} ms; windows: median of medians ${m(windowMedians[i]!).toFixed(0)} ms, largest max ${Math.max(...windowMaxes[i]!).toFixed(0)} ms\n`,
    );
  }
} finally {
  provisioner.stop();
  await sshd.stop();
  ctx.cleanup();
}
