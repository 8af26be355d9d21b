/**
 * The app's part of a rotation (docs/mesh-rotation.md "The app, not only its file"), kept out of
 * the rotation's own sequence so it can be re-applied after that sequence moves: the test login
 * from each consumer's machine before its end is committed (the gate of the receipt wait), and
 * the consumer's `reload:` right after. The new secrets of pairs whose provider has `connect:`
 * stay in this closure's memory until the wait ends — never in the flow's state, never on disk.
 */
import {
  groupBy,
  type AlongReload,
  type ConsumerAlong,
  type ConsumerGate,
  type GateRefusal,
} from '../mesh/delivery.js';
import type { SecretDigest } from '../mesh/digest.js';
import type { ProviderConnect } from '../mesh/inventory.js';
import { loginThroughPooler, takeBackUnmoved } from '../mesh/pooler-remote.js';
import { reloadEnv, reloader, type AppHooks, type Reloader } from '../mesh/reload.js';
import type { PlannedPair, RotationPlan } from '../mesh/rotation-plan.js';
import type { Secret } from '../mesh/secret.js';
import {
  isRelayed,
  preopenStream,
  testLogin,
  testLoginRecord,
  TEST_LOGIN_TIMEOUT_MS,
  type AppResults,
  type PreopenedStream,
  type TestLoginRecord,
  type TestLoginResult,
} from '../mesh/test-login.js';
import type {
  ArmResult,
  BoundRenameChannel,
  CommandResult,
  MachineStream,
  PreparedCommand,
  TransportFor,
} from '../mesh/transport.js';

export interface AppGate {
  /** For prepareAll: which secrets to keep (only pairs whose provider has `connect:`; none without hooks). */
  keep(plan: RotationPlan): ((pair: string, secret: Secret) => void) | undefined;
  /**
   * The receipt wait begins: a stream from each such pair's consumer machine to its `connect:`
   * is opened now, so the test login after the receipt costs only its own round trips. With
   * `channelOf` (the wait's rename channels), on the channel where it relays (app-rtt).
   */
  preopen(
    plan: RotationPlan,
    rotation: string,
    channelOf?: (machine: string) => Promise<BoundRenameChannel | undefined>,
  ): void;
  gateOption(): { gate?: ConsumerGate; along?: ConsumerAlong };
  /** The pairs whose provider names `connect:`: the rotation's reducer has each tested before its consumer moves. */
  tested(plan: RotationPlan): string[];
  /** A pair's consumer end was committed: its consumer's reload, if it has one. */
  committed(rotation: string, pair: string, plan: RotationPlan): void;
  /**
   * Waits for the reloads; drops the kept secrets but those of `unmoved` (pairs a roll-back may
   * still finish: their test login needs them). Undefined when nothing of the app was done.
   */
  finish(unmoved?: ReadonlySet<string>): Promise<AppResults | undefined>;
  /**
   * The roll-back is about to finish `pairs` (their receipt showed the new password): each whose
   * provider names `connect:` is tried from its consumer's machine first. Resolves with the pairs
   * that may not move (refused, or no credential left to try), recorded like any test login.
   */
  loginBeforeMove(pairs: readonly PlannedPair[]): Promise<ReadonlySet<string>>;
  /** The test logins made since finish() (the roll-back's), for its journal record. */
  lateLogins(): readonly TestLoginRecord[];
  /**
   * Drops the kept secrets and ends the pre-opened streams (the wait failed or never began);
   * resolves once a pooler line given for a pair whose consumer did not move is taken back
   * (pooler-remote.ts `takeBackUnmoved`; the roll-back awaits it).
   */
  forget(): Promise<void>;
}

