/**
 * Meshes for the fan-out, plan and terminal-bytes figures, written as inventory YAML and read
 * through the real loader, with `local` machines whose directories play each machine's root.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadInventory, type Inventory } from '../../../src/mesh/inventory.js';
import { planRotation, type RotationPlan } from '../../../src/mesh/rotation-plan.js';

export interface DisjointMesh {
  readonly inventory: Inventory;
  /** Every pair, planned: `pairs` pairs on 2 × `pairs` holder machines. */
  readonly plan: RotationPlan;
  readonly root: string;
}

/**
 * `pairs` providers each on its own machine, each used by one consumer on its own machine:
 * 2 × `pairs` holders, no machine shared — the widest fan-out a number of pairs can have.
 *
 * No single selector of the CLI names pairs that share no machine (each selects by one
 * consumer, provider or machine), so the plan is the union of one `--provider` plan per
 * provider, each made by the real planRotation.
 */
export function disjointMesh(root: string, pairs: number): DisjointMesh {
  const machines: string[] = [];
  const providers: string[] = [];
  const consumers: string[] = [];
  for (let i = 0; i < pairs; i++) {
    machines.push(
      `  - { name: db${i}, address: machines/db${i}, transport: local }`,
      `  - { name: app${i}, address: machines/app${i}, transport: local }`,
    );
    providers.push(`  - { name: pg${i}, machine: db${i}, kind: postgres }`);
    consumers.push(`  - { name: app${i}, machine: app${i}, reads: each-connection, uses: [pg${i}] }`);
    mkdirSync(path.join(root, 'machines', `db${i}`), { recursive: true });
    mkdirSync(path.join(root, 'machines', `app${i}`), { recursive: true });
  }
  const file = path.join(root, 'mesh.yaml');
  writeFileSync(
    file,
    ['machines:', ...machines, 'providers:', ...providers, 'consumers:', ...consumers, ''].join('\n'),
  );
  const inventory = loadInventory(file);
  const parts = inventory.providers.map((p) => planRotation(inventory, { by: 'provider', name: p.name }));
  const plan: RotationPlan = {
    selector: parts[0]!.selector,
    selectorText: `--provider pg0 … --provider pg${pairs - 1} (${pairs} plans)`,
    pairs: parts.flatMap((p) => p.pairs),
    holders: parts.flatMap((p) => p.holders),
  };
  return { inventory, plan, root };
}

/** One provider used by `consumers` consumers, each on its own machine (`--provider pg` selects them all). */
export function starInventoryYaml(consumers: number): string {
  const lines = ['machines:', '  - { name: db, address: machines/db, transport: local }'];
  for (let i = 0; i < consumers; i++)
    lines.push(`  - { name: app${i}, address: machines/app${i}, transport: local }`);
  lines.push('providers:', '  - { name: pg, machine: db, kind: postgres }', 'consumers:');
  for (let i = 0; i < consumers; i++)
    lines.push(`  - { name: app${i}, machine: app${i}, reads: each-connection, uses: [pg] }`);
  return `${lines.join('\n')}\n`;
}
