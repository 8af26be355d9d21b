/**
 * A baton that dies (SIGKILL, power) right after a provider commit: a transport wrapper, composed
 * by the test like the drill's unplugged machine, under which every call after the first
 * provider-end commit never returns. The rotation stops exactly there — provider end live with
 * its previous file kept, consumer end staged, journal at "committed" — which is what a killed
 * process leaves on the holders. Nothing in src knows about it.
 */
import type { BoundTransport, TransportFor } from '../../src/mesh/transport.js';

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
          lock: (dir, holder) => inner.lock(dir, holder),
        };
        wrapped.set(machine, t);
      }
      return t;
    },
  };
}
