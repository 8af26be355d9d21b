/**
 * Resolve every holder before anything is generated (DESIGN.md §6 step 3). Each holder gets
 * its own timeout, so one machine that hangs is reported as unresolved instead of holding the
 * whole gate open forever.
 */
import { TransportError, reasonOf, type TransportFor } from './transport.js';
import { mapBounded, withTimeout } from './map-bounded.js';
import type { Holder } from './rotation-plan.js';

export type Resolution =
  | { readonly status: 'pending' }
  | { readonly status: 'resolved' }
  | { readonly status: 'unresolved'; readonly reason: string };

export interface ResolveOptions {
  readonly concurrency: number;
  readonly timeoutMs: number;
}

export const DEFAULT_RESOLVE: ResolveOptions = { concurrency: 8, timeoutMs: 15_000 };

export async function resolveHolders(
  holders: readonly Holder[],
  transportFor: TransportFor,
  options: ResolveOptions,
  onResolved: (machine: string, resolution: Resolution) => void,
): Promise<Map<string, Resolution>> {
  const out = new Map<string, Resolution>();
  await mapBounded(holders, options.concurrency, async (holder) => {
    let resolution: Resolution;
    try {
      const transport = transportFor(holder.machine);
      await withTimeout(transport.resolve(), options.timeoutMs, () => new TransportError(holder.machine, `no answer within ${Math.round(options.timeoutMs / 1000)} s`));
      resolution = { status: 'resolved' };
    } catch (error) {
      resolution = { status: 'unresolved', reason: reasonOf(error) };
    }
    out.set(holder.machine, resolution);
    onResolved(holder.machine, resolution);
  });
  return out;
}
