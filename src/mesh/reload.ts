/**
 * A consumer's `reload:` (docs/mesh-rotation.md "Reloading the consumer's app"): most apps read
 * their credential once, at start, so a file replaced under a running app changes nothing until
 * someone restarts it — and "leaving that to whoever remembered" is the fault the mesh exists to
 * remove. The command runs on the consumer's machine right after its end is committed, with
 * stdin closed and its own bound; it may read the consumer file (its path is in
 * BATON_CONSUMER_FILE), and nothing secret is in its argv or environment. What comes back is
 * its exit status, its duration and the last lines of its stderr, bounded and with anything
 * that looks like a credential taken out.
 *
 * A failed reload does not roll the pair back: the database and the file agree, and an app
 * instance that did restart already uses the new credential. It is said by name (exit 3) and
 * `mesh status` shows it until a later reload of the consumer succeeds.
 */
import type { ConsumerReload, Inventory, ProviderConnect } from './inventory.js';
import { inventoryIndex } from './inventory.js';
import { poolerKeeper, type PoolerKeeper } from './pooler-remote.js';
import type { PlannedPair } from './rotation-plan.js';
import { reasonOf, type CommandResult, type PreparedCommand, type TransportFor } from './transport.js';

/** How many lines of stderr a reload's outcome keeps, and how long each may be. */
export const RELOAD_STDERR_LINES = 5;
export const RELOAD_STDERR_LINE_CHARS = 200;
/** At most this many reloads run at once on one machine (sshd allows 10 sessions per connection). */
export const RELOADS_PER_MACHINE = 3;

export interface ReloadOutcome {
  readonly consumer: string;
  readonly machine: string;
  /** The pairs whose committed end this reload followed. */
  readonly pairs: readonly string[];
  readonly result: 'ok' | 'failed' | 'timed-out';
  readonly exitCode?: number;
  readonly durationMs: number;
  /** The last lines of its stderr: raw text from the machine, credentials removed; shown only through outside-text. */
  readonly stderr: readonly string[];
  /** Why it could not be run or read, when the transport failed. */
  readonly reason?: string;
  /** When it ended (RFC 3339, the controller's clock). */
  readonly at: string;
}

/** What a rotation needs to know of the apps: built once from the inventory. */
export interface AppHooks {
  reloadOf(consumer: string): ConsumerReload | undefined;
  connectOf(provider: string): ProviderConnect | undefined;
  /** The auth_file poolers on another machine than their provider: the test login's pooler step (pooler-remote.ts). */
  readonly pooler?: PoolerKeeper;
}

export function appHooks(inventory: Inventory): AppHooks {
  const index = inventoryIndex(inventory);
  return {
    reloadOf: (consumer) => index.consumers.get(consumer)?.reload,
    connectOf: (provider) => index.providers.get(provider)?.connect,
    ...(inventory.poolers.length > 0 ? { pooler: poolerKeeper(inventory.poolers) } : {}),
  };
}

/**
 * Takes out of a reload's stderr what could be a credential before it is kept anywhere: the
 * secrets this rotation delivered (exactly), a `password=` value, and any run of 32 or more
 * base64url characters (a generated secret is 43). A reload that prints the consumer file
 * must not put the password into the journal.
 */
export function redactStderr(text: string, secrets: readonly string[] = []): string[] {
  let out = text;
  for (const secret of secrets) if (secret.length >= 8) out = out.split(secret).join('[secret]');
  out = out
    .replace(/(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)/gi, '$1[secret]')
    .replace(/[A-Za-z0-9_-]{32,}/g, '[secret]');
  return out
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.trim() !== '')
    .slice(-RELOAD_STDERR_LINES)
    .map((line) =>
      line.length > RELOAD_STDERR_LINE_CHARS ? `${line.slice(0, RELOAD_STDERR_LINE_CHARS)}…` : line,
    );
}

