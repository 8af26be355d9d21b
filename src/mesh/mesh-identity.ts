/**
 * Which mesh a journal record belongs to. One journal directory may serve several inventories
 * (the default one does), so every record carries this and `mesh status`, resume and the
 * leftover check read only their own mesh's records: a pair name in another sandbox is not
 * this pair.
 *
 * `id:` in the inventory names it, and is what to write (docs/mesh-rotation.md, "The mesh's
 * identity"). Without one it is derived from the inventory FILE (its resolved path) and its
 * mesh_dir — never from its machines: an inventory edited to add a machine or a consumer is the
 * same mesh, and a rotation killed before the edit must still be found (and named with its
 * `mesh resume` id) after it. Before, the id hashed the machine list, so one added machine
 * made every unfinished rotation a stranger's.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { Inventory } from './inventory.js';

const hashed = (parts: readonly string[]) =>
  `mesh-${createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 12)}`;

export function meshIdentity(inventory: Pick<Inventory, 'id' | 'meshDir' | 'source'>): string {
  if (inventory.id) return inventory.id;
  return hashed(['inventory', path.resolve(inventory.source), inventory.meshDir]);
}

/**
 * The id an older baton derived (from mesh_dir and the machine list), read as this mesh's too:
 * a journal written before the upgrade stays readable as long as the machine list is the one it
 * was written with. Records under it from before an edit of the machine list were already lost
 * to that baton; new records carry `meshIdentity`.
 */
export function legacyMeshIdentity(
  inventory: Pick<Inventory, 'id' | 'meshDir' | 'machines'>,
): string | undefined {
  if (inventory.id) return undefined;
  // A local machine's address is relative to its inventory: its resolved root is what identified it.
  const machines = inventory.machines
    .map((m) => `${m.name}\t${m.transport}\t${m.transport === 'local' ? m.root : m.address}\t${m.meshDir}`)
    .sort();
  return hashed([inventory.meshDir, ...machines]);
}

/** Every id this inventory's records may carry: its own first, then the legacy one. */
export function meshIdentities(
  inventory: Pick<Inventory, 'id' | 'meshDir' | 'machines' | 'source'>,
): string[] {
  const legacy = legacyMeshIdentity(inventory);
  return legacy ? [meshIdentity(inventory), legacy] : [meshIdentity(inventory)];
}
