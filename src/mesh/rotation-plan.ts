/**
 * The affected holders are a QUERY over the selected pairs (mesh seed): for each pair, its
 * provider's machine and its consumer's machine, each told exactly which file it receives.
 * Nothing is assumed — the failure this prevents is a consumer nobody enumerated, still
 * holding the old password while the mesh reports success.
 */
import path from 'node:path';
import { RECEIPTS_DIR } from './digest.js';
import {
  LOGIN_SLOTS,
  loginFileName,
  loginRole,
  otherSlot,
  slotOfLogin,
  type LoginSlot,
} from './alternating.js';
import type { FileDigests } from './transport.js';
import { findMachine, pairKey, type Inventory, type Machine, type Pair, type Pooler } from './inventory.js';
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
  /**
   * Set on an alternating pair once the consumer end's live login is known (after resolving,
   * before preparing: settleLogins). planRotation alone sets slot a, matching the provider path
   * it plans, which is right only for a pair never delivered (and for `mesh seed`).
   */
  readonly login?: {
    /** The login this rotation gives a new password and moves the consumer to. */
    readonly slot: LoginSlot;
    /** loginRole(pair.role, slot) */
    readonly role: string;
    /** The login the consumer is on now (undefined: a single pair being switched, or never delivered). */
    readonly left?: {
      readonly slot: LoginSlot;
      readonly role: string;
      readonly providerPath: string;
      readonly receiptPath: string;
    };
  };
  /**
   * A pair being switched between single and alternating: provider-end files of the other mode
   * that baton removes (with their receipts) once this rotation's consumer end is committed.
   * Until then the consumer still logs in with them, so they go only after its file changed format.
   */
  readonly retire?: readonly string[];
  /**
   * A pair switched back to one role: the login its consumer uses until its file names the role.
   * That login keeps its password until then, so this rotation has no window.
   */
  readonly leaves?: string;
}

export interface RotationPlan {
  readonly selector: Selector;
  readonly selectorText: string;
  readonly pairs: readonly PlannedPair[];
  /** One per machine, in first-seen order. */
  readonly holders: readonly Holder[];
  /** Each pair's age in words, when the selection was by age (`--older-than`): the preview shows it. */
  readonly ages?: ReadonlyMap<string, string>;
  /**
   * The poolers that serve a selected pair's provider (`poolers:`): holders too. Their machines
   * are among `holders` (one that receives no file is there with none), so the gate resolves
   * them like any holder and closes when one does not answer.
   */
  readonly poolers?: readonly PlannedPooler[];
}

/** A pooler in a rotation: the keys of the selected pairs whose logins it holds. */
export interface PlannedPooler extends Pooler {
  readonly pairs: readonly string[];
}

/** The poolers serving the providers of `pairs`, each with the keys of its pairs, in the inventory's order. */
export function poolersOf(
  poolers: readonly Pooler[],
  pairs: readonly Pick<PlannedPair, 'provider' | 'key'>[],
): PlannedPooler[] {
  return poolers.flatMap((pooler) => {
    const served = pairs.filter((p) => pooler.serves.includes(p.provider)).map((p) => p.key);
    return served.length > 0 ? [{ ...pooler, pairs: served }] : [];
  });
}

export { STAGED_SUFFIX } from './transport.js';

/**
 * The window cannot be closed — a role's password changes on the provider and the file on
 * the consumer, and they cannot be simultaneous — so it is stated rather than hidden. The
 * consumer end is renamed only after the provider's receipt, so the window is on the OLD
 * password's side: never a consumer holding a password its database does not have yet.
 */
