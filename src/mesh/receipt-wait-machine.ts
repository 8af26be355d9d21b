/**
 * The receipt wait's decisions, as a pure machine (docs/mesh-rotation.md, "The receipt wait"):
 * state + event → state + commands. The adapter (receipt-watch.ts) only reports what the
 * machines showed — a receipt, the deadline, a stop — and the command runner
 * (receipt-wait-effects.ts) only does what it is told and reports how it went. Which consumer
 * is renamed, when, whether a test login goes first, when a failed rename is tried again and
 * when the wait is over is decided here and nowhere else: the rotation's reducer embeds this
 * machine (a rotation's and a resume's), and `beginReceiptWait` (the revoke's wait) drives the same one.
 *
 * THE CONSUMER END WAITS FOR ITS PROVIDER'S RECEIPT: a pair is renamed only after a receipt
 * carrying exactly its digest, and only once its provider end is live (`live`).
 */
import type { SecretDigest } from './digest.js';
import { emptyShared, sharedDelete, sharedSet, sharedView, type SharedMap } from './shared-map.js';

export interface MachineFailure {
  readonly machine: string;
  readonly reason: string;
}

/** One pair whose consumer end went live after its provider's receipt. */
export interface AppliedPair {
  readonly pair: string;
  /**
   * The window this rotation actually had, in ms: from the receipt's `applied_at` (the moment
   * the database took the new password, by the provider's clock, never later than when the
   * controller saw the receipt) to the consumer end's rename.
   */
  readonly windowMs: number;
}

/** A pair whose consumer end the gate would not commit, with the reason (raw outside text). */
export interface GateRefusal {
  readonly pair: string;
  readonly reason: string;
  readonly code?: string;
}

/** A matching receipt as seen: `appliedAt` by the provider's clock, `seenAt` by the controller's. */
export interface SeenReceipt {
  readonly appliedAt: number | undefined;
  readonly seenAt: number;
}

/** A receipted pair handed to a command, with its receipt (the runner measures the window from it). */
export interface ReceiptedPair extends SeenReceipt {
  readonly pair: string;
}

export type WaitEvent =
  /** The adapter read a receipt carrying `digest` for `pair` (the first such sighting per pair). */
  | {
      readonly type: 'receipt-seen';
      readonly pair: string;
      readonly digest: string;
      readonly appliedAt: number | undefined;
      readonly at: number;
    }
  /** A receipt with another digest (or none readable): "not yet", never "done". */
  | { readonly type: 'receipt-stale'; readonly pair: string }
  /** A test login ran for `pairs` from `machine`: `refused` stay staged, `moved` the machine renamed itself. */
  | {
      readonly type: 'login-tested';
      readonly machine: string;
      readonly pairs: readonly string[];
      readonly refused: readonly GateRefusal[];
      readonly moved: readonly AppliedPair[];
    }
  /** `machine` renamed these consumer ends. */
  | { readonly type: 'consumer-renamed'; readonly machine: string; readonly applied: readonly AppliedPair[] }
  /** A rename on `machine` failed (its channel is not trusted again): tried again until the wait ends. */
  | { readonly type: 'channel-lost'; readonly machine: string; readonly reason: string }
  /** The pause after a failed rename on `machine` is over. */
  | { readonly type: 'rename-due'; readonly machine: string }
  /** `--wait` is up: no receipt seen from now on is acted on. */
  | { readonly type: 'wait-expired' }
  /** A signal or the operator stopped the wait (or it was closed): the same, and at once. */
  | { readonly type: 'wait-stopped' };

export type WaitCommand =
  /** Try the new credential from `machine` before these pairs' consumer ends move. */
  | { readonly type: 'test-login'; readonly machine: string; readonly pairs: readonly ReceiptedPair[] }
  /**
   * Rename these consumer ends on `machine` (one request). `readBack`: the machine's last rename
   * failed, and a rename whose answer was lost may have been done: read the ends back first.
   */
  | {
      readonly type: 'rename-consumer';
      readonly machine: string;
      readonly pairs: readonly ReceiptedPair[];
      readonly readBack?: true;
    }
  /** Pause before `machine`'s rename is tried again (answered by rename-due). */
  | { readonly type: 'rename-later'; readonly machine: string }
  /** The wait is over: its readers and channels end. */
  | { readonly type: 'close-wait' };

