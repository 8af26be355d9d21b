/**
 * A rotation the drill performs without a screen (the sandbox's first passwords, `--plain`,
 * the preparation for `--step N`): `runRotationPlain`, the code `baton mesh rotate --yes`
 * runs — the rotation flow's reducer and effect runner, the confirmation given as --yes.
 */
import { randomBytes } from 'node:crypto';
import type { RotationState } from '../app/rotation-flow.js';
import { runRotationPlain } from '../app/rotation-plain.js';
import type { RotationDeps } from '../app/rotation-run-effect.js';
import { loadInventory } from '../mesh/inventory.js';
import { newRotationId } from '../mesh/journal.js';
import { planRotation, type RotationPlan } from '../mesh/rotation-plan.js';
import type { Selector } from '../mesh/selector.js';
import { transportsFor, type TransportFor } from '../transport/make-transport.js';
import type { DrillSandbox } from './sandbox.js';
import { unpluggable } from './unplugged.js';

/** The drill's one bound on a holder's answer, per step. */
export const DRILL_TIMEOUT_MS = 5_000;

/** The sandbox's machines as the drill reaches them: bounded, and unpluggable. */
export function drillTransports(sandbox: DrillSandbox): TransportFor {
  return transportsFor(loadInventory(sandbox.inventoryPath).machines, { timeoutMs: DRILL_TIMEOUT_MS }, { wrap: unpluggable });
}

/** What the drill's rotations need: the sandbox inventory and journal, a bounded wait for receipts. */
export function drillRotationDeps(sandbox: DrillSandbox): RotationDeps {
  return {
    transportFor: drillTransports(sandbox),
    journalDir: sandbox.journalDir,
    operator: 'drill',
    resolve: { concurrency: 4 },
    concurrency: 4,
    waitMs: 20_000,
    pollMs: 100,
  };
}

export function drillPlan(sandbox: DrillSandbox, selector: Selector): RotationPlan {
  return planRotation(loadInventory(sandbox.inventoryPath), selector);
}

export function newDrillRotationId(): string {
  return newRotationId(new Date(), randomBytes(3).toString('hex'));
}

/** Runs a rotation to its end, confirmed as `--yes` does; `write` gets its plain lines. */
export async function rotateScripted(
  sandbox: DrillSandbox,
  selector: Selector,
  write: (line: string) => void = () => {},
): Promise<{ readonly code: number; readonly state: RotationState }> {
  return runRotationPlain({ id: newDrillRotationId(), plan: drillPlan(sandbox, selector), deps: drillRotationDeps(sandbox), yes: true, write });
}
