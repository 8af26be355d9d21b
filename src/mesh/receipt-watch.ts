/**
 * The machines' side of the receipt wait, as adapters that decide nothing: a reader of each
 * provider's receipts (or a poll where the transport has no reader) that reports what it saw as
 * typed events — `receipt-seen`, `receipt-stale`, then `wait-expired` or `wait-stopped` — and
 * the rename channels opened to each consumer (and provider, for its clock). What follows an
 * event is the receipt-wait machine's (receipt-wait-machine.ts).
 *
 * Both are set up BEFORE the provider ends go live: opening an ssh session costs round trips
 * and a process start; done after the commit, that cost would land inside the window of any
 * provisioner quicker than it.
 */
import { cpuTrace, placeTrace } from './place-trace.js';
import { parseReceipt, type SecretDigest } from './digest.js';
import { mapBounded } from './map-bounded.js';
import type { WaitEvent } from './receipt-wait-machine.js';
import type { PlannedPair } from './rotation-plan.js';
import type { BoundRenameChannel, TransportFor } from './transport.js';

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

/** At most `size` operations at once (channel openings, plain renames), as in every other phase. */
export interface Slots {
  run<T>(op: () => Promise<T>): Promise<T>;
}

export function limiter(size: number): Slots {
  let free = Math.max(1, size);
  const queue: (() => void)[] = [];
  const trace = placeTrace('wait-slots');
  return {
    async run<T>(op: () => Promise<T>): Promise<T> {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => queue.push(resolve));
      trace?.taken(size);
      try {
        return await op();
      } finally {
        trace?.given(size);
        const next = queue.shift();
        if (next) next();
        else free++;
      }
    },
  };
}

/** The rename channels of one wait: connections, not decisions. */
export interface RenameChannels {
  /** Settles when every channel has opened or failed. */
  readonly opened: Promise<unknown>;
  /** The channel opened to `machine` (undefined: none, it failed to open, or it failed since). */
  get(machine: string): Promise<BoundRenameChannel | undefined>;
  /**
   * The same, without waiting a turn, once its opening has settled (undefined while it has not):
   * a rename on a channel already open is written in the very event that asked for it.
   */
  settled(machine: string): { readonly channel: BoundRenameChannel | undefined } | undefined;
  /** A channel whose rename failed is not trusted again: later renames there are plain commits. */
  distrust(machine: string): void;
  closeAll(): void;
}

export function openRenameChannels(
  machines: Iterable<string>,
  transportFor: TransportFor,
  slots: Slots,
): RenameChannels {
  const channels = new Map<string, Promise<BoundRenameChannel | undefined>>();
  const settled = new Map<string, { readonly channel: BoundRenameChannel | undefined }>();
  for (const machine of machines) {
    const transport = transportFor(machine);
    if (transport.openChannel) {
      const opening = slots.run(() => transport.openChannel!()).catch(() => undefined);
      channels.set(machine, opening);
      void opening.then((channel) => {
        if (channels.get(machine) === opening) settled.set(machine, { channel });
      });
    }
  }
  return {
    opened: Promise.all(channels.values()),
    get: async (machine) => channels.get(machine),
    settled: (machine) => settled.get(machine),
    distrust(machine) {
      const failed = channels.get(machine);
      if (!failed) return;
      channels.set(machine, Promise.resolve(undefined));
      settled.set(machine, { channel: undefined });
      void failed.then((c) => c?.close());
    },
    closeAll() {
      for (const channel of channels.values()) void channel.then((c) => c?.close());
    },
  };
}

/** The machines a wait opens channels to: each consumer's, and each provider's whose consumers are elsewhere (its clock). */
export function channelMachines(pairs: readonly PlannedPair[]): Set<string> {
  return new Set([
    ...pairs.map((p) => p.consumerMachine),
    ...pairs.filter((p) => p.providerMachine !== p.consumerMachine).map((p) => p.providerMachine),
  ]);
}

