/**
 * Which mesh a journal record belongs to. One journal directory may serve several inventories
 * (the default one does), so every record carries this and `mesh status`, resume and the
 * leftover check read only their own mesh's records: a pair name in another sandbox is not
 * this pair. `id:` in the inventory names it; otherwise it is derived from what makes the
 * mesh itself: its mesh_dir and its machines (name, transport, address).
 */
import { createHash } from 'node:crypto';
import type { Inventory } from './inventory.js';

export function meshIdentity(inventory: Pick<Inventory, 'id' | 'meshDir' | 'machines'>): string {
  if (inventory.id) return inventory.id;
  // A local machine's address is relative to its inventory: its resolved root is what identifies it.
  const machines = inventory.machines
    .map((m) => `${m.name}\t${m.transport}\t${m.transport === 'local' ? m.root : m.address}\t${m.meshDir}`)
    .sort();
  return `mesh-${createHash('sha256')
    .update([inventory.meshDir, ...machines].join('\n'))
    .digest('hex')
    .slice(0, 12)}`;
}
