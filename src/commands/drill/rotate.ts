/**
 * A rotation the drill performs without a screen (the sandbox's first passwords, `--plain`,
 * the preparation for `--step N`): `runRotationPlain`, the code `baton mesh rotate --yes`
 * runs — the rotation flow's reducer and effect runner, the confirmation given as --yes.
 */
import { randomBytes } from 'node:crypto';
import type { RotationState } from '../../app/rotation-flow.js';
import { runRotationPlain } from '../../app/rotation-plain.js';
import { RECEIPT_POLL_MS, type RotationDeps } from '../../app/rotation-run-effect.js';
import type { RevokeRequest } from '../../app/rotation-revoke.js';
import { findMachine, loadInventory } from '../../mesh/inventory.js';
import { journalHistory } from '../../mesh/journal-history.js';
import { appHooks } from '../../mesh/reload.js';
import { inspectPlan, unknownLoginsRefusal } from '../../mesh/leftovers.js';
import { newRotationId } from '../../mesh/journal.js';
import { planRotation, type RotationPlan } from '../../mesh/rotation-plan.js';
import type { Selector } from '../../mesh/selector.js';
import type { TransportFor } from '../../mesh/transport.js';
import { transportsFor } from '../../transport/make-transport.js';
import { BatonError } from '../../errors.js';
import { DRILL_PROVIDER, type DrillSandbox } from '../../sandbox/drill-layout.js';
import { unpluggable } from './unplugged.js';
import { meshIdentity } from '../../mesh/mesh-identity.js';
import { withMeshLock } from '../../mesh/mesh-lock.js';

/** The drill's one bound on a holder's answer, per step. */
export const DRILL_TIMEOUT_MS = 5_000;

/** The sandbox's machines as the drill reaches them: bounded, and unpluggable. */
export function drillTransports(sandbox: DrillSandbox): TransportFor {
  return transportsFor(
    loadInventory(sandbox.inventoryPath).machines,
    { timeoutMs: DRILL_TIMEOUT_MS },
    { wrap: unpluggable },
  );
}

/** What the drill's rotations need: the sandbox inventory and journal, a bounded wait for receipts (and `--revoke-previous`, when asked). */
export function drillRotationDeps(sandbox: DrillSandbox, revoke?: RevokeRequest): RotationDeps {
  const inventory = loadInventory(sandbox.inventoryPath);
  return {
    ...(revoke ? { revoke } : {}),
    transportFor: drillTransports(sandbox),
    journalDir: sandbox.journalDir,
    operator: 'drill',
    resolve: { concurrency: 4 },
    concurrency: 4,
    waitMs: 20_000,
    pollMs: RECEIPT_POLL_MS,
    mesh: meshIdentity(inventory),
    // web2-app's reload: restarts its caching app after each delivery (src/sandbox/drill-apps.ts).
    app: appHooks(inventory),
  };
}

export function drillPlan(sandbox: DrillSandbox, selector: Selector): RotationPlan {
  return planRotation(loadInventory(sandbox.inventoryPath), selector);
}

export function newDrillRotationId(): string {
  return newRotationId(new Date(), randomBytes(3).toString('hex'));
}

/** Runs a rotation to its end; `write` gets its plain lines. */
export async function rotateScripted(
  sandbox: DrillSandbox,
  selector: Selector,
  write: (line: string) => void = () => {},
  /** The operator types the count (the drill's dialogue); without it, confirmed as --yes. */
  askCount?: (question: string) => Promise<string | undefined>,
  revoke?: RevokeRequest,
): Promise<{ readonly code: number; readonly state: RotationState }> {
  // Under the mesh lock, as `mesh rotate` runs: a status read meanwhile sees a rotation running, not a leftover.
  const deps = drillRotationDeps(sandbox, revoke);
  return withMeshLock(sandbox.journalDir, deps.mesh!, 'baton drill rotation', async () => {
    const plan = await settledDrillPlan(sandbox, selector, deps);
    return runRotationPlain({
      id: newDrillRotationId(),
      plan,
      deps,
      yes: askCount === undefined,
      write,
      ...(askCount ? { askCount } : {}),
    });
  });
}

/**
 * The plan as `mesh rotate` settles it before the view opens: an alternating pair's target login
 * comes from its consumer end's live login (the plan alone says slot a, provisionally — rotating
 * the live login would refuse the password its consumer holds). The interactive drill's view
 * and the scripted rotation both start from it.
 */
export async function settledDrillPlan(
  sandbox: DrillSandbox,
  selector: Selector,
  deps: RotationDeps,
): Promise<RotationPlan> {
  const inventory = loadInventory(sandbox.inventoryPath);
  const inspected = await inspectPlan(
    drillPlan(sandbox, selector),
    deps.transportFor,
    journalHistory([]),
    deps.concurrency,
    (name) => findMachine(inventory, name),
  );
  if (inspected.unknownLogins.length > 0) throw unknownLoginsRefusal(inspected.unknownLogins);
  return inspected.plan;
}

/**
 * Every pair of pg-main gets its first password through a real rotation, and the drill waits
 * until the provisioner applied them all: step 4 needs an old password that logs in.
 */
export async function seedPasswords(sandbox: DrillSandbox): Promise<void> {
  const { state: result } = await rotateScripted(sandbox, { by: 'provider', name: DRILL_PROVIDER });
  if (result.step !== 'done' || result.applied.length !== result.plan.pairs.length) {
    throw new BatonError('failed', {
      what: `The first passwords of pg-main were not applied (the rotation ended in "${result.step}", ${result.step === 'done' ? result.applied.length : 0} of ${result.plan.pairs.length} applied).`,
      where: sandbox.postgres.logFile,
      next: 'Read the PostgreSQL log named above; run the drill again with --keep to look at the sandbox.',
    });
  }
}
