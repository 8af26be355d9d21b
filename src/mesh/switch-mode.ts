/**
 * Switching a pair between single and alternating (docs/mesh-rotation.md, "Alternating
 * credentials"): the rotation delivers the new mode's files as any rotation does; once the
 * pair's consumer end is committed — and only then, since until its file changes format the
 * consumer still logs in with the old mode's role — the old mode's provider files go. A crash
 * before that leaves them in place: harmless (the consumer no longer reads them), and the
 * next rotation of the pair removes them (settleLogins finds them).
 */
import { groupBy } from './delivery.js';
import type { PlannedPair } from './rotation-plan.js';
import type { TransportFor } from './transport.js';

/**
 * Removes the old mode's provider files of these FINISHED pairs, one call per provider
 * machine. Best effort: what stays is found and removed by the next rotation.
 */
export async function retireSwitched(
  finished: readonly PlannedPair[],
  transportFor: TransportFor,
): Promise<void> {
  const switched = finished.filter((p) => p.retire && p.retire.length > 0);
  await Promise.all(
    [...groupBy(switched, (p) => p.providerMachine)].map(([machine, pairs]) =>
      transportFor(machine)
        .retire(pairs.flatMap((p) => p.retire!))
        .catch(() => undefined),
    ),
  );
}