export function windowText(
  pair: Pair,
  login?: PlannedPair['login'],
  retire?: readonly string[],
  leaves?: string,
): string {
  if (pair.credential === 'alternating') {
    const to = login?.role ?? loginRole(pair.role, 'a');
    const moves = login?.left
      ? `${pair.consumer} moves from ${login.left.role} to ${to} once ${pair.provider} has applied ${to}'s new password; ${login.left.role}, which it leaves, keeps working until the next rotation`
      : `${pair.consumer} moves to ${to} once ${pair.provider} has applied its new password`;
    return `none (alternating): ${moves}${retire && retire.length > 0 ? `; then baton removes ${retire.map(baseName).join(' and ')} (the single role's file, switched to alternating)` : ''}`;
  }
  const removes =
    retire && retire.length > 0
      ? `; then baton removes ${retire.map(baseName).join(' and ')} (the alternating logins' files, switched to single)`
      : '';
  if (leaves)
    return `none (switching to one role): ${pair.consumer} keeps using ${leaves} until its file names ${pair.role}, whose new password ${pair.provider} has applied by then${removes}`;
  if (removes) return `${singleWindow(pair)}${removes}`;
  return singleWindow(pair);
}

function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

function singleWindow(pair: Pair): string {
  return `from ${pair.provider} applying the new password for ${pair.role} until ${pair.consumer}'s file is replaced (right after the receipt is read), new connections from ${pair.consumer} that still use the OLD password fail`;
}

/** `only` narrows the selector's pairs further (by age: `--older-than`). */
export function planRotation(
  inventory: Inventory,
  selector: Selector,
  only?: (pair: Pair) => boolean,
): RotationPlan {
  const pairs = only ? selectPairs(inventory, selector).filter(only) : selectPairs(inventory, selector);
  // One directory per (mesh_dir, end, provider), joined once: path.posix.join per pair made
  // planning a large mesh allocation-bound. Provider and role names are validated plain
  // components (inventory.ts, role-name.ts), so `dir + "/" + role` is exactly the join.
  const dirs = new Map<string, string>();
  const dirOf = (meshDir: string, end: Delivery['end'] | 'receipts', provider: string): string => {
    const at = `${meshDir}\0${end}\0${provider}`;
    let dir = dirs.get(at);
    if (dir === undefined) {
      dir =
        end === 'receipts'
          ? path.posix.join(meshDir, 'provides', provider, RECEIPTS_DIR)
          : path.posix.join(meshDir, end, provider);
      dirs.set(at, dir);
    }
    return dir;
  };
  const planned: PlannedPair[] = pairs.map((pair) => {
    const providerMachine = findMachine(inventory, pair.providerMachine);
    const consumerMachine = findMachine(inventory, pair.consumerMachine);
    const key = pairKey(pair);
    // An alternating pair is planned to slot a until its consumer end is read (settleLogins).
    const file = pair.credential === 'alternating' ? loginFileName(pair.role, 'a') : pair.role;
    const providerPath = `${dirOf(providerMachine.meshDir, 'provides', pair.provider)}/${file}`;
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
      receiptPath: `${dirOf(providerMachine.meshDir, 'receipts', pair.provider)}/${file}`,
      window: windowText(pair),
      ...(pair.credential === 'alternating'
        ? { login: { slot: 'a' as const, role: loginRole(pair.role, 'a') } }
        : {}),
    };
  });
  const poolers = poolersOf(inventory.poolers, planned);
  return {
    selector,
    selectorText: describeSelector(selector),
    pairs: planned,
    holders: holdersOf(
      planned,
      (name) => findMachine(inventory, name),
      poolers.map((p) => p.machine),
    ),
    ...(poolers.length > 0 ? { poolers } : {}),
  };
}

/** The provider directory of a pair and its receipts directory (from its planned provider path). */
function providerDirs(pair: Pick<PlannedPair, 'providerPath'>): { dir: string; receipts: string } {
  const dir = pair.providerPath.slice(0, pair.providerPath.lastIndexOf('/'));
  return { dir, receipts: `${dir}/${RECEIPTS_DIR}` };
}

/** The provider file of an alternating pair's login `slot` (`…/provides/P/R+x`) and its receipt: rotation, status and resume all ask this. */
export function loginFilePaths(
  pair: Pick<PlannedPair, 'providerPath' | 'role'>,
  slot: LoginSlot,
): { readonly providerPath: string; readonly receiptPath: string } {
  const { dir, receipts } = providerDirs(pair);
  const name = loginFileName(pair.role, slot);
  return { providerPath: `${dir}/${name}`, receiptPath: `${receipts}/${name}` };
}

/**
 * Every provider-end file a pair may have, whatever its mode: the single role's file and both
 * login files. Read with the ends before a rotation, so a pair being switched (or a switch a
 * crash left half done) is seen, in the same round trip per machine.
 */
export function providerFilesOf(pair: PlannedPair): string[] {
  const { dir } = providerDirs(pair);
  return [`${dir}/${pair.role}`, ...LOGIN_SLOTS.map((slot) => `${dir}/${loginFileName(pair.role, slot)}`)];
}

/** What was read on the holders before a rotation: `machine\0path` → its digests. */
export type EndsRead = ReadonlyMap<string, FileDigests>;

/**
 * Fixes each pair's target from what its ends hold. Alternating: the consumer's live login
 * R_x → the other slot; a bare secret (a single pair being switched) or nothing → slot a; the
 * provider and receipt paths become the target login's file. A plain provider file left beside
 * an alternating pair, or login files beside a single pair whose consumer names a login (or a
 * switch a crash cut short), are removed after the consumer end is committed. A single pair
 * with nothing to switch comes back exactly as planned.
 */
