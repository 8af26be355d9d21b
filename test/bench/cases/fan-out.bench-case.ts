/**
 * Fan-out: a rotation (`mesh rotate --yes`: the plain runner, the real flow, journal and local
 * transport) over 1,000 holders and 500 pairs, with 20 ms added to every transport call, vs
 * the floor of that latency alone: 20 ms × ⌈calls in the phase ÷ concurrency⌉, summed over
 * the phases (resolve 1,000 · prepare 1,000 · commit provider ends 500 · read receipts 500 ·
 * commit consumer ends 500). Each provider's receipt is there by the time it is read
 * (withLiveProvisioner), so the consumer ends follow on the first receipt read.
 *
 * In-process rather than the CLI: the latency is an option of the local transport that the
 * CLI does not expose (and must not: it exists for this measurement).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runRotationPlain } from '../../../src/app/rotation-plain.js';
import { mapBounded } from '../../../src/mesh/map-bounded.js';
import { transportsFor } from '../../../src/transport/make-transport.js';
import { withLatency } from '../lib/slow-transport.js';
import type { BenchCase, BenchContext } from '../lib/context.js';
import { figure, type Figure } from '../lib/figure.js';
import { disjointMesh, type DisjointMesh } from '../lib/mesh-fixture.js';
import { withLiveProvisioner } from '../../mesh/receipt-writer.js';
import { summarize } from '../lib/stats.js';

export const LATENCY_MS = 20;
export const FAN_OUT_PAIRS = 500;

/** The calls each phase makes, in order: every holder resolves and stages; provider ends, their receipts, then consumer ends. */
export function phaseCalls(mesh: DisjointMesh): number[] {
  const holders = mesh.plan.holders.length;
  const providerEnds = mesh.plan.holders.filter((h) => h.receives.some((d) => d.end === 'provides')).length;
  const consumerEnds = mesh.plan.holders.filter((h) => h.receives.some((d) => d.end === 'consumes')).length;
  return [holders, holders, providerEnds, providerEnds, consumerEnds];
}

export function latencyFloorMs(
  calls: readonly number[],
  concurrency: number,
  latencyMs = LATENCY_MS,
): number {
  return calls.reduce((sum, n) => sum + latencyMs * Math.ceil(n / concurrency), 0);
}

/** The same phases with nothing but the sleep: what timers alone cost on this machine now. */
async function sleepOnlyMs(calls: readonly number[], concurrency: number): Promise<number> {
  const started = performance.now();
  for (const n of calls) {
    await mapBounded(
      Array.from({ length: n }),
      concurrency,
      () => new Promise<void>((resolve) => setTimeout(resolve, LATENCY_MS)),
    );
  }
  return performance.now() - started;
}

/** One whole rotation; returns its wall time after checking every holder holds its pair's secret. */
export async function rotateOnce(
  ctx: BenchContext,
  mesh: DisjointMesh,
  concurrency: number,
  tag: string,
): Promise<number> {
  const journalDir = ctx.tempDir(`journal-${tag}`);
  const deps = {
    transportFor: withLiveProvisioner(
      transportsFor(mesh.inventory.machines, { timeoutMs: 60_000 }, { wrap: withLatency(LATENCY_MS) }),
      (m) => path.join(mesh.root, 'machines', m),
    ),
    journalDir,
    operator: 'bench',
    resolve: { concurrency },
    concurrency,
    waitMs: 60_000,
    pollMs: 50,
  };
  let lines = 0;
  const started = performance.now();
  const { code, state } = await runRotationPlain({
    id: `bench-${tag}`,
    plan: mesh.plan,
    deps,
    yes: true,
    write: () => void lines++,
  });
  const wall = performance.now() - started;
  if (code !== 0 || state.step !== 'done') throw new Error(`the rotation ended ${state.step} (exit ${code})`);
  verifyDelivered(mesh);
  return wall;
}

/** Both ends of every pair hold the same 43-character secret: the rotation really happened. */
export function verifyDelivered(mesh: DisjointMesh): void {
  for (const pair of mesh.plan.pairs) {
    const machineRoot = (name: string) => path.join(mesh.root, 'machines', name);
    const provider = readFileSync(path.join(machineRoot(pair.providerMachine), pair.providerPath), 'utf8');
    const consumer = readFileSync(path.join(machineRoot(pair.consumerMachine), pair.consumerPath), 'utf8');
    if (provider !== consumer || provider.length < 32)
      throw new Error(`pair ${pair.key}: the two ends do not hold the same secret`);
  }
}

export const fanOutCase: BenchCase = {
  name: 'fan-out',
  async run(ctx) {
    const root = ctx.tempDir('fan-out', { tmpfs: true });
    const mesh = disjointMesh(root, FAN_OUT_PAIRS);
    const calls = phaseCalls(mesh);
    const figures: Figure[] = [];
    for (const concurrency of [8, 32]) {
      const runs = concurrency === 8 ? 2 : 3;
      const walls: number[] = [];
      const sleeps: number[] = [];
      for (let i = 0; i < runs; i++) {
        ctx.log(`fan-out: rotation ${i + 1}/${runs} at concurrency ${concurrency}`);
        walls.push(await rotateOnce(ctx, mesh, concurrency, `c${concurrency}-${i}`));
        sleeps.push(await sleepOnlyMs(calls, concurrency));
      }
      const wall = summarize(walls);
      const floor = latencyFloorMs(calls, concurrency);
      figures.push(
        figure({
          id: `fan-out.rotate.c${concurrency}`,
          title: `Fan-out: rotate 500 pairs / ${mesh.plan.holders.length} holders, 20 ms per call, concurrency ${concurrency}`,
          measured: {
            label: 'mesh rotate --yes (in-process)',
            value: wall.median,
            unit: 'ms',
            summary: wall,
          },
          baseline: { label: `floor 20 ms × Σ⌈calls ÷ ${concurrency}⌉`, value: floor, unit: 'ms' },
          goal: { kind: 'ratio', max: 1.5 },
          notes: [
            `median of ${runs}; phases resolve ${calls[0]} · prepare ${calls[1]} · commit provider ends ${calls[2]} · read receipts ${calls[3]} · consumer ends ${calls[4]} calls`,
            `the same phases doing nothing but the 20 ms sleep took ${summarize(sleeps).median.toFixed(0)} ms (timer slop on this machine now)`,
            `${concurrency === 8 ? 'concurrency 8 is the CLI default (--concurrency)' : 'concurrency 32 via --concurrency 32'}; machine roots on ${root.startsWith('/dev/shm') ? 'tmpfs' : 'the temp dir'}; every file is fsynced as in production`,
          ],
        }),
      );
    }
    return { figures, skipped: [] };
  },
};
