/**
 * The two phases of a delivery (DESIGN.md §6 steps 5–7). Prepare stages `<role>.next` on both
 * ends of every pair and takes nothing live; commit renames the provider ends, then each
 * pair's consumer end once its provider's receipt shows the database has the new password. Any prepare failure removes EVERY staged file on every holder, so a failed rotation
 * leaves a mesh that has not rotated rather than one that has half-rotated.
 */
import { reasonOf, type TransportFor } from './transport.js';
import { parseReceipt, type SecretDigest } from './digest.js';
import { mapBounded } from './map-bounded.js';
import type { Holder, PlannedPair } from './rotation-plan.js';
import { Secret } from './secret.js';

export interface MachineFailure {
  readonly machine: string;
  readonly reason: string;
}

export type PrepareResult =
  | { readonly ok: true; readonly digests: Readonly<Record<string, SecretDigest>> }
  | { readonly ok: false; readonly failures: readonly MachineFailure[]; readonly unstageFailures: readonly MachineFailure[] };

/**
 * Generates one secret per pair, stages it on both ends, then reads the staged digests back:
 * a holder that wrote something else (full disk, a truncating filter) fails here, before
 * anything is live. The secrets leave scope when this returns; only digests go on.
 */
export async function prepareAll(
  pairs: readonly PlannedPair[],
  holders: readonly Holder[],
  transportFor: TransportFor,
  concurrency: number,
  onStaged: (machine: string, files: number) => void,
): Promise<PrepareResult> {
  const secrets = new Map(pairs.map((p) => [p.key, Secret.generate()] as const));
  const digests: Record<string, SecretDigest> = {};
  for (const [key, secret] of secrets) digests[key] = secret.digest;
  const failures: MachineFailure[] = [];
  await mapBounded(holders, concurrency, async (holder) => {
    if (failures.length > 0) return;
    try {
      const transport = transportFor(holder.machine);
      const landed = await transport.stage(holder.receives.map((d) => ({ path: d.path, secret: secrets.get(d.pair)! })));
      holder.receives.forEach((d, i) => {
        if (landed[i] !== digests[d.pair]) throw new Error(`the staged ${d.path}.next does not match what was sent`);
      });
      onStaged(holder.machine, holder.receives.length);
    } catch (error) {
      failures.push({ machine: holder.machine, reason: reasonOf(error) });
    }
  });
  secrets.clear();
  if (failures.length === 0) return { ok: true, digests };
  const unstageFailures = await unstageAll(holders, transportFor, concurrency);
  return { ok: false, failures, unstageFailures };
}

