/**
 * A baton that dies (SIGKILL, power) right after a provider commit: a transport wrapper, composed
 * by the test like the drill's unplugged machine, under which every call after the first
 * provider-end commit never returns. The rotation stops exactly there — provider end live with
 * its previous file kept, consumer end staged, journal at "committed" — which is what a killed
 * process leaves on the holders. Nothing in src knows about it.
 */
import {
  recordsThenInTurn,
  type AnnouncedStep,
  type BoundChannelRelay,
  type BoundRenameChannel,
  type BoundTransport,
  type MachineRecord,
  type TransportFor,
} from '../../src/mesh/transport.js';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import type { RotationDeps } from '../../src/app/rotation-run-effect.js';
import type { Inventory } from '../../src/mesh/inventory.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';

export interface DyingBaton {
  readonly transportFor: TransportFor;
  /** Resolves once the provider commit is done and baton is "dead". */
  readonly dead: Promise<void>;
}

export function dyingAfterProviderCommit(
  transportFor: TransportFor,
  isProviderPath: (path: string) => boolean = (p) => p.includes('/provides/'),
): DyingBaton {
  let dead = false;
  let died: () => void = () => undefined;
  const deadPromise = new Promise<void>((resolve) => {
    died = resolve;
  });
  const never = new Promise<never>(() => undefined);
  const wrapped = new Map<string, BoundTransport>();
  const gate =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> =>
      dead ? never : fn(...args);
  return {
    dead: deadPromise,
    transportFor: (machine) => {
      let t = wrapped.get(machine);
      if (!t) {
        const inner = transportFor(machine);
        t = {
          machine: inner.machine,
          resolve: gate(() => inner.resolve()),
          stage: gate((files) => inner.stage(files)),
          commit: gate(async (paths) => {
            await inner.commit(paths);
            if (paths.some(isProviderPath)) {
              dead = true;
              died();
            }
          }),
          unstage: gate((paths) => inner.unstage(paths)),
          keepPrevious: gate((paths) => inner.keepPrevious(paths)),
          restorePrevious: gate((paths) => inner.restorePrevious(paths)),
          discardPrevious: gate((paths) => inner.discardPrevious(paths)),
          retire: gate((paths) => inner.retire(paths)),
          digests: gate((paths) => inner.digests(paths)),
          readTexts: gate((paths) => inner.readTexts(paths)),
          writeRecords: gate((records) => inner.writeRecords(records)),
          // The calls it stands for, each one gated: a baton dies between a record and its step too.
          writeRecordsThen: (records, step) => recordsThenInTurn(t!, records, step),
          // A baton that died holds no lock: the machine let it go with the connection.
          lock: (dir, holder) => inner.lock(dir, holder),
        };
        wrapped.set(machine, t);
      }
      return t;
    },
  };
}

/** Where a baton dies after its consumer commit: right after it, or at the switch's `retire` (everything before it done). */
export type AfterConsumerCommit = 'after-consumer-commit' | 'at-retire';

/**
 * A baton that dies after a pair's consumer end is committed: from `point` on, every call
 * never returns. `at-retire` is the last moment of a switch back (intent `finished`, previous
 * file dropped, the logins' files not yet removed); `after-consumer-commit` the first (intent
 * still `committing`).
 */
export function dyingAfterConsumerCommit(
  transportFor: TransportFor,
  point: AfterConsumerCommit,
  isConsumerPath: (path: string) => boolean = (p) => p.includes('/consumes/'),
): DyingBaton {
  let dead = false;
  let died: () => void = () => undefined;
  const deadPromise = new Promise<void>((resolve) => {
    died = resolve;
  });
  const die = () => {
    dead = true;
    died();
  };
  const never = new Promise<never>(() => undefined);
  const wrapped = new Map<string, BoundTransport>();
  const gate =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> =>
      dead ? never : fn(...args);
  return {
    dead: deadPromise,
    transportFor: (machine) => {
      let t = wrapped.get(machine);
      if (!t) {
        const inner = transportFor(machine);
        t = {
          machine: inner.machine,
          resolve: gate(() => inner.resolve()),
          stage: gate((files) => inner.stage(files)),
          commit: gate(async (paths) => {
            await inner.commit(paths);
            if (point === 'after-consumer-commit' && paths.some(isConsumerPath)) die();
          }),
          unstage: gate((paths) => inner.unstage(paths)),
          keepPrevious: gate((paths) => inner.keepPrevious(paths)),
          restorePrevious: gate((paths) => inner.restorePrevious(paths)),
          discardPrevious: gate((paths) => inner.discardPrevious(paths)),
          retire: gate(async (paths) => {
            if (point === 'at-retire') {
              die();
              return never;
            }
            return inner.retire(paths);
          }),
          digests: gate((paths) => inner.digests(paths)),
          readTexts: gate((paths) => inner.readTexts(paths)),
          writeRecords: gate((records) => inner.writeRecords(records)),
          // The calls it stands for, each one gated: a baton dies between a record and its step too.
          writeRecordsThen: (records, step) => recordsThenInTurn(t!, records, step),
          lock: (dir, holder) => inner.lock(dir, holder),
        };
        wrapped.set(machine, t);
      }
      return t;
    },
  };
}

/**
 * One call of a command's run, named by its transport method (a rename channel's `commit` is
 * `commit` too: a rename is a rename, whichever way it went out) and what it carries.
 */
