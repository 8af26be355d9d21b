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
  type MachineRecord,
  type TransportFor,
} from './transport.js';
import type { SecretDigest } from './digest.js';
import { mapBounded } from './map-bounded.js';
import {
  receiptWait,
  waitBegun,
  waitStarted,
  type AppliedPair,
  type MachineFailure,
  type WaitCommand,
  type WaitEvent,
  type WaitResult,
  type WaitStep,
  type GateRefusal,
} from './receipt-wait-machine.js';
import {
  failedWaitCommand,
  runWaitCommand,
  type ConsumerAlong,
  type ConsumerGate,
  type WaitLinks,
} from './receipt-wait-effects.js';
import {
  channelMachines,
  limiter,
  openRenameChannels,
  watchReceipts,
  type ApplyWait,
} from './receipt-watch.js';
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
 *
 * INTENT BEFORE ACTION, in one request per machine: `records` (the rotation's intents and
 * consumer records, by machine) go ahead of the files in the same request (writeRecordsThen),
 * the provider ends first and the consumer ends only once every provider end is staged, so no
 * file of this rotation is written before its provider holds the rotation's intent. A machine
 * whose records fail stages nothing, and the rest is taken back as for any staging failure.
 */
export async function prepareAll(
  pairs: readonly PlannedPair[],
  holders: readonly Holder[],
  transportFor: TransportFor,
  concurrency: number,
  onStaged: (machine: string, files: number) => void,
  /** app-truth: handed each pair's provider-end secret before the rest leave scope (the test login needs it). */
  keep?: (pair: string, secret: Secret) => void,
  records: ReadonlyMap<string, readonly MachineRecord[]> = new Map(),
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
  const wrote = new Set<string>();
  const stageWave = (end: 'provides' | 'consumes') =>
    mapBounded(holders, concurrency, async (holder) => {
      const ends = holder.receives.filter((d) => d.end === end);
      if (failures.length > 0 || ends.length === 0) return;
      const machineRecords = wrote.has(holder.machine) ? [] : (records.get(holder.machine) ?? []);
      try {
        const transport = transportFor(holder.machine);
        const files = ends.map((d) => ({ path: d.path, secret: secrets.get(d.pair)![d.end] }));
        const landed =
          machineRecords.length > 0
            ? await transport.writeRecordsThen(machineRecords, { stage: files })
            : await transport.stage(files);
        wrote.add(holder.machine);
        ends.forEach((d, i) => {
          if (landed[i] !== endDigest(digests, d.pair, d.end))
            throw new Error(`the staged ${d.path}.next does not match what was sent`);
        });
        // Once every end it receives is staged (a machine that provides and consumes stages twice).
        if (end === 'consumes' || !holder.receives.some((d) => d.end === 'consumes'))
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
  await stageWave('provides');
  await stageWave('consumes');
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
 * (ReceiptWait). A machine that fails leaves its pairs staged for `mesh resume`;
 * the other machines' pairs go on, since their provisioners may already be applying them.
 */
export async function commitProviderEnds(
  steps: readonly CommitStep[],
  transportFor: TransportFor,
  concurrency: number,
  onCommitted: (step: CommitStep, previous: readonly (SecretDigest | undefined)[]) => void,
  /** The receipt wait's rename channels (ReceiptWait.channel): a provider's renames go on its open one. */
  channelFor?: (machine: string) => Promise<BoundRenameChannel | undefined>,
  /** Each machine's `committing` intents, written in the request that keeps (and commits) its provider ends. */
  records: ReadonlyMap<string, readonly MachineRecord[]> = new Map(),
): Promise<CommitResult> {
  const committed: CommitStep[] = [];
  const previous: Record<string, SecretDigest> = {};
  const failures: MachineFailure[] = [];
  await mapBounded(steps, concurrency, async (step) => {
    try {
      const transport = transportFor(step.machine);
      // On the channel already open to the machine the renames are one request to a process
      // that is running, answered once they are done and synced: no session winds down after
      // the last rename while the receipts of the first ones (their consumers' windows) wait.
      // Without one, the intents, the keep and the renames are one request (writeRecordsThen).
      const channel = await channelFor?.(step.machine);
      const kept = await transport.writeRecordsThen(records.get(step.machine) ?? [], {
        keep: step.paths,
        commit: !channel,
      });
      if (channel) await channel.commit(step.paths);
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

export type { ApplyWait, ReceiptPolling } from './receipt-watch.js';
export { groupBy } from './receipt-watch.js';
export type { AppliedPair, GateRefusal, MachineFailure } from './receipt-wait-machine.js';
export type { AlongReload, ConsumerAlong, ConsumerGate, GateVerdict } from './receipt-wait-effects.js';

export interface ConsumerCommitResult {
  readonly applied: readonly AppliedPair[];
  /** Consumer machines whose rename failed; their pairs' consumer ends are still staged. */
  readonly failures: readonly MachineFailure[];
  /** app-truth: pairs the gate (the test login) refused to move; their consumer ends are still staged. */
  readonly refused?: readonly GateRefusal[];
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
 *
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
/** One receipt wait's connections (readers, channels, clock) and its command runner: no decisions. */
export interface WaitConnections {
  readonly ready: Promise<void>;
  /** The adapter: starts the wait's clock for the live pairs (ReceiptWatch.start). */
  start(live: readonly PlannedPair[]): Promise<WaitEvent>;
  /** Runs one of the machine's commands; never rejects (a thrown error becomes its failure event). */
  run(command: WaitCommand): Promise<WaitEvent | undefined>;
  close(): void;
  channel(machine: string): Promise<BoundRenameChannel | undefined>;
}

export interface WaitOptions {
  /** `rename: false`: a receipt alone finishes a pair (awaitReceipts); no consumer end is touched. */
  readonly rename?: boolean;
  readonly gate?: ConsumerGate;
  readonly along?: ConsumerAlong;
}

/**
 * Opens what the wait for `pairs` needs, before any provider end is live: a rename channel to
 * each consumer (and provider) machine and a reader on each provider, whose observations go to
 * `emit` as they come.
 */
export function openWaitConnections(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  emit: (event: WaitEvent) => void,
  options: WaitOptions = {},
): WaitConnections {
  const renames = options.rename !== false;
  const slots = limiter(wait.concurrency);
  const channels = openRenameChannels(
    wait.waitMs > 0 && renames ? channelMachines(pairs) : [],
    transportFor,
    slots,
  );
  const watch = watchReceipts(pairs, digests, transportFor, wait, emit, channels.opened);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    watch.close();
    channels.closeAll();
  };
  const links: WaitLinks = {
    pairs: new Map(pairs.map((p) => [p.key, p])),
    channels,
    transportFor,
    slots,
    now: wait.now ?? Date.now,
    sleep: wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms))),
    pollMs: wait.pollMs,
    remainingMs: () => watch.remainingMs(),
    consumerDigest: (pair) => endDigest(digests, pair, 'consumes'),
    renames,
    isClosed: () => closed,
    close,
    ...(options.gate ? { gate: options.gate } : {}),
    ...(options.along ? { along: options.along } : {}),
  };
  return {
    ready: watch.ready,
    start: (live) => watch.start(live),
    run: (command) =>
      runWaitCommand(command, links).catch((error: unknown) => failedWaitCommand(command, error)),
    close,
    channel: (machine) => channels.get(machine),
  };
}

/**
 * The receipt wait outside the rotation's reducer (the revoke's, tests): the same machine
 * (receipt-wait-machine.ts) over the same connections, driven here instead of by the
 * rotation's flow. Receipts the readers see before `run` are kept; nothing is renamed before it.
 */
export function beginReceiptWait(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  options: WaitOptions = {},
): ReceiptWait {
  let state = waitBegun(pairs, digests);
  let onApplied: (applied: AppliedPair) => void = () => undefined;
  let ended: (result: WaitResult) => void = () => undefined;
  const result = new Promise<WaitResult>((resolve) => (ended = resolve));
  const apply = (step: WaitStep) => {
    state = step.state;
    for (const a of step.appliedNow) onApplied(a);
    if (step.result) ended(step.result);
    for (const command of step.commands)
      void connections.run(command).then((event) => event && apply(receiptWait(state, event)));
  };
  const connections = openWaitConnections(
    pairs,
    digests,
    transportFor,
    wait,
    (event) => apply(receiptWait(state, event)),
    options,
  );
  return {
    ready: connections.ready,
    async run(live, applied) {
      onApplied = applied;
      const keys = live.map((p) => p.key);
      apply(waitStarted(state, keys, options.gate ? keys : []));
      void connections.start(live).then((end) => apply(receiptWait(state, end)));
      const { refused, ...rest } = await result;
      return { ...rest, ...(refused.length > 0 ? { refused } : {}) };
    },
    close: () => connections.close(),
    channel: (machine) => connections.channel(machine),
  };
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
