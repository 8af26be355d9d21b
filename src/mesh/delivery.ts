/**
 * The two phases of a delivery (docs/mesh-rotation.md steps 5–7). Prepare stages `<role>.next` on both
 * ends of every pair and takes nothing live; commit renames the provider ends, then each
 * pair's consumer end once its provider's receipt shows the database has the new password. Any prepare failure removes EVERY staged file on every holder that answers, so a failed rotation
 * leaves a mesh that has not rotated rather than one that has half-rotated; a staged file is
 * never live, so one left on a machine that did not answer changes nothing.
 */
import {
  reasonOf,
  STAGED_SUFFIX,
  TransportError,
  type BoundRenameChannel,
  type CommandRequest,
  type CommandResult,
  type TransportFor,
} from './transport.js';
import { parseReceipt, type SecretDigest } from './digest.js';
import { mapBounded } from './map-bounded.js';
import type { Holder, PlannedPair } from './rotation-plan.js';
import { Secret } from './secret.js';
import { formatConsumerConninfo } from './alternating.js';

/**
 * Where a pair's CONSUMER-end digest is kept in a rotation's digests, when it differs from the
 * provider end's: an alternating consumer end names its login beside the secret, so its text
 * (and digest) is its own. `digests[pair]` stays the provider end's, which the receipt carries.
 */
export function consumerDigestKey(pair: string): string {
  return `${pair}\0consumes`;
}

/** The digest a pair's end holds once live: the consumer end's own where it has one. */
export function endDigest(
  digests: Readonly<Record<string, SecretDigest>>,
  pair: string,
  end: 'provides' | 'consumes',
): SecretDigest | undefined {
  return end === 'consumes' ? (digests[consumerDigestKey(pair)] ?? digests[pair]) : digests[pair];
}

/**
 * The text each end of a pair receives: the provider end the secret; the consumer end the same
 * secret, or for an alternating pair `user=<login> password='<secret>'` (formatConsumerConninfo).
 */
export function endSecrets(pair: PlannedPair, secret: Secret): { provides: Secret; consumes: Secret } {
  return {
    provides: secret,
    consumes: pair.login ? Secret.fromText(formatConsumerConninfo(pair.login.role, secret.reveal())) : secret,
  };
}

export interface MachineFailure {
  readonly machine: string;
  readonly reason: string;
}

export type PrepareResult =
  | { readonly ok: true; readonly digests: Readonly<Record<string, SecretDigest>> }
  | {
      readonly ok: false;
      readonly failures: readonly MachineFailure[];
      readonly unstageFailures: readonly MachineFailure[];
    };

/**
 * Generates one secret per pair, stages it on both ends, then reads the staged digests back:
 * a holder that wrote something else (full disk, a truncating filter) fails here, before
 * anything is live. The secrets leave scope when this returns; only digests go on.
 */
export async function prepareAll(
  pairs: readonly PlannedPair[],
  holders: readonly Holder[],
  transportFor: TransportFor,
  concurrency: number,
  onStaged: (machine: string, files: number) => void,
  /** app-truth: handed each pair's provider-end secret before the rest leave scope (the test login needs it). */
  keep?: (pair: string, secret: Secret) => void,
): Promise<PrepareResult> {
  const secrets = new Map(pairs.map((p) => [p.key, endSecrets(p, Secret.generate())] as const));
  if (keep) for (const [key, secret] of secrets) keep(key, secret.provides);
  const digests: Record<string, SecretDigest> = {};
  for (const [key, secret] of secrets) {
    digests[key] = secret.provides.digest;
    if (secret.consumes !== secret.provides) digests[consumerDigestKey(key)] = secret.consumes.digest;
  }
  const failures: MachineFailure[] = [];
  /** Machines that did not answer: clean-up does not wait on them a second time. */
  const unreachable = new Set<string>();
  await mapBounded(holders, concurrency, async (holder) => {
    if (failures.length > 0) return;
    try {
      const transport = transportFor(holder.machine);
      const landed = await transport.stage(
        holder.receives.map((d) => ({ path: d.path, secret: secrets.get(d.pair)![d.end] })),
      );
      holder.receives.forEach((d, i) => {
        if (landed[i] !== endDigest(digests, d.pair, d.end))
          throw new Error(`the staged ${d.path}.next does not match what was sent`);
      });
      onStaged(holder.machine, holder.receives.length);
    } catch (error) {
      if (error instanceof TransportError && error.unreachable) {
        unreachable.add(holder.machine);
        failures.push({
          machine: holder.machine,
          reason: `${reasonOf(error)} — not asked again to remove what it staged: it holds nothing new if staging failed before writing, else unused ${STAGED_SUFFIX} files that the next rotation replaces (mesh status shows them)`,
        });
      } else failures.push({ machine: holder.machine, reason: reasonOf(error) });
    }
  });
  secrets.clear();
  if (failures.length === 0) return { ok: true, digests };
  const unstageFailures = await unstageAll(
    holders.filter((h) => !unreachable.has(h.machine)),
    transportFor,
    concurrency,
  );
  return { ok: false, failures, unstageFailures };
}