export interface ReceiptWatch {
  /** Settles when every reader has reported once or failed (bounded by the wait). */
  readonly ready: Promise<void>;
  /**
   * The wait's clock starts for these pairs (those whose provider end went live): providers
   * without a reader are polled, and at `waitMs` (or on `stop`) a provider whose reader never
   * reported is read once more; it resolves then with `wait-expired` (or `wait-stopped`). The
   * wait's clock is an effect that runs until then, so a flow's `idle()` waits for its end.
   */
  start(live: readonly PlannedPair[]): Promise<WaitEnd>;
  /** What is left of the wait, in ms (a retried rename's pause never outlasts it). */
  remainingMs(): number;
  /** Readers, polls and the clock end; a started wait then reports only `wait-stopped`. Safe to call twice. */
  close(): void;
}

export type WaitEnd = Extract<WaitEvent, { type: 'wait-expired' | 'wait-stopped' }>;

/** BATON_TRACE_WINDOWS: the controller's thread at each reading (place-trace.ts). */
const traceCpu = cpuTrace();

/** How soon a receipt reader that failed is started again. */
const WATCH_RETRY_MS = 250;

/**
 * Reads the receipts of `pairs` and reports each one's first receipt carrying its digest
 * (`receipt-seen`, with the provider's `applied_at` and when it was seen) and any other receipt
 * (`receipt-stale`, once per text). Its own state is only what it has reported.
 */
