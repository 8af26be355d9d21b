/**
 * Runs the receipt-wait machine's commands (receipt-wait-machine.ts) over the wait's rename
 * channels and transports, and reports each as one event: a test login's verdict, a batch
 * renamed with each pair's window, a channel lost, a pause over. It decides nothing: what a
 * verdict or a failure leads to is the machine's.
 *
 * THE WINDOW is measured here, the one place that sees both clocks: from the receipt's
 * `applied_at` (put on the controller's clock by the provider channel's measured offset, never
 * later than when the receipt was seen) to the consumer end's rename (by the consumer
 * channel's clock, put on the controller's the same way).
 */
import type { PlannedPair } from './rotation-plan.js';
import { windowTrace } from './place-trace.js';
import type {
  AppliedPair,
  GateRefusal,
  ReceiptedPair,
  WaitCommand,
  WaitEvent,
} from './receipt-wait-machine.js';
import type { RenameChannels, Slots } from './receipt-watch.js';
import {
  reasonOf,
  type BoundRenameChannel,
  type CommandRequest,
  type CommandResult,
  type FileDigests,
  type TransportFor,
} from './transport.js';
import type { SecretDigest } from './digest.js';

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

/** What the commands run over: connections and clocks, no decisions. */
export interface WaitLinks {
  readonly pairs: ReadonlyMap<string, PlannedPair>;
  readonly channels: RenameChannels;
  readonly transportFor: TransportFor;
  readonly slots: Slots;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  readonly pollMs: number;
  /** What is left of the wait (a retry's pause never outlasts it). */
  readonly remainingMs: () => number;
  /** false: a receipt alone finishes a pair (awaitReceipts); no consumer end is touched. */
  readonly renames: boolean;
  readonly gate?: ConsumerGate;
  readonly along?: ConsumerAlong;
  /** The digest a pair's consumer end holds once live (delivery.ts endDigest). */
  readonly consumerDigest: (pair: string) => SecretDigest | undefined;
  /** The wait was closed (a record failed, the wait is over): no rename starts after it. */
  readonly isClosed: () => boolean;
  /** Called once the wait is over. */
  readonly close: () => void;
}

export async function runWaitCommand(command: WaitCommand, links: WaitLinks): Promise<WaitEvent | undefined> {
  switch (command.type) {
    case 'test-login':
      return testLogin(command.machine, command.pairs, links);
    case 'rename-consumer':
      // A closed wait starts no rename (a wait begun before its 'committed' record, which failed).
      if (links.isClosed())
        return { type: 'channel-lost', machine: command.machine, reason: 'the wait was closed' };
      return command.readBack
        ? renameNotLanded(command.machine, command.pairs, links)
        : renameConsumers(command.machine, command.pairs, links);
    case 'rename-later':
      // As the poll did: a pause of at least 50 ms, never past the wait's end.
      await links.sleep(Math.min(Math.max(links.pollMs, 50), links.remainingMs()));
      return { type: 'rename-due', machine: command.machine };
    case 'close-wait':
      links.close();
      return undefined;
    default: {
      const never: never = command;
      throw new Error(`unknown receipt-wait command ${String(never)}`);
    }
  }
}

/** The event a command that threw ends in: a login that could not run refuses its pairs; a rename, the channel. */
export function failedWaitCommand(command: WaitCommand, error: unknown): WaitEvent {
  switch (command.type) {
    case 'test-login':
      return {
        type: 'login-tested',
        machine: command.machine,
        pairs: command.pairs.map((p) => p.pair),
        refused: command.pairs.map((p) => ({ pair: p.pair, reason: reasonOf(error) })),
        moved: [],
      };
    case 'rename-consumer':
      return { type: 'channel-lost', machine: command.machine, reason: reasonOf(error) };
    case 'rename-later':
      return { type: 'rename-due', machine: command.machine };
    case 'close-wait':
      return { type: 'wait-stopped' };
    default: {
      const never: never = command;
      throw new Error(`unknown receipt-wait command ${String(never)}`);
    }
  }
}

const planned = (links: WaitLinks, batch: readonly ReceiptedPair[]): PlannedPair[] =>
  batch.map((r) => links.pairs.get(r.pair)!);

/** BATON_TRACE_WINDOWS: each rename's moments, for the bench (place-trace.ts). */
const traceWindow = windowTrace();

