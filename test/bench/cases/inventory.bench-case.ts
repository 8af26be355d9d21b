/**
 * Loading a 10,000-pair inventory (one provider, 10,000 consumers on their own machines):
 * read, YAML, validation and pairing, in-process — what every `mesh plan|rotate|resume` pays
 * before it can say anything. The baseline is JSON.parse of the same document, the floor of
 * any parser.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadInventory } from '../../../src/mesh/inventory.js';
import type { BenchCase } from '../lib/context.js';
import { figure } from '../lib/figure.js';
import { starInventoryYaml } from '../lib/mesh-fixture.js';
import { summarize } from '../lib/stats.js';

const PAIRS = 10_000;

export const inventoryCase: BenchCase = {
  name: 'inventory',
  async run(ctx) {
    const file = path.join(ctx.tempDir('inventory'), 'mesh.yaml');
    const yaml = starInventoryYaml(PAIRS);
    writeFileSync(file, yaml);
    const json = JSON.stringify({
      machines: [
        { name: 'db', address: 'machines/db', transport: 'local' },
        ...Array.from({ length: PAIRS }, (_, i) => ({
          name: `app${i}`,
          address: `machines/app${i}`,
          transport: 'local',
        })),
      ],
      providers: [{ name: 'pg', machine: 'db', kind: 'postgres' }],
      consumers: Array.from({ length: PAIRS }, (_, i) => ({
        name: `app${i}`,
        machine: `app${i}`,
        uses: ['pg'],
      })),
    });
    const runs = Math.max(5, Math.min(ctx.runs, 15));
    ctx.log(`inventory: ${runs} loads of ${PAIRS.toLocaleString('en')} pairs after one warm-up`);
    const loads: number[] = [];
    const floors: number[] = [];
    for (let i = 0; i <= runs; i++) {
      let started = performance.now();
      const inventory = loadInventory(file);
      const loadMs = performance.now() - started;
      if (inventory.pairs.length !== PAIRS)
        throw new Error(`loaded ${inventory.pairs.length} pairs, not ${PAIRS}`);
      started = performance.now();
      JSON.parse(json);
      const floorMs = performance.now() - started;
      if (i > 0) {
        loads.push(loadMs);
        floors.push(floorMs);
      }
    }
    const s = summarize(loads);
    const f = summarize(floors);
    return {
      figures: [
        figure({
          id: 'inventory.10000-pairs',
          title: 'Inventory: loading 10,000 pairs (read, YAML, validation, pairing)',
          measured: { label: 'loadInventory, 10,000 pairs', value: s.median, unit: 'ms', summary: s },
          baseline: { label: 'JSON.parse of the same document', value: f.median, unit: 'ms', summary: f },
          goal: { kind: 'absolute', max: 150, unit: 'ms' },
          notes: [
            `${runs} loads, median; ${Math.round(yaml.length / 1024)} KB of YAML; p90 ${s.p90.toFixed(0)} ms`,
          ],
        }),
      ],
      skipped: [],
    };
  },
};
