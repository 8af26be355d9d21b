/**
 * The affected holders are a QUERY over the selected pairs (mesh seed): for each pair, its
 * provider's machine and its consumer's machine, each told exactly which file it receives.
 * Nothing is assumed — the failure this prevents is a consumer nobody enumerated, still
 * holding the old password while the mesh reports success.
 */
import path from 'node:path';
import { findMachine, pairKey, type Inventory, type Machine, type Pair } from './inventory.js';
import { describeSelector, selectPairs, type Selector } from './selector.js';

/** One file a holder receives: the live path; the staged copy is `<path>.next`. */
export interface Delivery {
  readonly end: 'provides' | 'consumes';
  readonly pair: string;
  readonly provider: string;
  readonly role: string;
  /** Absolute path on the machine, e.g. /var/lib/baton/mesh/provides/pg-main/web1_app. */
  readonly path: string;
}

export interface Holder {
  readonly machine: string;
  readonly transport: Machine['transport'];
  readonly address: string;
  readonly receives: readonly Delivery[];
}

export interface PlannedPair extends Pair {
  readonly key: string;
  readonly providerPath: string;
  readonly consumerPath: string;
  /** Where the provisioner writes its receipt for this role. */
  readonly receiptPath: string;
  /** The window, in words. */
  readonly window: string;
}

export interface RotationPlan {
  readonly selector: Selector;
  readonly selectorText: string;
  readonly pairs: readonly PlannedPair[];
  /** One per machine, in first-seen order. */
  readonly holders: readonly Holder[];
}

export const STAGED_SUFFIX = '.next';

export function deliveryPath(meshDir: string, end: Delivery['end'], provider: string, role: string): string {
  return path.posix.join(meshDir, end, provider, role);
}

export function receiptPath(meshDir: string, provider: string, role: string): string {
  return path.posix.join(meshDir, 'provides', provider, '.applied', role);
}

/**
 * The window cannot be closed — a role's password changes on the provider and the file on
 * the consumer, and they cannot be simultaneous — so it is stated rather than hidden.
 */
export function windowText(pair: Pair): string {
  return `between ${pair.provider} applying the new password for ${pair.role} and ${pair.consumer} reading its file, new connections from ${pair.consumer} with the old password fail`;
}

export function planRotation(inventory: Inventory, selector: Selector): RotationPlan {
  const pairs = selectPairs(inventory, selector);
  const holders = new Map<string, { machine: Machine; receives: Delivery[] }>();
  const receive = (machineName: string, delivery: Delivery) => {
    const machine = findMachine(inventory, machineName);
    const entry = holders.get(machineName) ?? { machine, receives: [] };
    entry.receives.push(delivery);
    holders.set(machineName, entry);
  };
  const planned: PlannedPair[] = pairs.map((pair) => {
    const providerMachine = findMachine(inventory, pair.providerMachine);
    const consumerMachine = findMachine(inventory, pair.consumerMachine);
    const key = pairKey(pair);
    const providerPath = deliveryPath(providerMachine.meshDir, 'provides', pair.provider, pair.role);
    const consumerPath = deliveryPath(consumerMachine.meshDir, 'consumes', pair.provider, pair.role);
    receive(pair.providerMachine, { end: 'provides', pair: key, provider: pair.provider, role: pair.role, path: providerPath });
    receive(pair.consumerMachine, { end: 'consumes', pair: key, provider: pair.provider, role: pair.role, path: consumerPath });
    return {
      ...pair,
      key,
      providerPath,
      consumerPath,
      receiptPath: receiptPath(providerMachine.meshDir, pair.provider, pair.role),
      window: windowText(pair),
    };
  });
  return {
    selector,
    selectorText: describeSelector(selector),
    pairs: planned,
    holders: [...holders.values()].map(({ machine, receives }) => ({
      machine: machine.name,
      transport: machine.transport,
      address: machine.address,
      receives,
    })),
  };
}

/** `provides/pg-main/web1_app` — what a screen shows for a delivery (mesh_dir is shown once). */
export function deliveryLabel(delivery: Delivery): string {
  return `${delivery.end}/${delivery.provider}/${delivery.role}`;
}
