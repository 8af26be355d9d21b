/**
 * The two phases of a delivery (DESIGN.md §6 steps 5–7). Prepare stages `<role>.next` on both
 * ends of every pair and takes nothing live; commit renames provider ends first, consumer ends
 * second. Any prepare failure removes EVERY staged file on every holder, so a failed rotation
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

/** Provider ends first, then consumer ends — every holder's files of one end in one call. */
export function commitSteps(holders: readonly Holder[], only?: ReadonlySet<string>): CommitStep[] {
  const steps: CommitStep[] = [];
  for (const end of ['provides', 'consumes'] as const) {
    for (const holder of holders) {
      const paths = holder.receives.filter((d) => d.end === end && (!only || only.has(`${holder.machine}\0${d.path}`))).map((d) => d.path);
      if (paths.length > 0) steps.push({ machine: holder.machine, end, paths });
    }
  }
  return steps;
}

export type CommitResult = { readonly ok: true } | { readonly ok: false; readonly failures: readonly MachineFailure[]; readonly committed: readonly CommitStep[] };

/**
 * THE CONSUMER ENDS WAIT FOR EVERY PROVIDER END. A consumer that reads a new password its
 * provider does not know yet fails every new connection until someone notices; a provider
 * that changed first is the window the preview already stated.
 */
export async function commitAll(
  steps: readonly CommitStep[],
  transportFor: TransportFor,
  concurrency: number,
  onCommitted: (step: CommitStep) => void,
): Promise<CommitResult> {
  const committed: CommitStep[] = [];
  for (const end of ['provides', 'consumes'] as const) {
    const failures: MachineFailure[] = [];
    await mapBounded(steps.filter((s) => s.end === end), concurrency, async (step) => {
      try {
        await transportFor(step.machine).commit(step.paths);
        committed.push(step);
        onCommitted(step);
      } catch (error) {
        failures.push({ machine: step.machine, reason: reasonOf(error) });
      }
    });
    if (failures.length > 0) return { ok: false, failures, committed };
  }
  return { ok: true };
}

export interface ApplyWait {
  readonly waitMs: number;
  readonly pollMs: number;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

/**
 * Polls each provider's receipts until every pair's digest is applied or `waitMs` is spent.
 * Returns the pair keys applied. A receipt with another digest is "not yet", never "done".
 */
export async function waitApplied(
  pairs: readonly PlannedPair[],
  digests: Readonly<Record<string, SecretDigest>>,
  transportFor: TransportFor,
  wait: ApplyWait,
  onApplied: (pairKey: string) => void,
): Promise<Set<string>> {
  const applied = new Set<string>();
  const now = wait.now ?? Date.now;
  const sleep = wait.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = now() + wait.waitMs;
  const byMachine = new Map<string, PlannedPair[]>();
  for (const pair of pairs) {
    const list = byMachine.get(pair.providerMachine);
    if (list) list.push(pair);
    else byMachine.set(pair.providerMachine, [pair]);
  }
  for (;;) {
    for (const [machine, machinePairs] of byMachine) {
      const waiting = machinePairs.filter((p) => !applied.has(p.key));
      if (waiting.length === 0) continue;
      try {
        const texts = await transportFor(machine).readTexts(waiting.map((p) => p.receiptPath));
        waiting.forEach((pair, i) => {
          const receipt = texts[i] === undefined ? undefined : parseReceipt(texts[i]!);
          if (receipt && receipt.digest === digests[pair.key]) {
            applied.add(pair.key);
            onApplied(pair.key);
          }
        });
      } catch {
        // A provider that cannot be read right now has simply not confirmed yet.
      }
    }
    if (applied.size === pairs.length || now() >= deadline) return applied;
    await sleep(Math.min(wait.pollMs, Math.max(0, deadline - now())));
  }
}
