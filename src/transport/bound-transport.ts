/**
 * Binds a transport to the command's one timeout (`--timeout`) and its cancel signal: each
 * operation gets a fresh signal that aborts after `timeoutMs` or when the command is
 * cancelled, whichever comes first. A bound the caller only raced (the old withTimeout) freed
 * the slot but left the ssh running; a signal kills it.
 */
import { setMaxListeners } from 'node:events';
import { controllerBusySince } from '../mesh/adaptive-limit.js';
import { formatSeconds, NotReached, onSent } from '../mesh/deadline.js';
import { TransportError } from '../mesh/transport.js';
import type {
  BoundChannelRelay,
  BoundRenameChannel,
  ChannelRelay,
  BoundTransport,
  MachineLock,
  RenameChannel,
  Transport,
} from '../mesh/transport.js';

export interface Bounds {
  /** Per operation, per holder: the only timeout baton applies to a transport. */
  readonly timeoutMs: number;
  /** The command's own cancellation (SIGINT, a view quitting). */
  readonly signal?: AbortSignal;
  /** Was the controller saturated since this time (adaptive-limit.ts)? Replaced by tests. */
  readonly controllerBusySince?: (sinceMs: number) => boolean;
}

/** "no answer within 15 s": the reason an operation's signal carries when its time is up. */
export class NoAnswer extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${formatSeconds(timeoutMs)}`);
    this.name = 'NoAnswer';
  }
}

/**
 * Runs `op` with a signal that aborts after `timeoutMs` or with `parent`; the timer never outlives it.
 * `whenSent`: the transport says when the call is sent (src/mesh/deadline.ts); until then the
 * same bound runs as the controller's ("not reached"), and the machine's `timeoutMs` starts then.
 */
export async function withinBounds<T>(
  bounds: Bounds,
  op: (signal: AbortSignal) => Promise<T>,
  whenSent = false,
): Promise<T> {
  const controller = new AbortController();
  const answer = () => setTimeout(() => controller.abort(new NoAnswer(bounds.timeoutMs)), bounds.timeoutMs);
  let timer = whenSent
    ? setTimeout(() => controller.abort(new NotReached(bounds.timeoutMs)), bounds.timeoutMs)
    : answer();
  if (whenSent)
    onSent(controller.signal, () => {
      clearTimeout(timer);
      if (!controller.signal.aborted) timer = answer();
    });
  const parent = bounds.signal;
  const onParent = () => controller.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  try {
    return await op(controller.signal);
  } finally {
    clearTimeout(timer);
    parent?.removeEventListener('abort', onParent);
  }
}

/**
 * A READ (resolve, digests, read texts: nothing changes on the machine) that found the machine
 * silent — no answer in time, or ssh's connection timed out — while this controller was saturated is asked
 * once more, with a fresh bound: on a saturated controller the silence may be the controller's
 * own (its ssh never got the CPU to finish a handshake), and calling a healthy machine
 * "unreachable" closes a rotation's gate for a false reason. A machine silent twice is
 * unreachable, and says it was asked twice. Writes are never repeated here: their retries are
 * the protocol's (docs/mesh-rotation.md).
 */
export async function readWithinBounds<T>(
  bounds: Bounds,
  op: (signal: AbortSignal) => Promise<T>,
  whenSent = false,
): Promise<T> {
  const startedAt = Date.now();
  try {
    return await withinBounds(bounds, op, whenSent);
  } catch (error) {
    const busy = bounds.controllerBusySince ?? controllerBusySince;
    if (!silent(error, bounds) || bounds.signal?.aborted || !busy(startedAt)) throw error;
    try {
      return await withinBounds(bounds, op, whenSent);
    } catch (again) {
      if (!silent(again, bounds)) throw again;
      throw new TransportError(
        again.machine,
        `${again.reason} (asked twice: this controller was saturated during the first)`,
        true,
      );
    }
  }
}

/**
 * Silence a saturated controller can cause: its own bound ran out (NoAnswer), or ssh's
 * ConnectTimeout did (a banner or a connection that timed out). A refusal with a reason — a name
 * that does not resolve, a refused port, a host key — is the machine's answer, asked once.
 */
function silent(error: unknown, bounds: Bounds): error is TransportError {
  return (
    error instanceof TransportError &&
    error.unreachable &&
    (error.reason.includes(new NoAnswer(bounds.timeoutMs).message) ||
      /timed out|sent no banner/i.test(error.reason))
  );
}

export function bindTransport(transport: Transport, bounds: Bounds): BoundTransport {
  // Each machine's receipt reader and rename channel listen on the command's signal for the
  // whole wait: twenty machines are not a leak, and Node's warning would reach the operator.
  if (bounds.signal) setMaxListeners(0, bounds.signal);
  const sentAware = transport.reportsSent === true;
  const within = <T>(op: (signal: AbortSignal) => Promise<T>) => withinBounds(bounds, op, sentAware);
  const read = <T>(op: (signal: AbortSignal) => Promise<T>) => readWithinBounds(bounds, op, sentAware);
  return {
    machine: transport.machine,
    resolve: () => read((s) => transport.resolve(s)),
    ...(transport.open
      ? {
          open: (until: AbortSignal) =>
            withinBounds(
              { ...bounds, signal: bounds.signal ? AbortSignal.any([until, bounds.signal]) : until },
              (s) => transport.open!(s),
              sentAware,
            ),
        }
      : {}),
    ...(transport.release ? { release: () => transport.release!() } : {}),
    stage: (files) => within((s) => transport.stage(files, s)),
    commit: (paths) => within((s) => transport.commit(paths, s)),
    unstage: (paths) => within((s) => transport.unstage(paths, s)),
    keepPrevious: (paths) => within((s) => transport.keepPrevious(paths, s)),
    restorePrevious: (paths) => within((s) => transport.restorePrevious(paths, s)),
    discardPrevious: (paths) => within((s) => transport.discardPrevious(paths, s)),
    retire: (paths) => within((s) => transport.retire(paths, s)),
    digests: (paths) => read((s) => transport.digests(paths, s)),
    readTexts: (paths) => read((s) => transport.readTexts(paths, s)),
    ...(transport.readWholeText
      ? { readWholeText: (file: string) => read((s) => transport.readWholeText!(file, s)) }
      : {}),
    ...(transport.swapText
      ? {
          swapText: (file: string, expected: string, text: string) =>
            within((s) => transport.swapText!(file, expected, text, s)),
        }
      : {}),
    writeRecords: (records) => within((s) => transport.writeRecords(records, s)),
    writeRecordsThen: (records, step) => within((s) => transport.writeRecordsThen(records, step, s)),
    lock: (dir, holder) => holdBoundLock(transport, dir, holder, bounds),
    ...(transport.watchTexts
      ? {
          watchTexts: (paths, options, onChange, until) =>
            untilEither(until, bounds.signal, (s) => transport.watchTexts!(paths, options, onChange, s)),
        }
      : {}),
    ...(transport.openChannel ? { openChannel: () => openBoundChannel(transport, bounds) } : {}),
    // app-truth: a reload has its own bound on the machine; this one only keeps ssh from outliving it.
    ...(transport.runCommand
      ? {
          runCommand: (request) =>
            withinBounds({ ...bounds, timeoutMs: request.timeoutMs + bounds.timeoutMs }, (s) =>
              transport.runCommand!(request, s),
            ),
        }
      : {}),
    ...(transport.openStream
      ? {
          openStream: (host, port, until) =>
            untilEither(until, bounds.signal, (s) => transport.openStream!(host, port, s)),
        }
      : {}),
    ...(transport.prepareCommand
      ? {
          prepareCommand: (command, timeoutMs) =>
            transport.prepareCommand!(command, timeoutMs, bounds.signal ?? new AbortController().signal),
        }
      : {}),
  };
}

/** Runs `op` with a signal that aborts with either parent: a watch has no timeout of its own. */
async function untilEither<T>(
  until: AbortSignal,
  cancel: AbortSignal | undefined,
  op: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  return cancel ? op(AbortSignal.any([until, cancel])) : op(until);
}

/**
 * Taking the lock is bounded by the timeout; once taken it is held until released or the
 * command is cancelled (which ends its session: the machine lets it go).
 */
async function holdBoundLock(
  transport: Transport,
  dir: string,
  holder: string,
  bounds: Bounds,
): Promise<MachineLock> {
  const life = new AbortController();
  const parent = bounds.signal;
  const onParent = () => life.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  const end = () => {
    parent?.removeEventListener('abort', onParent);
    life.abort();
  };
  const timer = setTimeout(() => life.abort(new NoAnswer(bounds.timeoutMs)), bounds.timeoutMs);
  let lock: MachineLock;
  try {
    lock = await transport.lock(dir, holder, life.signal);
  } catch (error) {
    end();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  if (!lock.taken) {
    end();
    return lock;
  }
  const taken = lock;
  return {
    taken: true,
    release: async () => {
      try {
        await taken.release();
      } finally {
        end();
      }
    },
  };
}

/**
 * The channel lives until it is closed or the command is cancelled; opening it is bounded by
 * the timeout (a machine that does not answer ends it), and so is each rename on it.
 */
async function openBoundChannel(transport: Transport, bounds: Bounds): Promise<BoundRenameChannel> {
  const life = new AbortController();
  const parent = bounds.signal;
  const onParent = () => life.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener('abort', onParent, { once: true });
  const end = () => {
    parent?.removeEventListener('abort', onParent);
    life.abort();
  };
  const timer = setTimeout(() => life.abort(new NoAnswer(bounds.timeoutMs)), bounds.timeoutMs);
  let channel: RenameChannel;
  try {
    channel = await transport.openChannel!(life.signal);
  } catch (error) {
    end();
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    get clock() {
      return channel.clock;
    },
    commit: (paths) => withinBounds(bounds, (s) => channel.commit(paths, s)),
    // A reload the channel started is still answering on it: the session ends after its outcome.
    close: () => {
      channel.close();
      void (channel.whenIdle?.() ?? Promise.resolve()).then(end);
    },
    ...(channel.relay ? { relay: boundRelay(channel.relay, bounds) } : {}),
  };
}

/** app-rtt: a socket lives until `until` or the command's cancel; a commit's answer is bounded like a rename. */
function boundRelay(relay: ChannelRelay, bounds: Bounds): BoundChannelRelay {
  return {
    openSocket: (host, port, until) =>
      untilEither(until, bounds.signal, (s) => relay.openSocket(host, port, s)),
    commitThen: (paths, reloads) => withinBounds(bounds, (s) => relay.commitThen(paths, reloads, s)),
  };
}