/** How the wait ended, once nothing is in flight. */
export interface WaitResult {
  readonly applied: readonly AppliedPair[];
  /** Consumer machines whose last rename failed; their pairs' consumer ends are still staged. */
  readonly failures: readonly MachineFailure[];
  readonly refused: readonly GateRefusal[];
}

export interface WaitState {
  /** pair → its consumer's machine (the pairs the wait watches). */
  readonly consumerOf: Readonly<Record<string, string>>;
  readonly digests: Readonly<Record<string, SecretDigest>>;
  /** Pairs whose provider end is live (undefined: the wait has not started; receipts are kept, nothing renamed). */
  readonly live: ReadonlySet<string> | undefined;
  /** Pairs tested from their consumer's machine before they move. */
  readonly tested: ReadonlySet<string>;
  // The sets that change with every receipt and rename are shared maps (shared-map.ts): an event
  // costs what it touches, not the size of the wait.
  /** Per consumer machine, its receipted pairs not yet renamed nor refused, in the order their receipts came. */
  readonly receipted: SharedMap<readonly ReceiptedPair[]>;
  /** Pairs whose test login passed (not asked twice when a rename is tried again). */
  readonly passed: SharedMap<true>;
  /** Renamed or refused: nothing more happens to them. Always live pairs. */
  readonly done: SharedMap<true>;
  /** By pair, in the order they were applied. */
  readonly applied: SharedMap<AppliedPair>;
  readonly refused: readonly GateRefusal[];
  /** Machines with a login, a rename or a pause before a retry in flight: one at a time per machine. */
  readonly busy: SharedMap<true>;
  readonly failures: ReadonlyMap<string, MachineFailure>;
  /** Why no new receipt counts: the deadline, a stop. Batches in flight still finish. */
  readonly ended: 'expired' | 'stopped' | undefined;
  /** The wait is over and its result was given. */
  readonly over: boolean;
}

export interface WaitStep {
  readonly state: WaitState;
  readonly commands: readonly WaitCommand[];
  /** Pairs renamed by this event (the rotation records each window as it happens). */
  readonly appliedNow: readonly AppliedPair[];
  /** Set on the step that ends the wait. */
  readonly result?: WaitResult;
}

/** The wait for these pairs, before any provider end is live: receipts seen now are kept. */
export function waitBegun(
  pairs: readonly { readonly key: string; readonly consumerMachine: string }[],
  digests: Readonly<Record<string, SecretDigest>>,
): WaitState {
  const consumerOf: Record<string, string> = {};
  for (const p of pairs) consumerOf[p.key] = p.consumerMachine;
  return {
    consumerOf,
    digests,
    live: undefined,
    tested: new Set(),
    receipted: emptyShared(),
    passed: emptyShared(),
    done: emptyShared(),
    applied: emptyShared(),
    refused: [],
    busy: emptyShared(),
    failures: new Map(),
    ended: undefined,
    over: false,
  };
}

/**
 * The provider ends of `live` are live: from now on a receipted pair is renamed (after its test
 * login when it is in `tested`); receipts seen before are acted on at once.
 */
export function waitStarted(state: WaitState, live: readonly string[], tested: readonly string[]): WaitStep {
  if (state.live !== undefined || state.over) return { state, commands: [], appliedNow: [] };
  const known = (k: string) => k in state.consumerOf;
  let next: WaitState = {
    ...state,
    live: new Set(live.filter(known)),
    tested: new Set(tested.filter(known)),
  };
  const commands: WaitCommand[] = [];
  for (const machine of new Set([...next.live!].map((k) => state.consumerOf[k]!))) {
    const kicked = kick(next, machine);
    next = kicked.state;
    commands.push(...kicked.commands);
  }
  return settle(next, commands, []);
}

