/**
 * Meshes for the fan-out, plan and terminal-bytes figures, written as inventory YAML and read
 * through the real loader, with `local` machines whose directories play each machine's root.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadInventory, type Inventory } from '../../../src/mesh/inventory.js';
import { planRotation, type RotationPlan } from '../../../src/mesh/rotation-plan.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../../src/mesh/digest.js';
import type { TransportFor } from '../../../src/transport/make-transport.js';

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
    machines.push(`  - { name: db${i}, address: machines/db${i}, transport: local }`, `  - { name: app${i}, address: machines/app${i}, transport: local }`);
    providers.push(`  - { name: pg${i}, machine: db${i}, kind: postgres }`);
    consumers.push(`  - { name: app${i}, machine: app${i}, uses: [pg${i}] }`);
    mkdirSync(path.join(root, 'machines', `db${i}`), { recursive: true });
    mkdirSync(path.join(root, 'machines', `app${i}`), { recursive: true });
  }
  const file = path.join(root, 'mesh.yaml');
  writeFileSync(file, ['machines:', ...machines, 'providers:', ...providers, 'consumers:', ...consumers, ''].join('\n'));
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
  for (let i = 0; i < consumers; i++) lines.push(`  - { name: app${i}, address: machines/app${i}, transport: local }`);
  lines.push('providers:', '  - { name: pg, machine: db, kind: postgres }', 'consumers:');
  for (let i = 0; i < consumers; i++) lines.push(`  - { name: app${i}, machine: app${i}, uses: [pg] }`);
  return `${lines.join('\n')}\n`;
}

/**
 * A provisioner that answers at once: every provider end renamed into place gets its receipt
 * in the same call, so a rotation's consumer ends follow on the first receipt read. The bench
 * measures baton's fan-out, not a database (the rotation-window figure has the real one).
 */
export function withInstantReceipts(transportFor: TransportFor, root: string): TransportFor {
  return (name) => {
    const transport = transportFor(name);
    return {
      ...transport,
      async commit(paths) {
        await transport.commit(paths);
        for (const p of paths) {
          if (!p.includes('/provides/')) continue;
          const file = path.join(root, 'machines', name, p);
          const role = path.basename(p);
          const receipt = path.join(path.dirname(file), RECEIPTS_DIR, role);
          mkdirSync(path.dirname(receipt), { recursive: true, mode: 0o700 });
          writeFileSync(receipt, formatReceipt({ role, digest: secretDigest(readFileSync(file)), applied_at: new Date().toISOString() }), { mode: 0o600 });
        }
      },
    };
  };
}
