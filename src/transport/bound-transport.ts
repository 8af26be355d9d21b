/**
 * Binds a transport to the command's one timeout (`--timeout`) and its cancel signal: each
 * operation gets a fresh signal that aborts after `timeoutMs` or when the command is
 * cancelled, whichever comes first. A bound the caller only raced (the old withTimeout) freed
 * the slot but left the ssh running; a signal kills it.
 */
import type { BoundTransport, Transport } from '../mesh/transport.js';

export interface Bounds {
  /** Per operation, per holder: the only timeout baton applies to a transport. */
  readonly timeoutMs: number;
  /** The command's own cancellation (SIGINT, a view quitting). */
  readonly signal?: AbortSignal;
}

/** "no answer within 15 s": the reason an operation's signal carries when its time is up. */
export class NoAnswer extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${formatSeconds(timeoutMs)}`);
    this.name = 'NoAnswer';
  }
}

function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

/** Runs `op` with a signal that aborts after `timeoutMs` or with `parent`; the timer never outlives it. */
export async function withinBounds<T>(bounds: Bounds, op: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new NoAnswer(bounds.timeoutMs)), bounds.timeoutMs);
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

export function bindTransport(transport: Transport, bounds: Bounds): BoundTransport {
  return {
    machine: transport.machine,
    resolve: () => withinBounds(bounds, (s) => transport.resolve(s)),
    stage: (files) => withinBounds(bounds, (s) => transport.stage(files, s)),
    commit: (paths) => withinBounds(bounds, (s) => transport.commit(paths, s)),
    unstage: (paths) => withinBounds(bounds, (s) => transport.unstage(paths, s)),
    keepPrevious: (paths) => withinBounds(bounds, (s) => transport.keepPrevious(paths, s)),
    restorePrevious: (paths) => withinBounds(bounds, (s) => transport.restorePrevious(paths, s)),
    discardPrevious: (paths) => withinBounds(bounds, (s) => transport.discardPrevious(paths, s)),
    digests: (paths) => withinBounds(bounds, (s) => transport.digests(paths, s)),
    readTexts: (paths) => withinBounds(bounds, (s) => transport.readTexts(paths, s)),
  };
}
