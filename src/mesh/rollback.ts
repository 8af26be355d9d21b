/**
 * Taking back the pairs of a rotation that did not finish: a pair is finished (its consumer end
 * renamed after its receipt) or rolled back, never left waiting for a person. Rolling back
 * renames the provider's previous file (kept at the commit, `previousPath`) over the live one
 * and removes the consumer's staged end; the provisioner then sets the old password again if
 * it had applied the new one. Only digests pass through here.
 *
 * The order protects the consumer: its end is read first (a consumer already holding the new
 * password is finished, and rolling its provider back would strand it); a consumer that cannot
 * be read is left alone, and so is its provider, because either way could be wrong. A pair
 * whose receipt shows the new password is FINISHED instead (its consumer end renamed now): the
 * database has it, and taking the provider back would leave the consumer refused until the
 * provisioner's next cycle — or, for the provisioner's own superuser, locked out.
 */
import type { SecretDigest } from './digest.js';
import { parseReceipt } from './digest.js';
import { endDigest, groupBy, type ReceiptPolling } from './delivery.js';
import { mapBounded } from './map-bounded.js';
import type { PlannedPair } from './rotation-plan.js';
import type { JournalRecord, JournalRollback } from './journal.js';
import { reasonOf, type FileDigests, type TransportFor } from './transport.js';

/**
 * What the provider's receipt said after the roll-back (which removes the receipt, so whatever
 * appears was written after it): 'old' — the provisioner set the previous password again;
 * 'new' — it confirmed the new one just before; 'unknown' — no receipt yet.
 */
export type ReceiptAfter = 'old' | 'new' | 'unknown';

export type PairRollback =
  /** The consumer end already holds the new password: the pair is done, nothing was taken back. */
  | { readonly pair: string; readonly result: 'finished' }
  /**
   * The provider end holds its previous file again and the consumer's staged end is gone (or
   * `leftover` says where it could not be removed; it is never read). `receipt`: whether the
   * provisioner's receipt showed the old password again within the wait.
   */
  | {
      readonly pair: string;
      readonly result: 'rolled-back';
      readonly receipt: ReceiptAfter;
      readonly leftover?: string;
    }
  /** The provider could not be read or restored: whether its database took the new password is unknown. */
  | { readonly pair: string; readonly result: 'provider-unknown'; readonly reason: string }
  /** The consumer could not be read: if its provider applied the new password, its live password is refused. */
  | { readonly pair: string; readonly result: 'consumer-unknown'; readonly reason: string };

/** A rollback waits for each receipt to show the old password again, as an apply waits for the new one. */
export type RollbackOptions = ReceiptPolling & {
  /**
   * app-truth: pairs whose new credential was refused from the consumer's machine (test-login.ts):
   * rolled back even when the database already took it — finishing would move the consumer onto it.
   */
  readonly refused?: ReadonlySet<string>;
  /**
   * The test login before a consumer moves (issue 45: a receipt that came after `--wait` took
   * this path, which finished the pair and moved its consumer with no test login although the
   * preview promised one). Given the pairs this roll-back would finish, resolves with those that
   * may NOT move (their login was refused, or could not be tried); those are rolled back.
   */
  readonly loginFirst?: (pairs: readonly PlannedPair[]) => Promise<ReadonlySet<string>>;
};

/**
 * Rolls back `pairs`: `digests` are the rotation's new digests, `previous` each pair's provider
 * file before its commit (undefined: none was live, or the provider end was never committed).
 */
