/**
 * The affected holders are a QUERY over the selected pairs (mesh seed): for each pair, its
 * provider's machine and its consumer's machine, each told exactly which file it receives.
 * Nothing is assumed — the failure this prevents is a consumer nobody enumerated, still
 * holding the old password while the mesh reports success.
 */
import path from 'node:path';
import type { LoginSlot } from './alternating.js';
import { RECEIPTS_DIR } from './digest.js';
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
  /** Set on an alternating pair once the consumer end's live login is known (after resolving, before preparing). */
  readonly login?: {
    readonly slot: LoginSlot; // the login this rotation gives a new password and moves the consumer to
    readonly role: string; // loginRole(pair.role, slot)
    /** The login the consumer is on now (undefined: a single pair being switched, or never delivered). */
    readonly left?: { readonly slot: LoginSlot; readonly role: string; readonly providerPath: string; readonly receiptPath: string };
  };
}

export interface RotationPlan {
  readonly selector: Selector;
  readonly selectorText: string;
  readonly pairs: readonly PlannedPair[];
  /** One per machine, in first-seen order. */
  readonly holders: readonly Holder[];
  /** Each pair's age in words, when the selection was by age (`--older-than`): the preview shows it. */
  readonly ages?: ReadonlyMap<string, string>;
}

export { STAGED_SUFFIX } from './transport.js';

/**
 * The window cannot be closed — a role's password changes on the provider and the file on
 * the consumer, and they cannot be simultaneous — so it is stated rather than hidden. The
 * consumer end is renamed only after the provider's receipt, so the window is on the OLD
 * password's side: never a consumer holding a password its database does not have yet.
 */
export function windowText(pair: Pair): string {
  return `from ${pair.provider} applying the new password for ${pair.role} until ${pair.consumer}'s file is replaced (right after the receipt is read), new connections from ${pair.consumer} that still use the OLD password fail`;
}

/** `only` narrows the selector's pairs further (by age: `--older-than`). */
export function planRotation(inventory: Inventory, selector: Selector, only?: (pair: Pair) => boolean): RotationPlan {
  const pairs = only ? selectPairs(inventory, selector).filter(only) : selectPairs(inventory, selector);
  // One directory per (mesh_dir, end, provider), joined once: path.posix.join per pair made
  // planning a large mesh allocation-bound. Provider and role names are validated plain
  // components (inventory.ts, role-name.ts), so `dir + "/" + role` is exactly the join.
  const dirs = new Map<string, string>();
  const dirOf = (meshDir: string, end: Delivery['end'] | 'receipts', provider: string): string => {
    const at = `${meshDir}\0${end}\0${provider}`;
    let dir = dirs.get(at);
    if (dir === undefined) {
      dir = end === 'receipts' ? path.posix.join(meshDir, 'provides', provider, RECEIPTS_DIR) : path.posix.join(meshDir, end, provider);
      dirs.set(at, dir);
    }
    return dir;
  };
  const planned: PlannedPair[] = pairs.map((pair) => {
    const providerMachine = findMachine(inventory, pair.providerMachine);
    const consumerMachine = findMachine(inventory, pair.consumerMachine);
    const key = pairKey(pair);
    const providerPath = `${dirOf(providerMachine.meshDir, 'provides', pair.provider)}/${pair.role}`;
    const consumerPath = `${dirOf(consumerMachine.meshDir, 'consumes', pair.provider)}/${pair.role}`;
    // Spelled out rather than spread: a spread object grows its properties one by one, and at
    // ten thousand pairs that garbage is most of the planning time.
    return {
      provider: pair.provider,
      consumer: pair.consumer,
      role: pair.role,
      providerMachine: pair.providerMachine,
      consumerMachine: pair.consumerMachine,
      credential: pair.credential,
      key,
      providerPath,
      consumerPath,
      receiptPath: `${dirOf(providerMachine.meshDir, 'receipts', pair.provider)}/${pair.role}`,
      window: windowText(pair),
    };
  });
  return {
    selector,
    selectorText: describeSelector(selector),
    pairs: planned,
    holders: holdersOf(planned, (name) => findMachine(inventory, name)),
  };
}

/**
 * Who receives what: for each pair, its provider's machine gets the provider end and its
 * consumer's machine the consumer end. One holder per machine, in first-seen order. Planning
 * and `mesh resume` (from the journal's pairs) both ask this, so they cannot disagree on it.
 */
export function holdersOf(pairs: readonly PlannedPair[], machineOf: (name: string) => Machine): Holder[] {
  const holders = new Map<string, Holder & { readonly receives: Delivery[] }>();
  const receive = (name: string, delivery: Delivery) => {
    let holder = holders.get(name);
    if (!holder) {
      const machine = machineOf(name);
      holder = { machine: machine.name, transport: machine.transport, address: machine.address, receives: [] };
      holders.set(name, holder);
    }
    holder.receives.push(delivery);
  };
  for (const pair of pairs) {
    receive(pair.providerMachine, { end: 'provides', pair: pair.key, provider: pair.provider, role: pair.role, path: pair.providerPath });
    receive(pair.consumerMachine, { end: 'consumes', pair: pair.key, provider: pair.provider, role: pair.role, path: pair.consumerPath });
  }
  return [...holders.values()];
}

/** `provides/pg-main/web1_app` — what a screen shows for a delivery (mesh_dir is shown once). */
export function deliveryLabel(delivery: Delivery): string {
  return `${delivery.end}/${delivery.provider}/${delivery.role}`;
}

/** What views and the rotation flow look up per holder, per event or per frame. */
export interface PlanIndex {
  readonly holders: ReadonlyMap<string, Holder>;
  /** Files delivered in all: both ends of every pair. */
  readonly files: number;
  /** Length of the longest machine name (the holder table's column). */
  readonly longestMachine: number;
}

const planIndexes = new WeakMap<RotationPlan, PlanIndex>();

/**
 * Built once per plan (a plan is never mutated): the flow and the view ask "which holder is
 * this machine" on every event and every frame, and a scan there is quadratic in holders.
 */
export function planIndex(plan: RotationPlan): PlanIndex {
  let index = planIndexes.get(plan);
  if (!index) {
    const holders = new Map<string, Holder>();
    let files = 0;
    let longestMachine = 0;
    for (const holder of plan.holders) {
      if (!holders.has(holder.machine)) holders.set(holder.machine, holder);
      files += holder.receives.length;
      longestMachine = Math.max(longestMachine, holder.machine.length);
    }
    index = { holders, files, longestMachine };
    planIndexes.set(plan, index);
  }
  return index;
}