/** The reload's environment for the pairs whose committed ends it follows (one consumer's): never a secret. */
export function reloadEnv(rotation: string, pairs: readonly PlannedPair[]): Record<string, string> {
  const first = pairs[0]!;
  return {
    BATON_CONSUMER: first.consumer,
    BATON_PROVIDERS: [...new Set(pairs.map((p) => p.provider))].join(','),
    BATON_CONSUMER_FILE: first.consumerPath,
    BATON_CONSUMER_FILES: pairs.map((p) => p.consumerPath).join(':'),
    BATON_ROTATION: rotation,
  };
}

export interface Reloader {
  /** A pair's consumer end was committed: reload its consumer (once more if one is running). */
  committed(pair: PlannedPair): void;
  /**
   * app-rtt: the machine started this consumer's reload itself, right after the renames of
   * `pairs` (ChannelRelay): their commits are covered by `outcome` (undefined: it did not run,
   * so their commits reload as before). Said before those pairs' committed().
   */
  folded(consumer: string, pairs: readonly string[], outcome: Promise<CommandResult | undefined>): void;
  /** Resolves when every reload asked for has ended: one outcome per run. */
  settled(): Promise<ReloadOutcome[]>;
}

export interface ReloaderOptions {
  readonly transportFor: TransportFor;
  readonly hooks: AppHooks;
  /** The rotation's id, given to the command as BATON_ROTATION. */
  readonly rotation: string;
  /** The secrets delivered so far (for redaction only); may be empty. */
  readonly secrets?: () => readonly string[];
  readonly now?: () => Date;
  /**
   * The consumer's session opened ahead (Transport.prepareCommand), taken by its first reload:
   * the reload then costs one round trip and the command, not a session's set-up as well.
   */
  readonly prepared?: (consumer: string) => Promise<PreparedCommand | undefined> | undefined;
}

/**
 * One reload per consumer at a time: a second commit for the same consumer while its reload
 * runs (a consumer of two providers) asks for one more run after it, which then sees both files.
 */
