/**
 * `mesh plan` on 10,000 pairs: pure planning (planRotation over a loaded inventory; no
 * resolution, no I/O), against ten times the same planning on 1,000 pairs. A ratio near 1 says
 * planning grows linearly with the mesh; a ratio near 10 says it is quadratic.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadInventory, type Inventory } from '../../../src/mesh/inventory.js';
import { planRotation } from '../../../src/mesh/rotation-plan.js';
import type { BenchCase, BenchContext } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { starInventoryYaml } from '../lib/mesh-fixture.js';
import { median, summarize } from '../lib/stats.js';

function load(ctx: BenchContext, consumers: number): { inventory: Inventory; loadMs: number } {
  const file = path.join(ctx.tempDir(`plan-${consumers}`), 'mesh.yaml');
  writeFileSync(file, starInventoryYaml(consumers));
  const started = performance.now();
  const inventory = loadInventory(file);
  return { inventory, loadMs: performance.now() - started };
}

/**
 * Times `runs` blocks of `perBlock` plans each. The baseline is timed as blocks of ten 1,000-pair
 * plans, not as single plans × 10: a lone 1-ms plan usually finishes before any garbage
 * collection while every 10,000-pair plan pays for one, and the ratio would measure the
 * collector instead of the algorithm.
 */
function planTimes(inventory: Inventory, runs: number, expectPairs: number, perBlock = 1): number[] {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    for (let j = 0; j < perBlock; j++) {
      const plan = planRotation(inventory, { by: 'provider', name: 'pg' });
      if (plan.pairs.length !== expectPairs || plan.holders.length !== expectPairs + 1)
        throw new Error(`planned ${plan.pairs.length} pairs on ${plan.holders.length} holders`);
    }
    times.push(performance.now() - started);
  }
  return times;
}

export const planCase: BenchCase = {
  name: 'plan',
  async run(ctx) {
    const big = load(ctx, 10_000);
    const small = load(ctx, 1_000);
    ctx.log('plan: 5 plans of 10,000 pairs and 5 blocks of ten 1,000-pair plans, after one warm-up');
    planTimes(big.inventory, 1, 10_000);
    planTimes(small.inventory, 1, 1_000);
    const bigTimes = planTimes(big.inventory, 5, 10_000);
    const smallBlocks = planTimes(small.inventory, 5, 1_000, 10);
    const s = summarize(bigTimes);
    return {
      figures: [
        figure({
          id: 'plan.10000-pairs',
          title: 'mesh plan: planning 10,000 pairs (in-process, no resolution)',
          measured: { label: 'planRotation, 10,000 pairs', value: s.median, unit: 'ms', summary: s },
          baseline: {
            label: 'planning 1,000 pairs 10 times in a row',
            value: median(smallBlocks),
            unit: 'ms',
          },
          goal: { kind: 'ratio', max: 1.5 },
          notes: [
            'one provider, 10,000 consumers on 10,000 machines, --provider pg',
            `loading the inventory (YAML + validation) took ${big.loadMs.toFixed(0)} ms for 10,000 pairs, ${small.loadMs.toFixed(0)} ms for 1,000`,
          ],
        }),
      ],
      skipped: [],
    };
  },
};