const same = (state: WaitState): WaitStep => ({ state, commands: [], appliedNow: [] });

export function receiptWait(state: WaitState, event: WaitEvent): WaitStep {
  if (state.over) return same(state);
  switch (event.type) {
    case 'receipt-seen': {
      const { pair } = event;
      const machine = Object.hasOwn(state.consumerOf, pair) ? state.consumerOf[pair] : undefined;
      // A receipt for a pair not waited for, one already acted on, or after the wait gave up counts for nothing.
      if (
        state.ended ||
        machine === undefined ||
        has(state.done, pair) ||
        receiptedOn(state, machine).some((r) => r.pair === pair) ||
        event.digest !== state.digests[pair]
      )
        return same(state);
      const receipted = sharedSet(state.receipted, machine, [
        ...receiptedOn(state, machine),
        { pair, appliedAt: event.appliedAt, seenAt: event.at },
      ]);
      const kicked = kick({ ...state, receipted }, machine);
      return settle(kicked.state, kicked.commands, []);
    }
    case 'receipt-stale':
      return same(state);
    case 'login-tested': {
      const { machine } = event;
      if (!has(state.busy, machine)) return same(state);
      const refusedNow = new Set(event.refused.map((r) => r.pair));
      let done = state.done;
      let passed = state.passed;
      let refused = state.refused;
      for (const r of event.refused) {
        if (!ownPair(state, r.pair, machine) || has(done, r.pair)) continue;
        refused = [...refused, r];
        done = sharedSet(done, r.pair, true);
      }
      for (const key of event.pairs) if (!refusedNow.has(key)) passed = sharedSet(passed, key, true);
      const appliedNow: AppliedPair[] = [];
      for (const a of event.moved)
        if (ownPair(state, a.pair, machine) && !has(done, a.pair)) {
          appliedNow.push(a);
          done = sharedSet(done, a.pair, true);
        }
      const next: WaitState = {
        ...state,
        receipted: withoutDone(state, machine, done),
        done,
        passed,
        refused,
        busy: sharedDelete(state.busy, machine),
        applied: appliedNow.reduce((log, a) => sharedSet(log, a.pair, a), state.applied),
      };
      // The pairs that passed are renamed now; a receipt that came meanwhile gets its own login next.
      const ready = readyOn(next, machine).filter((r) => has(passed, r.pair));
      if (ready.length > 0 && next.live)
        return settle(
          { ...next, busy: sharedSet(next.busy, machine, true) },
          [renameOn(state, machine, ready)],
          appliedNow,
        );
      const kicked = kick(next, machine);
      return settle(kicked.state, kicked.commands, appliedNow);
    }
    case 'consumer-renamed': {
      const { machine } = event;
      if (!has(state.busy, machine)) return same(state);
      const waiting = new Set(receiptedOn(state, machine).map((r) => r.pair));
      let done = state.done;
      const appliedNow: AppliedPair[] = [];
      for (const a of event.applied)
        if (ownPair(state, a.pair, machine) && waiting.has(a.pair) && !has(done, a.pair)) {
          appliedNow.push(a);
          done = sharedSet(done, a.pair, true);
        }
      // Copied only when this machine had failed (a retry that worked), which is rare.
      let failures = state.failures;
      if (failures.has(machine)) {
        const healed = new Map(failures);
        healed.delete(machine);
        failures = healed;
      }
      const kicked = kick(
        {
          ...state,
          receipted: withoutDone(state, machine, done),
          done,
          busy: sharedDelete(state.busy, machine),
          failures,
          applied: appliedNow.reduce((log, a) => sharedSet(log, a.pair, a), state.applied),
        },
        machine,
      );
      return settle(kicked.state, kicked.commands, appliedNow);
    }
    case 'channel-lost': {
      if (!has(state.busy, event.machine)) return same(state);
      const failures = new Map(state.failures).set(event.machine, {
        machine: event.machine,
        reason: event.reason,
      });
      // Tried again, as the poll did, until the wait is over; past it the machine's pairs stay staged.
      if (!state.ended)
        return settle({ ...state, failures }, [{ type: 'rename-later', machine: event.machine }], []);
      return settle({ ...state, failures, busy: sharedDelete(state.busy, event.machine) }, [], []);
    }
    case 'rename-due': {
      if (!has(state.busy, event.machine)) return same(state);
      const kicked = kick({ ...state, busy: sharedDelete(state.busy, event.machine) }, event.machine);
      return settle(kicked.state, kicked.commands, []);
    }
    case 'wait-expired':
    case 'wait-stopped':
      if (state.ended) return same(state);
      return settle({ ...state, ended: event.type === 'wait-expired' ? 'expired' : 'stopped' }, [], []);
    default: {
      const never: never = event;
      throw new Error(`unknown receipt-wait event ${String(never)}`);
    }
  }
}