/** Removes every staged file on every holder; returns the machines where that failed. */
export async function unstageAll(holders: readonly Holder[], transportFor: TransportFor, concurrency: number): Promise<MachineFailure[]> {
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
    const paths = holder.receives.filter((d) => d.end === 'provides' && (!only || only.has(`${holder.machine}\0${d.path}`))).map((d) => d.path);
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
 * (commitConsumersOnReceipt). A machine that fails leaves its pairs staged for `mesh resume`;
 * the other machines' pairs go on, since their provisioners may already be applying them.
 */
export async function commitProviderEnds(
  steps: readonly CommitStep[],
  transportFor: TransportFor,
  concurrency: number,
  onCommitted: (step: CommitStep, previous: readonly (SecretDigest | undefined)[]) => void,
): Promise<CommitResult> {
  const committed: CommitStep[] = [];
  const previous: Record<string, SecretDigest> = {};
  const failures: MachineFailure[] = [];
  await mapBounded(steps, concurrency, async (step) => {
    try {
      const transport = transportFor(step.machine);
      const kept = await transport.keepPrevious(step.paths);
      await transport.commit(step.paths);
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

export interface ApplyWait {
  readonly waitMs: number;
  readonly pollMs: number;
  readonly concurrency: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
  /** Ends the wait early (the operator cancelled, a signal, a closed output): what is unconfirmed is then rolled back. */
  readonly stop?: AbortSignal;
}

/** One pair whose consumer end went live after its provider's receipt. */
export interface AppliedPair {
  readonly pair: string;
  /**
   * The window this rotation actually had, in ms: from the receipt's `applied_at` (the moment
   * the database took the new password, by the provider's clock, never later than when the
   * controller saw the receipt) to the consumer end's rename.
   */
  readonly windowMs: number;
}

export interface ConsumerCommitResult {
  readonly applied: readonly AppliedPair[];
  /** Consumer machines whose rename failed; their pairs' consumer ends are still staged. */
  readonly failures: readonly MachineFailure[];
}

/**
 * THE CONSUMER END WAITS FOR ITS PROVIDER'S RECEIPT. Polls each provider's receipts and, as
 * soon as one carries exactly the staged digest, renames that pair's consumer end into place.
 * A consumer that read the new password before its database had it would fail every new
 * connection (and the provisioner's own superuser pair would lock it out); this order leaves
 * only the short, stated window where the database has the new password and the consumer
 * still the old one. A pair unconfirmed at `waitMs` (or when `stop` aborts) keeps its consumer
 * end staged; the caller rolls it back (rollback.ts). A receipt with another digest is "not
 * yet", never "done".
 */
export async function commitConsumersOnReceipt(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  onApplied: (applied: AppliedPair) => void,
): Promise<ConsumerCommitResult> {
  const now = wait.now ?? Date.now;
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + wait.waitMs;
  const applied: AppliedPair[] = [];
  const done = new Set<string>();
  /** Receipted pairs whose consumer rename has not succeeded yet, with when the database took it. */
  const receipted = new Map<string, number>();
  const failures = new Map<string, MachineFailure>();
  const byProvider = groupBy(pairs, (p) => p.providerMachine);
  const byKey = new Map(pairs.map((p) => [p.key, p] as const));
  for (;;) {
    await mapBounded([...byProvider], wait.concurrency, async ([machine, machinePairs]) => {
      const waiting = machinePairs.filter((p) => !done.has(p.key) && !receipted.has(p.key));
      if (waiting.length === 0) return;
      try {
        const texts = await transportFor(machine).readTexts(waiting.map((p) => p.receiptPath));
        const seen = now();
        waiting.forEach((pair, i) => {
          const receipt = texts[i] === undefined ? undefined : parseReceipt(texts[i]!);
          if (receipt && receipt.digest === digests[pair.key]) {
            const at = Date.parse(receipt.applied_at);
            receipted.set(pair.key, Number.isFinite(at) ? Math.min(at, seen) : seen);
          }
        });
      } catch {
        // A provider that cannot be read right now has simply not confirmed yet.
      }
    });
    const ready = groupBy([...receipted.keys()].map((key) => byKey.get(key)!), (p) => p.consumerMachine);
    await mapBounded([...ready], wait.concurrency, async ([machine, machinePairs]) => {
      try {
        await transportFor(machine).commit(machinePairs.map((p) => p.consumerPath));
        const at = now();
        failures.delete(machine);
        for (const pair of machinePairs) {
          const result = { pair: pair.key, windowMs: Math.max(0, at - receipted.get(pair.key)!) };
          receipted.delete(pair.key);
          done.add(pair.key);
          applied.push(result);
          onApplied(result);
        }
      } catch (error) {
        failures.set(machine, { machine, reason: reasonOf(error) });
      }
    });
    if (done.size === pairs.length || now() >= deadline || wait.stop?.aborted) return { applied, failures: [...failures.values()] };
    await stoppableSleep(sleep, Math.min(wait.pollMs, Math.max(0, deadline - now())), wait.stop);
  }
}

/** A sleep that ends at once when `stop` aborts. */
function stoppableSleep(sleep: (ms: number) => Promise<void>, ms: number, stop: AbortSignal | undefined): Promise<void> {
  if (!stop) return sleep(ms);
  return new Promise<void>((resolve) => {
    const done = () => {
      stop.removeEventListener('abort', done);
      resolve();
    };
    stop.addEventListener('abort', done, { once: true });
    void sleep(ms).then(done);
  });
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