/** The window of a pair renamed at `renamedAt` (the controller's clock); `sentAt`: when its rename was sent (traced). */
async function windowOf(
  receipt: ReceiptedPair,
  renamedAt: number,
  links: WaitLinks,
  sentAt?: number,
): Promise<AppliedPair> {
  let appliedAt = receipt.seenAt;
  if (receipt.appliedAt !== undefined) {
    const provider = await links.channels.get(links.pairs.get(receipt.pair)!.providerMachine);
    appliedAt = Math.min(
      provider ? receipt.appliedAt - provider.clock.offsetMs : receipt.appliedAt,
      receipt.seenAt,
    );
  }
  if (sentAt !== undefined)
    traceWindow?.(receipt.pair, { appliedAt, seenAt: receipt.seenAt, sentAt, renamedAt });
  return { pair: receipt.pair, windowMs: Math.max(0, Math.round(renamedAt - appliedAt)) };
}

async function testLogin(
  machine: string,
  batch: readonly ReceiptedPair[],
  links: WaitLinks,
): Promise<WaitEvent> {
  const keys = batch.map((r) => r.pair);
  if (!links.gate) return { type: 'login-tested', machine, pairs: keys, refused: [], moved: [] };
  const verdict = await links.gate(
    planned(links, batch),
    links.renames ? await links.channels.get(machine) : undefined,
  );
  // app-rtt: moved on the machine by the login's own verdict (an armed commit).
  const channel = await links.channels.get(machine);
  const moved: AppliedPair[] = [];
  for (const r of batch) {
    const at = verdict.moved?.get(r.pair);
    if (at !== undefined) moved.push(await windowOf(r, channel ? at - channel.clock.offsetMs : at, links));
  }
  return { type: 'login-tested', machine, pairs: keys, refused: verdict.refused, moved };
}

/**
 * A rename tried again after one that failed: a rename whose ANSWER was lost (a timeout, a
 * dropped channel) may have been done on the machine, and asked again it would fail on its
 * missing staged file for the rest of the wait, reported as "still staged" over a live file.
 * So the ends are read back first: one live with this rotation's digest and nothing staged was
 * moved by the lost rename (its window counted to this reading, an upper bound); the rest are
 * renamed as asked. A read that fails is the machine still failing.
 */
async function renameNotLanded(
  machine: string,
  batch: readonly ReceiptedPair[],
  links: WaitLinks,
): Promise<WaitEvent> {
  let read: readonly FileDigests[];
  try {
    const paths = planned(links, batch).map((p) => p.consumerPath);
    read = await links.slots.run(() => links.transportFor(machine).digests(paths));
  } catch (error) {
    return { type: 'channel-lost', machine, reason: reasonOf(error) };
  }
  const readAt = links.now();
  const landed: AppliedPair[] = [];
  const rest: ReceiptedPair[] = [];
  for (const [i, r] of batch.entries()) {
    const ends = read[i];
    const expected = links.consumerDigest(r.pair);
    if (ends && ends.next === undefined && expected !== undefined && ends.live === expected)
      landed.push(await windowOf(r, readAt, links));
    else rest.push(r);
  }
  if (rest.length === 0) return { type: 'consumer-renamed', machine, applied: landed };
  const renamed = await renameConsumers(machine, rest, links);
  // The rest failing again: what landed is still reported, and the machine's failure with it
  // on the next try (consumer-renamed takes what it is given; the others stay receipted).
  if (renamed.type !== 'consumer-renamed')
    return landed.length > 0 ? { type: 'consumer-renamed', machine, applied: landed } : renamed;
  return { type: 'consumer-renamed', machine, applied: [...landed, ...renamed.applied] };
}

async function renameConsumers(
  machine: string,
  batch: readonly ReceiptedPair[],
  links: WaitLinks,
): Promise<WaitEvent> {
  try {
    // A channel already open is taken as it is: awaiting even a settled promise would write
    // this rename only after every other receipt of the same reading had been through the
    // flow (its bookkeeping is synchronous), so the batch's last rename waited for all of it.
    const channel = links.channels.settled(machine)?.channel ?? (await links.channels.get(machine));
    const pairs = planned(links, batch);
    const paths = pairs.map((p) => p.consumerPath);
    // app-rtt: a consumer's reload rides the rename's own request where the channel relays.
    const along = links.renames && channel?.relay && links.along ? links.along(pairs) : [];
    const sentAt = links.now();
    // A rename on a channel already open is one line on its session: no connection and no
    // process to bound, so it does not queue behind `concurrency` — queued, the two-hundredth
    // consumer's window would be 25 renames long.
    const renamedAt = !links.renames
      ? links.now()
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
          : await links.slots.run(async () => {
              await links.transportFor(machine).commit(paths);
              return links.now();
            });
    const applied: AppliedPair[] = [];
    for (const r of batch) applied.push(await windowOf(r, renamedAt, links, sentAt));
    return { type: 'consumer-renamed', machine, applied };
  } catch (error) {
    // A channel that failed is not trusted again: the retry is a plain commit().
    links.channels.distrust(machine);
    return { type: 'channel-lost', machine, reason: reasonOf(error) };
  }
}