/** Removes every staged file on every holder; returns the machines where that failed. */
export async function unstageAll(
  holders: readonly Holder[],
  transportFor: TransportFor,
  concurrency: number,
): Promise<MachineFailure[]> {
  const failures: MachineFailure[] = [];
  await mapBounded(holders, concurrency, async (holder) => {
    try {
      await transportFor(holder.machine).unstage(holder.receives.map((d) => d.path));
    } catch (error) {
      failures.push({ machine: holder.machine, reason: reasonOf(error) });
    }
  });
  return failures;
}

export interface CommitStep {
  readonly machine: string;
  readonly end: 'provides' | 'consumes';
  readonly paths: readonly string[];
}

/** Each holder's provider-end files in one call (`only`: `machine\0path` keys to include). */
export function providerCommitSteps(holders: readonly Holder[], only?: ReadonlySet<string>): CommitStep[] {
  const steps: CommitStep[] = [];
  for (const holder of holders) {
    const paths = holder.receives
      .filter((d) => d.end === 'provides' && (!only || only.has(`${holder.machine}\0${d.path}`)))
      .map((d) => d.path);
    if (paths.length > 0) steps.push({ machine: holder.machine, end: 'provides', paths });
  }
  return steps;
}

export interface CommitResult {
  readonly committed: readonly CommitStep[];
  /** pair-independent: `machine\0path` → the digest of the previous provider file kept beside it. */
  readonly previous: Readonly<Record<string, SecretDigest>>;
  readonly failures: readonly MachineFailure[];
}

/**
 * Renames the provider ends into place: the provisioner applies them and writes receipts.
 * First each live provider file is kept beside it (`previousPath`), so a pair that does not
 * finish can be rolled back by a rename on the provider's machine.
 * Consumer ends are NOT committed here — each waits for its own receipt
 * (commitConsumersOnReceipt). A machine that fails leaves its pairs staged for `mesh resume`;
 * the other machines' pairs go on, since their provisioners may already be applying them.
 */
export async function commitProviderEnds(
  steps: readonly CommitStep[],
  transportFor: TransportFor,
  concurrency: number,
  onCommitted: (step: CommitStep, previous: readonly (SecretDigest | undefined)[]) => void,
  /** The receipt wait's rename channels (ReceiptWait.channel): a provider's renames go on its open one. */
  channelFor?: (machine: string) => Promise<BoundRenameChannel | undefined>,
): Promise<CommitResult> {
  const committed: CommitStep[] = [];
  const previous: Record<string, SecretDigest> = {};
  const failures: MachineFailure[] = [];
  await mapBounded(steps, concurrency, async (step) => {
    try {
      const transport = transportFor(step.machine);
      const kept = await transport.keepPrevious(step.paths);
      // On the channel already open to the machine the renames are one request to a process
      // that is running, answered once they are done and synced: no session winds down after
      // the last rename while the receipts of the first ones (their consumers' windows) wait.
      const channel = await channelFor?.(step.machine);
      if (channel) await channel.commit(step.paths);
      else await transport.commit(step.paths);
      step.paths.forEach((p, i) => {
        if (kept[i]) previous[`${step.machine}\0${p}`] = kept[i]!;
      });
      committed.push(step);
      onCommitted(step, kept);
    } catch (error) {
      failures.push({ machine: step.machine, reason: reasonOf(error) });
    }
  });
  return { committed, previous, failures };
}