export async function rollBackPairs(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  previous: Readonly<Record<string, SecretDigest | undefined>>,
  transportFor: TransportFor,
  options: RollbackOptions,
): Promise<PairRollback[]> {
  const results = new Map<string, PairRollback>();
  const consumerEnds = await readEnds(
    pairs,
    (p) => p.consumerMachine,
    (p) => p.consumerPath,
    transportFor,
    options.concurrency,
  );
  const open: PlannedPair[] = [];
  for (const pair of pairs) {
    const end = consumerEnds.get(pair.key)!;
    if ('reason' in end)
      results.set(pair.key, { pair: pair.key, result: 'consumer-unknown', reason: end.reason });
    else if (end.live === endDigest(digests, pair.key, 'consumes'))
      results.set(pair.key, { pair: pair.key, result: 'finished' });
    else open.push(pair);
  }
  const receipted = await receiptedNew(open, digests, transportFor, options.concurrency);
  const finishing = open.filter((p) => receipted.has(p.key) && !options.refused?.has(p.key));
  const mayNotMove =
    options.loginFirst && finishing.length > 0 ? await options.loginFirst(finishing) : undefined;
  await mapBounded(
    [
      ...groupBy(
        finishing.filter((p) => !mayNotMove?.has(p.key)),
        (p) => p.consumerMachine,
      ),
    ],
    options.concurrency,
    async ([machine, machinePairs]) => {
      try {
        await transportFor(machine).commit(machinePairs.map((p) => p.consumerPath));
        for (const p of machinePairs) results.set(p.key, { pair: p.key, result: 'finished' });
      } catch (error) {
        for (const p of machinePairs)
          results.set(p.key, { pair: p.key, result: 'consumer-unknown', reason: reasonOf(error) });
      }
    },
  );
  open.splice(0, open.length, ...open.filter((p) => !results.has(p.key)));
  // The provider end: restore the kept file where the new one is live, else drop its staged end.
  const providerEnds = await readEnds(
    open,
    (p) => p.providerMachine,
    (p) => p.providerPath,
    transportFor,
    options.concurrency,
  );
  const restored: PlannedPair[] = [];
  // A provider end never committed still holds the old file live: that is what its receipt should show.
  const old: Record<string, SecretDigest | undefined> = { ...previous };
  await mapBounded(
    [...groupBy(open, (p) => p.providerMachine)],
    options.concurrency,
    async ([machine, machinePairs]) => {
      const readable = machinePairs.filter((p) => {
        const end = providerEnds.get(p.key)!;
        if ('reason' in end)
          results.set(p.key, { pair: p.key, result: 'provider-unknown', reason: end.reason });
        return !('reason' in end);
      });
      const live = readable.filter((p) => (providerEnds.get(p.key) as FileDigests).live === digests[p.key]);
      const staged = readable.filter((p) => !live.includes(p));
      // The kept file is what the restore brings back, so it is the old receipt to wait for even
      // when no 'committed' record names it (baton died before that record reached the disk).
      for (const p of live) old[p.key] ??= (providerEnds.get(p.key) as FileDigests).prev;
      for (const p of staged) old[p.key] ??= (providerEnds.get(p.key) as FileDigests).live;
      try {
        const transport = transportFor(machine);
        const back = await transport.restorePrevious(live.map((p) => p.providerPath));
        live.forEach((p, i) => {
          if (back[i]) restored.push(p);
          else
            results.set(p.key, {
              pair: p.key,
              result: 'provider-unknown',
              reason: `no previous file was kept beside ${p.providerPath} on ${machine}`,
            });
        });
        await transport.unstage(staged.map((p) => p.providerPath));
        restored.push(...staged);
      } catch (error) {
        for (const p of readable)
          if (!results.has(p.key))
            results.set(p.key, { pair: p.key, result: 'provider-unknown', reason: reasonOf(error) });
      }
    },
  );
  const leftovers = new Map<string, string>();
  await mapBounded(
    [...groupBy(restored, (p) => p.consumerMachine)],
    options.concurrency,
    async ([machine, machinePairs]) => {
      try {
        await transportFor(machine).unstage(machinePairs.map((p) => p.consumerPath));
      } catch (error) {
        for (const p of machinePairs)
          leftovers.set(
            p.key,
            `${machine}: ${p.consumerPath}.next could not be removed (${reasonOf(error)})`,
          );
      }
    },
  );
  const receipts = await waitForReceipts(restored, digests, old, transportFor, options);
  for (const p of restored) {
    const leftover = leftovers.get(p.key);
    results.set(p.key, {
      pair: p.key,
      result: 'rolled-back',
      receipt: receipts.get(p.key) ?? 'unknown',
      ...(leftover ? { leftover } : {}),
    });
  }
  // A pair found finished drops the previous file its commit kept, as a finished rotation does:
  // an alternating pair's ends never hold the same text, so a `.prev` left here would block
  // every later rotation of that login as a leftover. Best effort: a failure leaves only that.
  const finished = pairs.filter((p) => results.get(p.key)?.result === 'finished');
  await mapBounded(
    [...groupBy(finished, (p) => p.providerMachine)],
    options.concurrency,
    async ([machine, machinePairs]) => {
      await transportFor(machine)
        .discardPrevious(machinePairs.map((p) => p.providerPath))
        .catch(() => undefined);
    },
  );
  return pairs.map((p) => results.get(p.key)!);
}