export function reloader(options: ReloaderOptions): Reloader {
  const outcomes: ReloadOutcome[] = [];
  const running = new Map<string, Promise<void>>();
  const again = new Map<string, PlannedPair[]>();
  const perMachine = new Map<string, { free: number; queue: (() => void)[] }>();
  const slot = async (machine: string): Promise<() => void> => {
    let s = perMachine.get(machine);
    if (!s) perMachine.set(machine, (s = { free: RELOADS_PER_MACHINE, queue: [] }));
    const held = s;
    if (held.free > 0) held.free--;
    else await new Promise<void>((resolve) => held.queue.push(resolve));
    return () => {
      const next = held.queue.shift();
      if (next) next();
      else held.free++;
    };
  };
  /** app-rtt: reloads the machine started with a commit, by consumer, until their first commit takes them. */
  const folds = new Map<
    string,
    { pairs: Set<string>; outcome: Promise<CommandResult | undefined>; taken?: boolean }
  >();
  const alongNext = new Map<string, Promise<CommandResult | undefined>>();
  const runOnce = async (
    pairs: readonly PlannedPair[],
    reload: ConsumerReload,
    folded?: Promise<CommandResult | undefined>,
  ) => {
    const first = pairs[0]!;
    const release = await slot(first.consumerMachine);
    const started = performance.now();
    const at = () => (options.now?.() ?? new Date()).toISOString();
    const base = { consumer: first.consumer, machine: first.consumerMachine, pairs: pairs.map((p) => p.key) };
    try {
      const transport = options.transportFor(first.consumerMachine);
      if (!transport.runCommand) {
        outcomes.push({
          ...base,
          result: 'failed',
          durationMs: 0,
          stderr: [],
          reason: `the transport of ${first.consumerMachine} cannot run commands`,
          at: at(),
        });
        return;
      }
      const env = reloadEnv(options.rotation, pairs);
      // Started by the machine with the commit (app-rtt), else on the session opened while the
      // receipt was awaited, if there is one and it is still up, else on a session of its own.
      const ranAlong = folded ? await folded : undefined;
      const prepared = ranAlong ? undefined : await options.prepared?.(first.consumer);
      const result =
        ranAlong ??
        (await prepared?.run(env)) ??
        (await transport.runCommand({ command: reload.command, timeoutMs: reload.timeoutMs, env }));
      outcomes.push({
        ...base,
        result: result.timedOut ? 'timed-out' : result.exitCode === 0 ? 'ok' : 'failed',
        ...(result.exitCode === undefined ? {} : { exitCode: result.exitCode }),
        durationMs: result.durationMs,
        stderr: redactStderr(result.stderrTail, options.secrets?.() ?? []),
        at: at(),
      });
    } catch (error) {
      outcomes.push({
        ...base,
        result: 'failed',
        durationMs: Math.round(performance.now() - started),
        stderr: [],
        reason: redactStderr(reasonOf(error), options.secrets?.() ?? []).join(' '),
        at: at(),
      });
    } finally {
      release();
    }
  };
  const start = (
    consumer: string,
    pairs: PlannedPair[],
    reload: ConsumerReload,
    folded?: Promise<CommandResult | undefined>,
  ) => {
    const run = (async () => {
      let batch: PlannedPair[] | undefined = pairs;
      let along = folded;
      while (batch) {
        await runOnce(batch, reload, along);
        batch = again.get(consumer);
        again.delete(consumer);
        along = alongNext.get(consumer);
        alongNext.delete(consumer);
      }
      running.delete(consumer);
    })();
    running.set(consumer, run);
  };
  return {
    folded(consumer, pairs, outcome) {
      folds.set(consumer, { pairs: new Set(pairs), outcome });
    },
    committed(pair) {
      const reload = options.hooks.reloadOf(pair.consumer);
      if (!reload) return;
      const fold = folds.get(pair.consumer);
      if (fold?.pairs.has(pair.key)) {
        // The first of its pairs takes the outcome; the others were covered by the same run.
        fold.pairs.delete(pair.key);
        if (fold.pairs.size === 0) folds.delete(pair.consumer);
        if (!fold.taken) {
          fold.taken = true;
          if (running.has(pair.consumer)) {
            // A run of its own is still going: the machine's run is its next outcome.
            const waiting = again.get(pair.consumer) ?? [];
            if (!waiting.some((p) => p.key === pair.key)) waiting.push(pair);
            again.set(pair.consumer, waiting);
            alongNext.set(pair.consumer, fold.outcome);
          } else start(pair.consumer, [pair], reload, fold.outcome);
        }
        return;
      }
      if (running.has(pair.consumer)) {
        const waiting = again.get(pair.consumer) ?? [];
        if (!waiting.some((p) => p.key === pair.key)) waiting.push(pair);
        again.set(pair.consumer, waiting);
        return;
      }
      start(pair.consumer, [pair], reload);
    },
    async settled() {
      while (running.size > 0) await Promise.all([...running.values()]);
      return [...outcomes];
    },
  };
}

/** One line for a summary or a status detail, outside text left raw (the caller shows it). */
export function reloadWords(outcome: ReloadOutcome): string {
  const took = `${(outcome.durationMs / 1000).toFixed(1)} s`;
  switch (outcome.result) {
    case 'ok':
      return `reload of ${outcome.consumer} on ${outcome.machine} succeeded (${took})`;
    case 'timed-out':
      return `reload of ${outcome.consumer} on ${outcome.machine} TIMED OUT after ${took}`;
    case 'failed':
      return outcome.reason
        ? `reload of ${outcome.consumer} on ${outcome.machine} FAILED: ${outcome.reason}`
        : `reload of ${outcome.consumer} on ${outcome.machine} FAILED: exit ${outcome.exitCode ?? '?'} after ${took}`;
  }
}