export function appGate(deps: { readonly transportFor: TransportFor; readonly app?: AppHooks }): AppGate {
  const hooks = deps.app;
  const kept = new Map<string, Secret>();
  const testLogins: TestLoginRecord[] = [];
  /** Pooler lines given to pairs whose test login passed: taken back by forget() where the consumer did not move. */
  const givenLines = new Map<
    string,
    { readonly pair: PlannedPair; readonly digest: SecretDigest; readonly undo: () => Promise<void> }
  >();
  /** One per pair with `connect:`, from preopen() until its test login takes it or the wait ends. */
  const streams = new Map<string, PreopenedStream>();
  const closeStreams = () => {
    for (const stream of streams.values()) stream.close();
    streams.clear();
  };
  /** app-truth: each reloading consumer's session, opened by preopen() and taken by its first reload. */
  const sessions = new Map<string, Promise<PreparedCommand | undefined>>();
  const closeSessions = () => {
    for (const session of sessions.values()) void session.then((s) => s?.close());
    sessions.clear();
  };
  /** How many test logins finish() reported: the later ones are the roll-back's. */
  let finishedAt = 0;
  let reloads: Reloader | undefined;
  let rotationId: string | undefined;
  const reloaderFor = (rotation: string) =>
    (reloads ??= reloader({
      transportFor: deps.transportFor,
      hooks: hooks!,
      rotation,
      secrets: () => [...kept.values()].map((s) => s.reveal()),
      prepared: (consumer) => {
        const session = sessions.get(consumer);
        sessions.delete(consumer);
        return session;
      },
    }));
  /** app-rtt: consumers whose reload was already handed to a machine (or ran) in this rotation. */
  const reloading = new Set<string>();
  /**
   * app-rtt: the reload `pairs` (one consumer's, all in this commit) can carry on the machine's
   * commit: only the consumer's first in this rotation and only when none of its pairs is left
   * out of that commit (a second run would be needed for those anyway, as before).
   */
  const foldable = (pairs: readonly PlannedPair[], batch: readonly PlannedPair[]) => {
    const consumer = pairs[0]!.consumer;
    const reload = hooks?.reloadOf(consumer);
    if (!reload || rotationId === undefined || reloading.has(consumer)) return undefined;
    if (batch.filter((p) => p.consumer === consumer).length !== pairs.length) return undefined;
    return { command: reload.command, timeoutMs: reload.timeoutMs, env: reloadEnv(rotationId, pairs) };
  };
  const fold = (pairs: readonly PlannedPair[], outcome: Promise<CommandResult | undefined>) => {
    const consumer = pairs[0]!.consumer;
    reloading.add(consumer);
    reloaderFor(rotationId!).folded(
      consumer,
      pairs.map((p) => p.key),
      outcome,
    );
    // Its prepared session is not needed: the machine runs the reload itself.
    void sessions.get(consumer)?.then((s) => s?.close());
    sessions.delete(consumer);
  };
  /**
   * The test login of `pair` with the new secret kept for it, its pooler step first (a pooler the
   * controller keeps gets the login's verifier: pooler-remote.ts); a line given stays on record
   * for forget() to take back if the consumer does not move.
   */
  const loginKept = (
    appHooks: AppHooks,
    pair: PlannedPair,
    connect: ProviderConnect,
    on: {
      readonly preopened?: PreopenedStream;
      readonly arm?: (stream: MachineStream) => void;
      readonly moved?: () => Promise<boolean>;
    } = {},
  ): Promise<TestLoginResult> => {
    const secret = kept.get(pair.key);
    if (!secret)
      return Promise.resolve({ ok: false, ms: 0, reason: 'baton no longer holds the new credential to try' });
    return loginThroughPooler(
      appHooks.pooler,
      { pair, connect, digest: secret.digest, transportFor: deps.transportFor },
      () =>
        testLogin(
          deps.transportFor(pair.consumerMachine),
          connect,
          pair.login?.role ?? pair.role,
          secret.reveal(),
          TEST_LOGIN_TIMEOUT_MS,
          on.preopened,
          on.arm,
        ),
      on.moved,
      (undo) => givenLines.set(pair.key, { pair, digest: secret.digest, undo }),
    );
  };
  const gate: ConsumerGate | undefined = hooks
    ? async (batch, channel) => {
        const moved = new Map<string, number>();
        const refusals = await Promise.all(
          batch.map(async (pair): Promise<GateRefusal | undefined> => {
            const connect = hooks.connectOf(pair.provider);
            if (!connect) return undefined;
            const login = pair.login?.role ?? pair.role;
            const preopened = streams.get(pair.key);
            streams.delete(pair.key);
            // app-rtt: on a relayed socket the rename (and the reload) is armed before the login's
            // first byte, so the machine moves the consumer on the login's own ReadyForQuery.
            let armed: { done: Promise<ArmResult | undefined>; reload: boolean } | undefined;
            const arm = (stream: MachineStream) => {
              if (!channel?.relay || !isRelayed(stream) || armed) return;
              const reload = foldable([pair], batch);
              armed = {
                done: stream.arm([pair.consumerPath], reload ? [reload] : []).catch(() => undefined),
                reload: reload !== undefined,
              };
            };
            const result = await loginKept(hooks, pair, connect, {
              preopened,
              arm,
              moved: async () => (armed ? (await armed.done)?.moved === true : false),
            });
            preopened?.close();
            // What the machine did is the truth about the file; the login's verdict is the record's.
            const machine = armed ? await armed.done : undefined;
            if (machine?.moved) {
              moved.set(pair.key, machine.at);
              if (armed!.reload) fold([pair], machine.reloads[0] ?? Promise.resolve(undefined));
            }
            testLogins.push(testLoginRecord(pair, login, connect, result, machine?.moved === true));
            // A file the machine moved is not refused whatever the controller read (see docs).
            return result.ok || machine?.moved
              ? undefined
              : { pair: pair.key, reason: result.reason, ...(result.code ? { code: result.code } : {}) };
          }),
        );
        return { refused: refusals.filter((r): r is GateRefusal => r !== undefined), moved };
      }
    : undefined;
  // app-rtt: a reload rides the consumer's plain rename (no `connect:`) on a relaying channel.
  const along: ConsumerAlong | undefined = hooks
    ? (batch) => {
        const out: AlongReload[] = [];
        for (const [, pairs] of groupBy(batch, (p) => p.consumer)) {
          const request = foldable(pairs, batch);
          if (!request) continue;
          reloading.add(pairs[0]!.consumer);
          out.push({
            request,
            settle: (outcome) => {
              if (outcome) fold(pairs, outcome);
              else reloading.delete(pairs[0]!.consumer);
            },
          });
        }
        return out;
      }
    : undefined;
  return {
    keep(plan) {
      if (!hooks || !plan.pairs.some((p) => hooks.connectOf(p.provider))) return undefined;
      const wanted = new Set(plan.pairs.filter((p) => hooks.connectOf(p.provider)).map((p) => p.key));
      return (pair, secret) => {
        if (wanted.has(pair)) kept.set(pair, secret);
      };
    },
    preopen(plan, rotation, channelOf) {
      if (!hooks) return;
      closeStreams();
      closeSessions();
      rotationId = rotation;
      reloading.clear();
      for (const pair of plan.pairs) {
        const connect = hooks.connectOf(pair.provider);
        const channel = channelOf?.(pair.consumerMachine);
        if (connect)
          streams.set(pair.key, preopenStream(deps.transportFor(pair.consumerMachine), connect, channel));
        const reload = hooks.reloadOf(pair.consumer);
        const transport = deps.transportFor(pair.consumerMachine);
        // A channel that relays runs the reload itself; a session is prepared only where it cannot.
        if (reload && transport.prepareCommand && !sessions.has(pair.consumer))
          sessions.set(
            pair.consumer,
            (async () =>
              (await channel)?.relay
                ? undefined
                : transport.prepareCommand!(reload.command, reload.timeoutMs))().catch(() => undefined),
          );
      }
    },
    gateOption: () => ({ ...(gate ? { gate } : {}), ...(along ? { along } : {}) }),
    tested: (plan) => (hooks ? plan.pairs.filter((p) => hooks.connectOf(p.provider)).map((p) => p.key) : []),
    committed(rotation, key, plan) {
      if (!hooks) return;
      const pair = plan.pairs.find((p) => p.key === key);
      if (!pair || !hooks.reloadOf(pair.consumer)) return;
      reloading.add(pair.consumer);
      reloaderFor(rotation).committed(pair);
    },
    async finish(unmoved) {
      closeStreams();
      const outcomes = reloads ? await reloads.settled() : [];
      closeSessions();
      for (const key of [...kept.keys()]) if (!unmoved?.has(key)) kept.delete(key);
      finishedAt = testLogins.length;
      if (testLogins.length === 0 && outcomes.length === 0) return undefined;
      return { testLogins: [...testLogins], reloads: outcomes };
    },
    async loginBeforeMove(pairs) {
      const mayNot = new Set<string>();
      if (!hooks) return mayNot;
      await Promise.all(
        pairs.map(async (pair) => {
          const connect = hooks.connectOf(pair.provider);
          if (!connect) return;
          const login = pair.login?.role ?? pair.role;
          const result = await loginKept(hooks, pair, connect);
          kept.delete(pair.key);
          testLogins.push(testLoginRecord(pair, login, connect, result));
          if (!result.ok) mayNot.add(pair.key);
        }),
      );
      return mayNot;
    },
    lateLogins: () => testLogins.slice(finishedAt),
    forget: () => {
      closeStreams();
      closeSessions();
      kept.clear();
      const lines = [...givenLines.values()];
      givenLines.clear();
      return takeBackUnmoved(lines, deps.transportFor);
    },
  };
}

/** The journal's part: each test login and reload, names and the server's or the command's words only. */
export function journalApp(app: AppResults | undefined): {
  test_logins?: readonly TestLoginRecord[];
  reloads?: AppResults['reloads'];
} {
  if (!app) return {};
  return {
    ...(app.testLogins.length > 0 ? { test_logins: app.testLogins } : {}),
    ...(app.reloads.length > 0 ? { reloads: app.reloads } : {}),
  };
}
