/**
 * `mesh status` reads each selected provider's heartbeat (provisioner-heartbeat.ts) over the same
 * connections it reads the pairs with, and a provisioner that cannot apply anything — locked
 * out, its database down, stopped, silent — takes the ✓ from its pairs: a receipt only says
 * what the database accepted once, not that the next rotation can finish.
 */
import path from 'node:path';
import type { Inventory } from './inventory.js';
import { mapBounded } from './map-bounded.js';
import type { PairStatus } from './mesh-status.js';
import {
  heartbeatPath,
  legacyHeartbeatPath,
  provisionerHealth,
  provisionerHealthy,
  type ProvisionerHealth,
} from './provisioner-heartbeat.js';
import type { RotationPlan } from './rotation-plan.js';
import type { TransportFor } from './transport.js';

export async function readProvisionerHealth(
  plan: RotationPlan,
  inventory: Pick<Inventory, 'pairs'>,
  transportFor: TransportFor,
  options: { readonly concurrency: number; readonly nowMs: number },
): Promise<ProvisionerHealth[]> {
  // One per provider: its delivered files' directory holds the heartbeat.
  const providers = new Map<string, { machine: string; dir: string }>();
  for (const p of plan.pairs)
    if (!providers.has(p.provider))
      providers.set(p.provider, { machine: p.providerMachine, dir: path.posix.dirname(p.providerPath) });
  const superuserPair = (provider: string) => (role: string) => {
    const pair = inventory.pairs.find((p) => p.provider === provider && p.role === role);
    return pair ? `${pair.provider}:${pair.consumer}` : undefined;
  };
  return mapBounded([...providers], options.concurrency, async ([provider, { machine, dir }]) => {
    // Both places in one read: a provisioner not yet upgraded still writes the old one. The new
    // place wins (the upgraded writer removes the old file, but a copy restored from a backup may linger).
    const current = heartbeatPath(dir);
    const legacy = legacyHeartbeatPath(dir);
    let texts: readonly (string | undefined)[];
    try {
      texts = await transportFor(machine).readTexts([current, legacy]);
    } catch {
      return { state: 'unread', provider, machine } as const;
    }
    const [text, file] = texts[0] !== undefined ? [texts[0], current] : [texts[1], legacy];
    // `<mesh_dir>/provides/<provider>` → `<mesh_dir>/consumes/<provider>/<role>`: the provisioner's default --superuser-file.
    const superuserFile = (role: string) =>
      path.posix.join(path.posix.dirname(path.posix.dirname(dir)), 'consumes', provider, role);
    return provisionerHealth(
      provider,
      machine,
      file,
      text,
      options.nowMs,
      superuserPair(provider),
      superuserFile,
    );
  });
}

/** The pairs with the ✓ taken from those whose provisioner cannot apply: `pending`, naming why. */
export function withProvisionerHealth(
  statuses: readonly PairStatus[],
  health: readonly ProvisionerHealth[],
): PairStatus[] {
  const sick = new Map(health.filter((h) => !provisionerHealthy(h)).map((h) => [h.provider, h]));
  return statuses.map((status) => {
    const h = sick.get(status.pair.provider);
    if (!h || !('detail' in h) || status.state !== 'applied') return status;
    return { ...status, state: 'pending', detail: `${h.detail}: what its receipt says may no longer hold` };
  });
}
