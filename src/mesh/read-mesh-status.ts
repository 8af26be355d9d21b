/**
 * Reads what `mesh status` needs from every holder: digests and mtimes of each delivered file
 * (computed ON the holder; the content never leaves it) and, on provider machines, the
 * receipts. One machine at a time per worker and its calls in sequence, so with a connection
 * share a machine costs one handshake however many pairs it holds.
 */
import { reasonOf } from './transport.js';
import type { TransportFor } from './transport.js';
import { parseReceipt, type Receipt } from './digest.js';
import type { JournalHistory } from './journal-history.js';
import { mapBounded } from './map-bounded.js';
import { pairStatus, type EndReading, type PairStatus } from './mesh-status.js';
import type { RotationPlan } from './rotation-plan.js';

export interface MeshStatusOptions {
  readonly concurrency: number;
  readonly nowMs: number;
  readonly maxAgeMs: number | undefined;
  /** Called as each machine has been read (a view shows progress). */
  readonly onMachine?: (machine: string, ok: boolean) => void;
  /** Who holds the mesh lock now (meshLockHolder), in words; undefined when nobody does. */
  readonly running?: string;
}

export async function readMeshStatus(plan: RotationPlan, transportFor: TransportFor, history: JournalHistory, options: MeshStatusOptions): Promise<PairStatus[]> {
  const ends = new Map<string, EndReading>();
  const receipts = new Map<string, Receipt | undefined>();
  const endKey = (machine: string, file: string) => `${machine}\0${file}`;
  const byKey = new Map(plan.pairs.map((p) => [p.key, p]));
  await mapBounded(plan.holders, options.concurrency, async (holder) => {
    const paths = holder.receives.map((d) => d.path);
    try {
      const transport = transportFor(holder.machine);
      const digests = await transport.digests(paths);
      holder.receives.forEach((d, i) => {
        const got = digests[i];
        ends.set(endKey(holder.machine, d.path), { read: true, live: got?.live, next: got?.next, ...(got?.prev ? { prev: got.prev } : {}), liveModifiedMs: got?.liveModifiedMs });
      });
      const provided = holder.receives.filter((d) => d.end === 'provides').map((d) => byKey.get(d.pair)!);
      if (provided.length > 0) {
        const texts = await transport.readTexts(provided.map((p) => p.receiptPath));
        provided.forEach((p, i) => receipts.set(p.key, texts[i] === undefined ? undefined : parseReceipt(texts[i]!)));
      }
      options.onMachine?.(holder.machine, true);
    } catch (error) {
      const reason = reasonOf(error);
      for (const p of paths) ends.set(endKey(holder.machine, p), { read: false, reason });
      options.onMachine?.(holder.machine, false);
    }
  });
  const unread: EndReading = { read: false, reason: 'not read' };
  return plan.pairs.map((pair) =>
    pairStatus(
      pair,
      {
        provider: ends.get(endKey(pair.providerMachine, pair.providerPath)) ?? unread,
        consumer: ends.get(endKey(pair.consumerMachine, pair.consumerPath)) ?? unread,
        receipt: receipts.get(pair.key),
      },
      history,
      options.nowMs,
      options.maxAgeMs,
      options.running,
    ),
  );
}
