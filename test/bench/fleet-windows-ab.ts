/**
 * The fleet case's windows, two builds in interleaved turns on ONE fleet (docs/benchmarks.md,
 * "Round 12: the receipt's way"): on a shared machine a single figure means little, so a
 * candidate is compared with the build before it rotation by rotation, A B A B …, in the same
 * minutes. Not a case (nothing but windows, no floors):
 *
 *   BATON_AB_BINS=/a/bin/baton.js,/b/bin/baton.js BATON_AB_N=200 BATON_AB_ROUNDS=4 \
 *     npx tsx test/bench/fleet-windows-ab.ts
 *
 * Each rotation prints its windows (median / p90 / max), their parts (lib/window-parts.ts) and
 * how close together the stand-in wrote its receipts; the end, each build's rotations together.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startSshd } from '../helpers/sshd.js';
import { BIN, makeContext } from './lib/context.js';
import { FLEET_PROVIDER, followProvider, makeFleet, windowsOf } from './lib/fleet-fixture.js';
import { summarize } from './lib/stats.js';
import { windowParts, windowPartsWords } from './lib/window-parts.js';

const N = Number(process.env['BATON_AB_N'] ?? 200);
const ROUNDS = Number(process.env['BATON_AB_ROUNDS'] ?? 3);
const BINS = (process.env['BATON_AB_BINS'] ?? BIN).split(',');
const name = (i: number) => String.fromCharCode(65 + i);

const ctx = makeContext(1);
const sshd = await startSshd({ settings: { MaxStartups: undefined } });
const fleet = makeFleet(ctx, sshd, N, 'windows-ab');
const provisioner = followProvider(fleet.providesDir);
let traced = 0;
const rotate = (bin: string) =>
  new Promise<{ ok: boolean; stdout: string; trace: string; ms: number }>((resolve) => {
    const trace = path.join(fleet.root, `windows-${traced++}.txt`);
    const started = performance.now();
    execFile(
      process.execPath,
      [
        ...[bin, '--state-dir', fleet.state, 'mesh', 'rotate', '--provider', FLEET_PROVIDER],
        ...['--inventory', fleet.inventory, '--yes', '--wait', '120', '--timeout', '60'],
      ],
      {
        cwd: fleet.root,
        env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '', BATON_TRACE_WINDOWS: trace },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout) => resolve({ ok: !error, stdout, trace, ms: performance.now() - started }),
    );
  });
try {
  const first = await rotate(BINS[0]!);
  if (!first.ok) throw new Error(`the first rotation failed: ${first.stdout.slice(-2000)}`);
  const medians = BINS.map((): number[] => []);
  const windows = BINS.map((): number[] => []);
  for (let round = 1; round <= ROUNDS; round++)
    for (const [i, bin] of BINS.entries()) {
      const load = readFileSync('/proc/loadavg', 'utf8').split(' ')[0];
      const r = await rotate(bin);
      const w = r.ok ? windowsOf(fleet, r.stdout) : [];
      if (w.length !== N - 1) throw new Error(`build ${name(i)}: ${w.length} of ${N - 1} pairs applied`);
      const s = summarize(w);
      medians[i]!.push(s.median);
      windows[i]!.push(...w);
      process.stdout.write(
        `${new Date().toISOString().slice(11, 19)} round ${round} ${name(i)} (load ${load}, ${(r.ms / 1000).toFixed(1)} s): windows median ${s.median.toFixed(0)} / p90 ${s.p90.toFixed(0)} / max ${s.max.toFixed(0)} ms; ${windowPartsWords(windowParts(r.trace))}\n`,
      );
    }
  for (const [i, bin] of BINS.entries()) {
    const all = summarize(windows[i]!);
    process.stdout.write(
      `${name(i)} ${bin}: rotation medians ${medians[i]!.map((m) => m.toFixed(0)).join(', ')} ms; all ${all.n} windows median ${all.median.toFixed(0)} / p90 ${all.p90.toFixed(0)} / max ${all.max.toFixed(0)} ms\n`,
    );
  }
} finally {
  provisioner.stop();
  await sshd.stop();
  ctx.cleanup();
}
