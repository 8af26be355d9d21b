/**
 * Resolve every holder before anything is generated (docs/mesh-rotation.md step 3). Each holder's
 * resolve is bounded by the command's timeout (the transports are bound to it), so one machine
 * that hangs is reported as unresolved — and its ssh stopped — instead of holding the gate open.
 */
import { reasonOf, type TransportFor } from './transport.js';
import { mapBounded } from './map-bounded.js';
import type { Holder } from './rotation-plan.js';

export type Resolution =
  | { readonly status: 'pending' }
  | { readonly status: 'resolved' }
  | { readonly status: 'unresolved'; readonly reason: string };

export interface ResolveOptions {
  readonly concurrency: number;
}

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
      await transportFor(holder.machine).resolve();
      resolution = { status: 'resolved' };
    } catch (error) {
      resolution = { status: 'unresolved', reason: reasonOf(error) };
    }
    out.set(holder.machine, resolution);
    onResolved(holder.machine, resolution);
  });
  return out;
}