export interface CallPoint {
  readonly method: string;
  /** Whether this call is the one (its arguments: paths, records); every call of `method` if absent. */
  readonly matches?: (args: readonly unknown[]) => boolean;
  /** Before the machine does it, or once it did and before baton hears back. */
  readonly when: 'before' | 'after';
}

/** A `writeRecords` call writing records of `phase` (an intent's step). */
export const recordsAt =
  (phase: string) =>
  (args: readonly unknown[]): boolean =>
    (args[0] as readonly { readonly text: string }[]).some(
      (r) => (JSON.parse(r.text) as { phase?: string }).phase === phase,
    );

/** A call on paths of one end (`/provides/` or `/consumes/`). */
export const pathsUnder =
  (part: string) =>
  (args: readonly unknown[]): boolean =>
    Array.isArray(args[0]) && (args[0] as unknown[]).some((p) => typeof p === 'string' && p.includes(part));

/**
 * A baton interrupted at one call of its run (`at`), every other call untouched:
 * - `killed` (SIGKILL, power): from that call on, no call returns and no receipt is heard, on
 *   any machine, through every method (the optional ones and a rename channel's too), so the
 *   run stops exactly there, as a dead process leaves the machines;
 * - `timed-out` (a machine slower than `--timeout`): that one call fails with the bound's words
 *   ("no answer within 15 s"), done on the machine or not as `when` says; the run goes on.
 * Nothing in src knows about it; the lock passes through (a dead baton's went with its connection).
 */
export function interruptedAt(
  transportFor: TransportFor,
  at: CallPoint,
  how: 'killed' | 'timed-out',
): DyingBaton {
  let dead = false;
  let hit = false;
  let died: () => void = () => undefined;
  const deadPromise = new Promise<void>((resolve) => {
    died = resolve;
  });
  const never = new Promise<never>(() => undefined);
  /** Runs `call` unless baton is dead; at the point, dies or times out. */
  const through = async (machine: string, method: string, args: unknown[], call: () => Promise<unknown>) => {
    if (dead) return never;
    const here = !hit && at.method === method && (at.matches?.(args) ?? true);
    if (!here) return call();
    hit = true;
    if (at.when === 'after') await call();
    if (how === 'killed') {
      dead = true;
      died();
      return never;
    }
    died();
    throw new Error(`${machine}: no answer within 15 s`);
  };
  const channelOf = (machine: string, channel: BoundRenameChannel): BoundRenameChannel => ({
    get clock() {
      return channel.clock;
    },
    commit: (paths) => through(machine, 'commit', [paths], () => channel.commit(paths)) as Promise<number>,
    close: () => channel.close(),
    ...(channel.relay
      ? {
          relay: {
            openSocket: (host, port, until) =>
              through(machine, 'openSocket', [host, port], () =>
                channel.relay!.openSocket(host, port, until),
              ) as ReturnType<BoundChannelRelay['openSocket']>,
            commitThen: (paths, reloads) =>
              through(machine, 'commit', [paths, reloads], () =>
                channel.relay!.commitThen(paths, reloads),
              ) as ReturnType<BoundChannelRelay['commitThen']>,
          },
        }
      : {}),
  });
  const wrapped = new Map<string, BoundTransport>();
  return {
    dead: deadPromise,
    transportFor: (machine) => {
      let t = wrapped.get(machine);
      if (!t) {
        const inner = transportFor(machine);
        t = new Proxy(inner, {
          get(target, prop, receiver) {
            const value: unknown = Reflect.get(target, prop, receiver);
            if (typeof value !== 'function' || prop === 'lock') return value;
            const fn = value as (...args: unknown[]) => Promise<unknown>;
            const method = String(prop);
            // The calls it stands for, through this same proxy: the point may be its record or its step.
            if (method === 'writeRecordsThen')
              return (records: readonly MachineRecord[], step: AnnouncedStep) =>
                recordsThenInTurn(receiver as BoundTransport, records, step);
            return (...args: unknown[]) => {
              // A dead baton hears no receipt its watch was still reading.
              if (method === 'watchTexts') {
                const onChange = args[2] as (changes: unknown) => void;
                args[2] = (changes: unknown) => (dead ? undefined : onChange(changes));
              }
              return through(machine, method, args, async () => {
                const result = await fn.apply(target, args);
                return method === 'openChannel' ? channelOf(machine, result as BoundRenameChannel) : result;
              });
            };
          },
        });
        wrapped.set(machine, t);
      }
      return t;
    },
  };
}

/**
 * `mesh rotate --yes` of `plan` in this process, on `baton`'s transports, not awaited: the test
 * awaits `baton.dead` and then reads what the machines were left with. The deps every such test
 * gave by hand (the inventory's mesh identity, two at a time, a 10 ms poll); `deps` adds or
 * overrides (a shorter wait, the app hooks).
 */
export function rotationDyingIn(
  baton: DyingBaton,
  rotation: {
    readonly id: string;
    readonly plan: RotationPlan;
    readonly inventory: Inventory;
    readonly journalDir: string;
  },
  deps: Partial<RotationDeps> = {},
): void {
  void runRotationPlain({
    id: rotation.id,
    plan: rotation.plan,
    yes: true,
    write: () => undefined,
    deps: {
      transportFor: baton.transportFor,
      journalDir: rotation.journalDir,
      operator: 't',
      resolve: { concurrency: 2 },
      concurrency: 2,
      waitMs: 60_000,
      pollMs: 10,
      mesh: meshIdentity(rotation.inventory),
      ...deps,
    },
  });
}