export function watchReceipts(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  emit: (event: WaitEvent) => void,
  /** Also awaited by `ready` (the rename channels' opening). */
  alsoReady: Promise<unknown> = Promise.resolve(),
): ReceiptWatch {
  const now = wait.now ?? Date.now;
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const closed = new AbortController();
  /** The clock's end (deadline or stop): readers and polls stop, the last reading is done. */
  const ended = new AbortController();
  const seen = new Set<string>();
  const stale = new Map<string, string | undefined>();
  const byProvider = groupBy(pairs, (p) => p.providerMachine);
  let deadline = now() + wait.waitMs;

  /** Reports what one receipt text says about its pair (nothing once its matching receipt was reported). */
  const report = (pair: PlannedPair, text: string | undefined, at: number): void => {
    if (closed.signal.aborted || seen.has(pair.key)) return;
    const receipt = text === undefined ? undefined : parseReceipt(text);
    if (!receipt || receipt.digest !== digests[pair.key]) {
      if (text !== undefined && stale.get(pair.key) !== text) {
        stale.set(pair.key, text);
        emit({ type: 'receipt-stale', pair: pair.key });
      }
      return;
    }
    seen.add(pair.key);
    const appliedAt = Date.parse(receipt.applied_at);
    emit({
      type: 'receipt-seen',
      pair: pair.key,
      digest: receipt.digest,
      appliedAt: Number.isFinite(appliedAt) ? appliedAt : undefined,
      at,
    });
  };
  const unseen = (machinePairs: readonly PlannedPair[]) => machinePairs.filter((p) => !seen.has(p.key));

  const readers = new Map<string, { settled: Promise<void>; readonly reported: () => boolean }>();
  const watchLimit = 2 * wait.waitMs + 60_000;
  if (wait.waitMs > 0)
    for (const [machine, machinePairs] of byProvider) {
      const transport = transportFor(machine);
      if (transport.watchTexts)
        readers.set(
          machine,
          readContinuously(machinePairs, (paths, onChange, signal) =>
            transport.watchTexts!(paths, { intervalMs: wait.pollMs, forMs: watchLimit }, onChange, signal),
          ),
        );
    }

  /** One reader per provider for the whole wait; restarted if it fails, until the wait ends. */
  function readContinuously(
    machinePairs: readonly PlannedPair[],
    watch: (
      paths: string[],
      onChange: (changes: readonly { index: number; text: string | undefined }[]) => void,
      signal: AbortSignal,
    ) => Promise<void>,
  ) {
    let settle: () => void = () => undefined;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    let hasReported = false;
    void (async () => {
      const startedAt = now();
      const stopped = AbortSignal.any([closed.signal, ended.signal]);
      while (!stopped.aborted && now() - startedAt < watchLimit && unseen(machinePairs).length > 0) {
        const watched = unseen(machinePairs);
        const allSeen = new AbortController();
        try {
          await watch(
            watched.map((p) => p.receiptPath),
            (changes) => {
              const traced = traceCpu?.();
              const before = seen.size;
              hasReported = true;
              settle();
              const at = now();
              for (const change of changes) {
                const pair = watched[change.index];
                if (pair) report(pair, change.text, at);
              }
              if (seen.size > before) traced?.();
              if (unseen(watched).length === 0) allSeen.abort();
            },
            AbortSignal.any([stopped, allSeen.signal]),
          );
          // A reader that ended by itself (its run time was up) is started again, not in a tight loop.
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- aborted while the reader ran
          if (!stopped.aborted && !allSeen.signal.aborted) await sleep(WATCH_RETRY_MS);
        } catch {
          // The reader failed (the machine dropped, the session ended): try again shortly.
          settle();
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- aborted while the reader ran
          if (stopped.aborted) break;
          await sleep(WATCH_RETRY_MS);
        }
      }
      settle();
    })();
    return { settled, reported: () => hasReported };
  }

  /** Reads a provider's receipts once (the poll, and a reader that has not reported by the end). */
  const readOnce = async (machine: string, machinePairs: readonly PlannedPair[]) => {
    const waiting = unseen(machinePairs);
    if (waiting.length === 0) return;
    try {
      const texts = await transportFor(machine).readTexts(waiting.map((p) => p.receiptPath));
      const at = now();
      waiting.forEach((pair, i) => report(pair, texts[i], at));
    } catch {
      // A provider that cannot be read right now has simply not confirmed yet.
    }
  };

  const ready = (async () => {
    let timer: NodeJS.Timeout | undefined;
    const bounded = new Promise<void>((resolve) => (timer = setTimeout(resolve, wait.waitMs)));
    await Promise.race([
      Promise.all([alsoReady, ...[...readers.values()].map((r) => r.settled)]),
      bounded,
      new Promise((r) => closed.signal.addEventListener('abort', r, { once: true })),
    ]);
    clearTimeout(timer);
  })();

  let started: Promise<WaitEnd> | undefined;
  const start = (live: readonly PlannedPair[]): Promise<WaitEnd> => {
    started ??= clock(live);
    return started;
  };
  const clock = async (live: readonly PlannedPair[]): Promise<WaitEnd> => {
    if (closed.signal.aborted) return { type: 'wait-stopped' };
    deadline = now() + wait.waitMs;
    const liveByProvider = [...groupBy(live, (p) => p.providerMachine)];
    const polled = liveByProvider.filter(([machine]) => !readers.has(machine));
    let why: 'wait-expired' | 'wait-stopped' = 'wait-expired';
    const end = (reason: typeof why) => {
      if (ended.signal.aborted) return;
      why = reason;
      ended.abort();
    };
    const expire = () => end('wait-expired');
    const stop = () => end('wait-stopped');
    const timer = setTimeout(expire, Math.max(0, wait.waitMs));
    if (wait.stop?.aborted) stop();
    else wait.stop?.addEventListener('abort', stop, { once: true });
    closed.signal.addEventListener('abort', stop, { once: true });
    {
      // The poll, for providers without a reader: until the end, or until each has shown its receipt.
      if (polled.length > 0)
        for (;;) {
          await mapBounded(polled, wait.concurrency, ([machine, ps]) => readOnce(machine, ps));
          if (ended.signal.aborted || now() >= deadline || polled.every(([, ps]) => unseen(ps).length === 0))
            break;
          await sleep(Math.min(wait.pollMs, Math.max(0, deadline - now())));
        }
      // --wait 0: the one look is the whole wait.
      if (wait.waitMs <= 0) expire();
      if (!ended.signal.aborted)
        await new Promise((r) => ended.signal.addEventListener('abort', r, { once: true }));
      clearTimeout(timer);
      wait.stop?.removeEventListener('abort', stop);
      closed.signal.removeEventListener('abort', stop);
      // A reader that never reported (slow to start) leaves its provider one plain reading.
      await Promise.all(
        liveByProvider
          .filter(([machine]) => readers.has(machine) && !readers.get(machine)!.reported())
          .map(([machine, ps]) => readOnce(machine, ps)),
      );
      return { type: why };
    }
  };

  return {
    ready,
    start,
    remainingMs: () => Math.max(0, deadline - now()),
    close() {
      if (closed.signal.aborted) return;
      closed.abort();
    },
  };
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