export function settleLogins(
  plan: RotationPlan,
  ends: EndsRead,
  machineOf: (name: string) => Machine,
): RotationPlan {
  const pairs = settledPairs(plan.pairs, ends);
  if (pairs === plan.pairs) return plan;
  return {
    ...plan,
    pairs,
    holders: holdersOf(
      pairs,
      machineOf,
      plan.poolers?.map((p) => p.machine),
    ),
  };
}

/**
 * settleLogins' pairs alone (the same array when nothing changed): `mesh status` settles its
 * pairs exactly as a rotation would, so it reads the same leftovers (leftovers.ts).
 */
export function settledPairs(planned: readonly PlannedPair[], ends: EndsRead): readonly PlannedPair[] {
  let changed = false as boolean; // set inside the map below
  const pairs = planned.map((pair): PlannedPair => {
    const { dir } = providerDirs(pair);
    const consumer = ends.get(`${pair.consumerMachine}\0${pair.consumerPath}`);
    const has = (file: string) => ends.get(`${pair.providerMachine}\0${dir}/${file}`)?.live !== undefined;
    if (pair.credential !== 'alternating') {
      const retire = LOGIN_SLOTS.map((slot) => loginFileName(pair.role, slot)).filter(
        (file) => has(file) || consumer?.liveLogin !== undefined,
      );
      if (retire.length === 0) return pair;
      changed = true;
      const paths = retire.map((file) => `${dir}/${file}`);
      const leaves = consumer?.liveLogin;
      return {
        ...pair,
        retire: paths,
        ...(leaves ? { leaves } : {}),
        window: windowText(pair, undefined, paths, leaves),
      };
    }
    const liveSlot =
      consumer?.liveLogin === undefined ? undefined : slotOfLogin(pair.role, consumer.liveLogin);
    const slot: LoginSlot = liveSlot ? otherSlot(liveSlot) : 'a';
    const login: NonNullable<PlannedPair['login']> = {
      slot,
      role: loginRole(pair.role, slot),
      ...(liveSlot
        ? {
            left: { slot: liveSlot, role: loginRole(pair.role, liveSlot), ...loginFilePaths(pair, liveSlot) },
          }
        : {}),
    };
    const retire = has(pair.role) ? [`${dir}/${pair.role}`] : [];
    changed = true;
    return {
      ...pair,
      ...loginFilePaths(pair, slot),
      login,
      ...(retire.length > 0 ? { retire } : {}),
      window: windowText(pair, login, retire),
    };
  });
  return changed ? pairs : planned;
}

/**
 * Who receives what: for each pair, its provider's machine gets the provider end and its
 * consumer's machine the consumer end. One holder per machine, in first-seen order. Planning
 * and `mesh resume` (from the journal's pairs) both ask this, so they cannot disagree on it.
 */
export function holdersOf(
  pairs: readonly PlannedPair[],
  machineOf: (name: string) => Machine,
  /** Pooler machines: each a holder too, with no file of its own where it holds no pair's end. */
  poolerMachines: readonly string[] = [],
): Holder[] {
  const holders = new Map<string, Holder & { readonly receives: Delivery[] }>();
  const receive = (name: string, delivery: Delivery) => {
    let holder = holders.get(name);
    if (!holder) {
      const machine = machineOf(name);
      holder = {
        machine: machine.name,
        transport: machine.transport,
        address: machine.address,
        receives: [],
      };
      holders.set(name, holder);
    }
    holder.receives.push(delivery);
  };
  for (const pair of pairs) {
    receive(pair.providerMachine, {
      end: 'provides',
      pair: pair.key,
      provider: pair.provider,
      role: pair.role,
      path: pair.providerPath,
    });
    receive(pair.consumerMachine, {
      end: 'consumes',
      pair: pair.key,
      provider: pair.provider,
      role: pair.role,
      path: pair.consumerPath,
    });
  }
  for (const name of poolerMachines)
    if (!holders.has(name)) {
      const machine = machineOf(name);
      holders.set(name, {
        machine: machine.name,
        transport: machine.transport,
        address: machine.address,
        receives: [],
      });
    }
  return [...holders.values()];
}

/** `provides/pg-main/web1_app` — what a screen shows for a delivery (mesh_dir is shown once). */
export function deliveryLabel(delivery: Delivery): string {
  return `${delivery.end}/${delivery.provider}/${deliveredName(delivery)}`;
}

/** The file's own name: the role, or for an alternating pair's provider end its login file (`web1_app+b`). */
export function deliveredName(delivery: Delivery): string {
  return delivery.path.slice(delivery.path.lastIndexOf('/') + 1);
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
