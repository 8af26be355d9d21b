/**
 * The drill shows `baton mesh status` around each rotation of steps 4 and 5: before, while the
 * provisioner has not applied the new credentials yet (pending), and after — the same reading
 * and words as the command, over the drill's transports (so an unplugged worker1 shows as
 * unreachable).
 */
import { meshStatusLines } from '../../app/mesh-status-text.js';
import { loadInventory } from '../../mesh/inventory.js';
import { readJournalHistory } from '../../mesh/journal-history.js';
import { meshIdentity } from '../../mesh/mesh-identity.js';
import { meshLockHolder } from '../../mesh/mesh-lock.js';
import { readMeshStatus } from '../../mesh/read-mesh-status.js';
import { planRotation } from '../../mesh/rotation-plan.js';
import type { Selector } from '../../mesh/selector.js';
import { drillTransports } from './rotate.js';
import { appHooks } from '../../mesh/reload.js';
import type { DrillSandbox } from '../../sandbox/drill-layout.js';

/** The plain lines of `baton mesh status <selector>` in the sandbox, now. */
export async function meshStatusNow(sandbox: DrillSandbox, selector: Selector): Promise<string[]> {
  const inventory = loadInventory(sandbox.inventoryPath);
  const plan = planRotation(inventory, selector);
  const history = await readJournalHistory(sandbox.journalDir, meshIdentity(inventory));
  const holder = meshLockHolder(sandbox.journalDir, meshIdentity(inventory));
  const statuses = await readMeshStatus(plan, drillTransports(sandbox), history, {
    concurrency: 4,
    nowMs: Date.now(),
    maxAgeMs: undefined,
    app: appHooks(inventory),
    ...(holder ? { running: holder.command } : {}),
  });
  return meshStatusLines(statuses, plan.selectorText);
}