const has = (map: SharedMap<unknown>, key: string): boolean => sharedView(map).has(key);

/** `machine`'s receipted pairs still to move or refuse. */
function receiptedOn(state: WaitState, machine: string): readonly ReceiptedPair[] {
  return sharedView(state.receipted).get(machine) ?? [];
}

/** The receipted pairs with those now `done` on `machine` taken out. */
function withoutDone(
  state: WaitState,
  machine: string,
  done: SharedMap<true>,
): SharedMap<readonly ReceiptedPair[]> {
  const before = receiptedOn(state, machine);
  const after = before.filter((r) => !has(done, r.pair));
  if (after.length === before.length) return state.receipted;
  return after.length > 0
    ? sharedSet(state.receipted, machine, after)
    : sharedDelete(state.receipted, machine);
}

/** Whether `pair` is one of this wait's, renamed on `machine`. */
function ownPair(state: WaitState, pair: string, machine: string): boolean {
  return state.consumerOf[pair] === machine && (state.live?.has(pair) ?? false);
}

/** The live receipted pairs on `machine` still to move, in the order their receipts came. */
function readyOn(state: WaitState, machine: string): ReceiptedPair[] {
  return receiptedOn(state, machine).filter((r) => state.live?.has(r.pair) && !has(state.done, r.pair));
}

/** If `machine` is idle and has receipted pairs: their test login first where one is due, else their rename. */
function kick(state: WaitState, machine: string): { state: WaitState; commands: WaitCommand[] } {
  if (state.live === undefined || has(state.busy, machine)) return { state, commands: [] };
  const ready = readyOn(state, machine);
  if (ready.length === 0) return { state, commands: [] };
  const busy = sharedSet(state.busy, machine, true);
  const untested = ready.filter((r) => state.tested.has(r.pair) && !has(state.passed, r.pair));
  if (untested.length > 0)
    return { state: { ...state, busy }, commands: [{ type: 'test-login', machine, pairs: untested }] };
  return { state: { ...state, busy }, commands: [renameOn(state, machine, ready)] };
}

/** The rename of `pairs` on `machine`, read back first where the machine's last rename failed. */
function renameOn(state: WaitState, machine: string, pairs: readonly ReceiptedPair[]): WaitCommand {
  return state.failures.has(machine)
    ? { type: 'rename-consumer', machine, pairs, readBack: true }
    : { type: 'rename-consumer', machine, pairs };
}

/** Ends the wait once every live pair is done, or it gave up, and nothing is in flight. */
function settle(state: WaitState, commands: WaitCommand[], appliedNow: readonly AppliedPair[]): WaitStep {
  if (state.live === undefined || sharedView(state.busy).size > 0) return { state, commands, appliedNow };
  // Only live pairs are ever done, so every one is done when the counts meet.
  const allDone = sharedView(state.done).size === state.live.size;
  if (!allDone && !state.ended) return { state, commands, appliedNow };
  const over = { ...state, over: true };
  return {
    state: over,
    commands: [...commands, { type: 'close-wait' }],
    appliedNow,
    result: {
      applied: [...sharedView(state.applied).values()],
      failures: [...state.failures.values()],
      refused: state.refused,
    },
  };
}