type EndRead = FileDigests | { readonly reason: string };

/** The pairs whose provider's receipt carries the new digest now (the database has it). */
async function receiptedNew(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  concurrency: number,
): Promise<Set<string>> {
  const out = new Set<string>();
  await mapBounded(
    [...groupBy(pairs, (p) => p.providerMachine)],
    concurrency,
    async ([machine, machinePairs]) => {
      try {
        const texts = await transportFor(machine).readTexts(machinePairs.map((p) => p.receiptPath));
        machinePairs.forEach((p, i) => {
          if (texts[i] !== undefined && parseReceipt(texts[i])?.digest === digests[p.key]) out.add(p.key);
        });
      } catch {
        // Unreadable: the provider step below finds out and says so.
      }
    },
  );
  return out;
}

async function readEnds(
  pairs: readonly PlannedPair[],
  machineOf: (p: PlannedPair) => string,
  pathOf: (p: PlannedPair) => string,
  transportFor: TransportFor,
  concurrency: number,
): Promise<Map<string, EndRead>> {
  const out = new Map<string, EndRead>();
  await mapBounded([...groupBy(pairs, machineOf)], concurrency, async ([machine, machinePairs]) => {
    try {
      const read = await transportFor(machine).digests(machinePairs.map(pathOf));
      machinePairs.forEach((p, i) => out.set(p.key, read[i] ?? { live: undefined, next: undefined }));
    } catch (error) {
      for (const p of machinePairs) out.set(p.key, { reason: reasonOf(error) });
    }
  });
  return out;
}

/** Polls the receipts of `pairs` until each shows its previous digest, or the wait is over. */
async function waitForReceipts(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  previous: Readonly<Record<string, SecretDigest | undefined>>,
  transportFor: TransportFor,
  options: RollbackOptions,
): Promise<Map<string, ReceiptAfter>> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + options.waitMs;
  const seen = new Map<string, ReceiptAfter>();
  for (;;) {
    const waiting = pairs.filter((p) => seen.get(p.key) !== 'old');
    await mapBounded(
      [...groupBy(waiting, (p) => p.providerMachine)],
      options.concurrency,
      async ([machine, machinePairs]) => {
        try {
          const texts = await transportFor(machine).readTexts(machinePairs.map((p) => p.receiptPath));
          machinePairs.forEach((p, i) => {
            const digest = texts[i] === undefined ? undefined : parseReceipt(texts[i])?.digest;
            seen.set(
              p.key,
              digest !== undefined && digest === previous[p.key]
                ? 'old'
                : digest !== undefined && digest === digests[p.key]
                  ? 'new'
                  : 'unknown',
            );
          });
        } catch {
          // Unreadable now: the last answer (or "unknown") stands.
        }
      },
    );
    if (pairs.every((p) => seen.get(p.key) === 'old') || now() >= deadline) return seen;
    await sleep(Math.min(options.pollMs, Math.max(0, deadline - now())));
  }
}

/** The provider files a rotation kept at its commit, by pair, as its journal recorded them. */
export function previousInJournal(records: readonly JournalRecord[]): Record<string, SecretDigest> {
  const out: Record<string, SecretDigest> = {};
  for (const record of records) for (const p of record.pairs) if (p.previous) out[p.key] = p.previous;
  return out;
}

/** How one pair's roll-back ended, as the journal keeps it: the one mapping of rollback.ts's results. */
export function journalRollbacks(results: readonly PairRollback[]): JournalRollback[] {
  return results.map((r) => ({
    pair: r.pair,
    result: r.result,
    ...('receipt' in r ? { receipt: r.receipt } : {}),
    ...('reason' in r ? { reason: r.reason } : 'leftover' in r && r.leftover ? { reason: r.leftover } : {}),
  }));
}