/** How the pairs' receipts are waited for, whether the new password is applied or the old one restored. */
export interface ReceiptPolling {
  readonly concurrency: number;
  /** How long to wait for the receipt to show the expected password (0: look once). */
  readonly waitMs: number;
  readonly pollMs: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

export interface ApplyWait extends ReceiptPolling {
  /** Ends the wait early (the operator cancelled, a signal, a closed output): what is unconfirmed is then rolled back. */
  readonly stop?: AbortSignal;
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

export interface ConsumerCommitResult {
  readonly applied: readonly AppliedPair[];
  /** Consumer machines whose rename failed; their pairs' consumer ends are still staged. */
  readonly failures: readonly MachineFailure[];
  /** app-truth: pairs the gate (the test login) refused to move; their consumer ends are still staged. */
  readonly refused?: readonly GateRefusal[];
}

/** A pair whose consumer end the gate would not commit, with the reason (raw outside text). */
export interface GateRefusal {
  readonly pair: string;
  readonly reason: string;
  readonly code?: string;
}

/** What the gate decided for a batch. */
export interface GateVerdict {
  readonly refused: readonly GateRefusal[];
  /**
   * app-rtt: pairs whose consumer end the machine already renamed itself (a commit armed on the
   * test login's relayed connection, ChannelRelay): when, ms since the epoch by the MACHINE's clock.
   */
  readonly moved?: ReadonlyMap<string, number>;
}

/**
 * app-truth: asked, after a batch's receipts and before its consumer ends are renamed, which of
 * them must NOT move (test-login.ts); the others are renamed as before. It is handed the consumer
 * machine's rename channel, on which it may move a pair itself (GateVerdict.moved).
 */
export type ConsumerGate = (
  batch: readonly PlannedPair[],
  channel: BoundRenameChannel | undefined,
) => Promise<GateVerdict>;

/**
 * app-rtt: the reloads to start on the consumer machine right after a batch's renames, in the
 * same request (ChannelRelay.commitThen); each is told its outcome, or undefined when it was not
 * carried (no relay, the commit failed) and must be run as before.
 */
export type ConsumerAlong = (batch: readonly PlannedPair[]) => readonly AlongReload[];

export interface AlongReload {
  readonly request: CommandRequest;
  settle(outcome: Promise<CommandResult | undefined> | undefined): void;
}

/**
 * THE CONSUMER END WAITS FOR ITS PROVIDER'S RECEIPT. Watches each provider's receipts and, as
 * soon as one carries exactly the staged digest, renames that pair's consumer end into place.
 * A consumer that read the new password before its database had it would fail every new
 * connection (and the provisioner's own superuser pair would lock it out); this order leaves
 * only the short, stated window where the database has the new password and the consumer
 * still the old one. A pair unconfirmed at `waitMs` (or when `stop` aborts) keeps its consumer
 * end staged; the caller rolls it back (rollback.ts). A receipt with another digest is "not
 * yet", never "done".
 *
 * Where the transport offers them, receipts come from one long-lived reader per provider
 * (watchTexts) and renames go out on a channel opened before any receipt is expected
 * (openChannel), so a consumer follows its receipt within one trip plus the reader's poll
 * interval; otherwise receipts are polled every `pollMs` and renamed with commit().
 */
export async function commitConsumersOnReceipt(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  onApplied: (applied: AppliedPair) => void,
  /** Begun before the provider ends went live (beginReceiptWait); else begun here. */
  begun?: ReceiptWait,
  gate?: ConsumerGate,
  along?: ConsumerAlong,
): Promise<ConsumerCommitResult> {
  const receiptWait =
    begun ??
    beginReceiptWait(pairs, digests, transportFor, wait, {
      ...(gate ? { gate } : {}),
      ...(along ? { along } : {}),
    });
  try {
    return await receiptWait.run(pairs, onApplied);
  } finally {
    receiptWait.close();
  }
}

/**
 * What the receipt wait needs, set up BEFORE the provider ends go live: a rename channel to
 * each consumer machine (and to each provider machine, for its clock) and a receipt reader on
 * each provider. Opening an ssh session costs round trips and a process start; done after the
 * commit, that cost would land inside the window of any provisioner quicker than it. Receipts
 * the readers see before `run` are kept; nothing is renamed before `run`.
 */
export interface ReceiptWait {
  /** Settles when every channel has opened (or failed) and every reader has reported once (or failed). */
  readonly ready: Promise<void>;
  /** The wait itself, for these pairs (those whose provider end went live), for `waitMs` from now. */
  run(
    pairs: readonly PlannedPair[],
    onApplied: (applied: AppliedPair) => void,
  ): Promise<ConsumerCommitResult>;
  /** Ends the readers and the channels, and a `run` in progress (no rename starts after it); safe to call twice. */
  close(): void;
  /** The rename channel opened to `machine` (undefined: none, or it failed to open). */
  channel(machine: string): Promise<BoundRenameChannel | undefined>;
}

export function beginReceiptWait(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  /** `rename: false`: a receipt alone finishes a pair (awaitReceipts); no consumer end is touched. */
  options: { readonly rename?: boolean; readonly gate?: ConsumerGate; readonly along?: ConsumerAlong } = {},
): ReceiptWait {
  const renames = options.rename !== false;
  const now = wait.now ?? Date.now;
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const closed = new AbortController();
  const done = new Set<string>();
  /** Receipted pairs whose consumer rename has not succeeded yet, with when the database took it. */
  const receipted = new Map<string, Receipted>();
  const byProvider = groupBy(pairs, (p) => p.providerMachine);
  const byConsumer = groupBy(pairs, (p) => p.consumerMachine);
  /** At most `concurrency` renames (and channel openings) in flight, as in every other phase. */
  const slots = limiter(wait.concurrency);
  /** Set by run(): a receipt seen from then on is renamed at once. */
  let onReceipted: ((consumerMachine: string) => void) | undefined;

  // A provider machine gets a channel too, for its clock, when its pairs' consumers are elsewhere.
  const channels = new Map<string, Promise<BoundRenameChannel | undefined>>();
  const wantsChannel = new Set([
    ...byConsumer.keys(),
    ...pairs.filter((p) => p.providerMachine !== p.consumerMachine).map((p) => p.providerMachine),
  ]);
  if (wait.waitMs > 0 && renames) {
    for (const machine of wantsChannel) {
      const transport = transportFor(machine);
      if (transport.openChannel)
        channels.set(
          machine,
          slots.run(() => transport.openChannel!()).catch(() => undefined),
        );
    }
  }

  const see = (pair: PlannedPair, text: string | undefined, seenAt: number) => {
    if (done.has(pair.key) || receipted.has(pair.key)) return false;
    const receipt = text === undefined ? undefined : parseReceipt(text);
    if (!receipt || receipt.digest !== digests[pair.key]) return false;
    const at = Date.parse(receipt.applied_at);
    receipted.set(pair.key, { appliedAt: Number.isFinite(at) ? at : undefined, seenAt });
    return true;
  };
  const unconfirmed = (machinePairs: readonly PlannedPair[]) =>
    machinePairs.filter((p) => !done.has(p.key) && !receipted.has(p.key));

  /** One reader per provider for the whole wait; restarted if it fails, until the wait ends. */
  const readers = new Map<string, { settled: Promise<void>; readonly reported: () => boolean }>();
  const watchLimit = 2 * wait.waitMs + 60_000;
  if (wait.waitMs > 0) {
    for (const [machine, machinePairs] of byProvider) {
      const transport = transportFor(machine);
      if (!transport.watchTexts) continue;
      let settle: () => void = () => undefined;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      let hasReported = false;
      void (async () => {
        const startedAt = now();
        while (
          !closed.signal.aborted &&
          now() - startedAt < watchLimit &&
          unconfirmed(machinePairs).length > 0
        ) {
          const watched = unconfirmed(machinePairs);
          const allSeen = new AbortController();
          try {
            await transport.watchTexts!(
              watched.map((p) => p.receiptPath),
              { intervalMs: wait.pollMs, forMs: watchLimit },
              (changes) => {
                hasReported = true;
                settle();
                const seen = now();
                for (const change of changes) {
                  const pair = watched[change.index];
                  if (pair && see(pair, change.text, seen)) onReceipted?.(pair.consumerMachine);
                }
                if (unconfirmed(watched).length === 0) allSeen.abort();
              },
              AbortSignal.any([closed.signal, allSeen.signal]),
            );
            // A reader that ended by itself (its run time was up) is started again, not in a tight loop.
            // Either signal may have been aborted while the reader ran (TS keeps the loop's narrowing).
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition
            if (!closed.signal.aborted && !allSeen.signal.aborted) await sleep(WATCH_RETRY_MS);
          } catch {
            // The reader failed (the machine dropped, the session ended): try again shortly.
            settle();
            // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- aborted while the reader ran
            if (closed.signal.aborted) break;
            await sleep(WATCH_RETRY_MS);
          }
        }
        settle();
      })();
      readers.set(machine, { settled, reported: () => hasReported });
    }
  }
  const ready = (async () => {
    let timer: NodeJS.Timeout | undefined;
    const bounded = new Promise<void>((resolve) => (timer = setTimeout(resolve, wait.waitMs)));
    await Promise.race([
      Promise.all([...channels.values(), ...[...readers.values()].map((r) => r.settled)]),
      bounded,
      new Promise((r) => closed.signal.addEventListener('abort', r, { once: true })),
    ]);
    clearTimeout(timer);
  })();

  const close = () => {
    if (closed.signal.aborted) return;
    closed.abort();
    for (const channel of channels.values()) void channel.then((c) => c?.close());
  };

  const run = async (
    livePairs: readonly PlannedPair[],
    onApplied: (applied: AppliedPair) => void,
  ): Promise<ConsumerCommitResult> => {
    const deadline = now() + wait.waitMs;
    const live = new Set(livePairs.map((p) => p.key));
    const applied: AppliedPair[] = [];
    const failures = new Map<string, MachineFailure>();
    // app-truth: what the gate refused, and what it let through (not asked twice on a retried rename).
    const refused: GateRefusal[] = [];
    const passed = new Set<string>();
    const finished = new AbortController();
    const everyPairDone = () => livePairs.every((p) => done.has(p.key));
    const finish = () => finished.abort();
    const channelOf = async (machine: string) => channels.get(machine);

    /**
     * The provider's `applied_at` on the controller's clock: shifted by the provider machine's
     * measured offset; when the consumer is on the same machine, by that same offset (one clock).
     */
    const receiptTime = async (appliedAt: number, pair: PlannedPair): Promise<number> => {
      const channel = await channelOf(pair.providerMachine);
      return channel ? appliedAt - channel.clock.offsetMs : appliedAt;
    };

    /** A pair whose consumer end went live at `renamedAt` (the controller's clock): applied, its window kept. */
    const finishPair = async (pair: PlannedPair, renamedAt: number) => {
      const receipt = receipted.get(pair.key)!;
      const appliedAt =
        receipt.appliedAt === undefined
          ? receipt.seenAt
          : Math.min(await receiptTime(receipt.appliedAt, pair), receipt.seenAt);
      const result = { pair: pair.key, windowMs: Math.max(0, Math.round(renamedAt - appliedAt)) };
      receipted.delete(pair.key);
      done.add(pair.key);
      applied.push(result);
      onApplied(result);
    };

    /** One rename batch per consumer machine at a time; receipts arriving meanwhile go in the next. */
    const flushing = new Map<string, Promise<void>>();
    const again = new Set<string>();
    const flush = (machine: string): void => {
      // A closed wait starts no rename (a run begun before its 'committed' record, which failed).
      if (closed.signal.aborted) return;
      if (flushing.has(machine)) {
        again.add(machine);
        return;
      }
      // In the map before the first await: a batch found empty ends synchronously.
      let release: () => void = () => undefined;
      flushing.set(machine, new Promise<void>((resolve) => (release = resolve)));
      void (async () => {
        do {
          again.delete(machine);
          let batch = (byConsumer.get(machine) ?? []).filter((p) => live.has(p.key) && receipted.has(p.key));
          // app-truth: the gate (a test login from this machine) keeps a refused pair where it is.
          const untested = batch.filter((p) => !passed.has(p.key));
          if (options.gate && untested.length > 0) {
            const verdict = await options
              .gate(untested, renames ? await channelOf(machine) : undefined)
              .catch((error: unknown): GateVerdict => ({
                refused: untested.map((p) => ({ pair: p.key, reason: reasonOf(error) })),
              }));
            const refusedNow = new Set(verdict.refused.map((r) => r.pair));
            for (const r of verdict.refused) {
              refused.push(r);
              receipted.delete(r.pair);
              done.add(r.pair);
            }
            for (const p of untested) if (!refusedNow.has(p.key)) passed.add(p.key);
            batch = batch.filter((p) => !refusedNow.has(p.key));
            // app-rtt: moved on the machine by the login's own verdict (an armed commit).
            const channel = await channelOf(machine);
            for (const [key, at] of verdict.moved ?? []) {
              const pair = batch.find((p) => p.key === key);
              if (pair) await finishPair(pair, channel ? at - channel.clock.offsetMs : at);
            }
            batch = batch.filter((p) => !verdict.moved?.has(p.key));
          }
          if (batch.length === 0) break;
          try {
            const channel = await channelOf(machine);
            const paths = batch.map((p) => p.consumerPath);
            // app-rtt: a consumer's reload rides the rename's own request where the channel relays.
            const along = renames && channel?.relay && options.along ? options.along(batch) : [];
            // A rename on a channel already open is one line on its session: no connection and
            // no process to bound, so it does not queue behind `concurrency` — queued, the
            // two-hundredth consumer's window would be 25 renames long.
            const renamedAt = !renames
              ? now()
              : channel?.relay && along.length > 0
                ? await channel.relay
                    .commitThen(
                      paths,
                      along.map((a) => a.request),
                    )
                    .then(
                      (then) => {
                        along.forEach((a, i) => a.settle(then.reloads[i]));
                        return then.at - channel.clock.offsetMs;
                      },
                      (error: unknown) => {
                        for (const a of along) a.settle(undefined);
                        throw error;
                      },
                    )
                : channel
                  ? (await channel.commit(paths)) - channel.clock.offsetMs
                  : await slots.run(async () => {
                      await transportFor(machine).commit(paths);
                      return now();
                    });
            failures.delete(machine);
            for (const pair of batch) await finishPair(pair, renamedAt);
          } catch (error) {
            failures.set(machine, { machine, reason: reasonOf(error) });
            // A channel that failed is not trusted again: the retry is a plain commit().
            const failed = channels.get(machine);
            if (failed) {
              channels.set(machine, Promise.resolve(undefined));
              void failed.then((c) => c?.close());
            }
            // Tried again, as the poll did, until the wait is over.
            if (finished.signal.aborted || now() >= deadline) break;
            await sleep(Math.min(Math.max(wait.pollMs, 50), Math.max(0, deadline - now())));
            again.add(machine);
          }
        } while (again.has(machine));
        flushing.delete(machine);
        release();
        if (everyPairDone()) finish();
      })();
    };

    /** Reads a provider's receipts once (the poll, and a reader that has not reported by the deadline). */
    const readOnce = async (machine: string, machinePairs: readonly PlannedPair[]) => {
      const waiting = unconfirmed(machinePairs);
      if (waiting.length === 0) return;
      try {
        const texts = await transportFor(machine).readTexts(waiting.map((p) => p.receiptPath));
        const seen = now();
        waiting.forEach((pair, i) => {
          if (see(pair, texts[i], seen)) flush(pair.consumerMachine);
        });
      } catch {
        // A provider that cannot be read right now has simply not confirmed yet.
      }
    };

    const liveByProvider = [...groupBy(livePairs, (p) => p.providerMachine)];
    const polled = liveByProvider.filter(([machine]) => !readers.has(machine));
    const pollProviders = async () => {
      if (polled.length === 0) return;
      for (;;) {
        await mapBounded(polled, wait.concurrency, ([machine, machinePairs]) =>
          readOnce(machine, machinePairs),
        );
        if (
          finished.signal.aborted ||
          now() >= deadline ||
          polled.every(([, ps]) => ps.every((p) => done.has(p.key)))
        )
          break;
        await sleep(Math.min(wait.pollMs, Math.max(0, deadline - now())));
      }
    };

    onReceipted = flush;
    for (const machine of byConsumer.keys()) flush(machine);
    if (everyPairDone()) finish();
    const timer = setTimeout(finish, Math.max(0, wait.waitMs));
    // A signal or the operator's cancel ends the wait at once: what is not committed by then is rolled back.
    if (wait.stop?.aborted) finish();
    else wait.stop?.addEventListener('abort', finish, { once: true });
    if (closed.signal.aborted) finish();
    else closed.signal.addEventListener('abort', finish, { once: true });
    try {
      await Promise.all([
        pollProviders(),
        new Promise((r) =>
          finished.signal.aborted
            ? r(undefined)
            : finished.signal.addEventListener('abort', r, { once: true }),
        ),
      ]);
      onReceipted = undefined;
      // A reader that never reported (slow to start) leaves its provider one plain reading.
      await Promise.all(
        liveByProvider
          .filter(([machine]) => readers.has(machine) && !readers.get(machine)!.reported())
          .map(([machine, ps]) => readOnce(machine, ps)),
      );
      while (flushing.size > 0) await Promise.all([...flushing.values()]);
    } finally {
      clearTimeout(timer);
      wait.stop?.removeEventListener('abort', finish);
      closed.signal.removeEventListener('abort', finish);
      onReceipted = undefined;
    }
    return { applied, failures: [...failures.values()], ...(refused.length > 0 ? { refused } : {}) };
  };

  return { ready, run, close, channel: async (machine) => channels.get(machine) };
}

/**
 * Waits, with the same readers and polls as the consumer commit, for each pair's receipt to show
 * `digests[pair.key]`, renaming nothing: the keys of the pairs whose receipt did within the wait.
 * For a file delivered to the provider end alone (revoke.ts).
 */
export async function awaitReceipts(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
): Promise<ReadonlySet<string>> {
  const receiptWait = beginReceiptWait(pairs, digests, transportFor, wait, { rename: false });
  try {
    const result = await receiptWait.run(pairs, () => undefined);
    return new Set(result.applied.map((a) => a.pair));
  } finally {
    receiptWait.close();
  }
}

function limiter(size: number) {
  let free = Math.max(1, size);
  const queue: (() => void)[] = [];
  return {
    async run<T>(op: () => Promise<T>): Promise<T> {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => queue.push(resolve));
      try {
        return await op();
      } finally {
        const next = queue.shift();
        if (next) next();
        else free++;
      }
    },
  };
}

/** How soon a receipt reader that failed is started again. */
const WATCH_RETRY_MS = 250;

interface Receipted {
  /** `applied_at` as the provider wrote it, by the provider machine's clock. */
  readonly appliedAt: number | undefined;
  /** When the controller saw the receipt, by its own clock. */
  readonly seenAt: number;
}

export function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const list = out.get(key);
    if (list) list.push(item);
    else out.set(key, [item]);
  }
  return out;
}
