/**
 * `mesh rotate`, in order: plan the selection, take this journal's lock and each provider's
 * lock on its machine, read the history, choose by age (`--older-than`), read every machine
 * once (its digests, records and lock: the leftovers, each alternating pair's login and the
 * gate's answer in one pass), refuse what may not start, then hand the rotation flow its plan
 * (resolve → confirm → intent → prepare → commit → receipts → consumer commits → finished or
 * rolled back: src/app/rotation-flow.ts) and let the command present it on a screen or as lines.
 */
import { randomBytes } from 'node:crypto';
import { EXIT_OK } from '../errors.js';
import { findMachine } from '../mesh/inventory.js';
import { newRotationId } from '../mesh/journal.js';
import { inspectPlan, leftoversRefusal, unknownLoginsRefusal } from '../mesh/leftovers.js';
import { withMeshLock } from '../mesh/mesh-lock.js';
import type { Resolution } from '../mesh/resolve-holders.js';
import { planRotation, type RotationPlan } from '../mesh/rotation-plan.js';
import { selectOlderThan } from '../mesh/select-by-age.js';
import { describeSelector, type Selector } from '../mesh/selector.js';
import { RECEIPT_POLL_MS, type RotationDeps } from '../app/rotation-run-effect.js';
import type { RevokeRequest } from '../app/rotation-revoke.js';
import { closingAfter, meshHistory, type OperationPorts } from './operation-ports.js';
import { machinesToOpenAhead, withProviderLocks } from './provider-locks.js';
import { readsRefusal } from '../mesh/app-reads.js';
import { authFileRefusal, poolerTargetRefusal, readPoolerKeepers } from '../mesh/poolers.js';
import { appHooks } from '../mesh/reload.js';
import { appBehindRefusal, behindPairs } from '../mesh/app-behind-guard.js';

export interface RotateInputs {
  readonly selector: Selector;
  /** `--older-than`, as typed and in ms. */
  readonly olderThan?: { readonly text: string; readonly ms: number };
  readonly concurrency: number;
  readonly waitMs: number;
  readonly revoke?: RevokeRequest;
  /** Aborted by the operator or a signal: the flow stops safely (rotation-run-effect.ts). */
  readonly stop: AbortController;
  /** `--app-behind CODE`s: pairs whose app is behind, rotated anyway (bound to the evidence). */
  readonly appBehind?: readonly string[];
}

/** How the command shows the rotation: a view on a terminal, or plain lines. Resolves with the exit code. */
export type PresentRotation = (rotation: {
  readonly id: string;
  readonly plan: RotationPlan;
  readonly deps: RotationDeps;
}) => Promise<number>;

export async function rotate(
  ports: OperationPorts,
  inputs: RotateInputs,
  present: PresentRotation,
): Promise<number> {
  const { inventory, journal, transports } = ports;
  const command = `mesh rotate ${describeSelector(inputs.selector)}`;
  const selected = planRotation(inventory, inputs.selector);
  return closingAfter(transports, () => {
    // How each app takes the new password is said before anything is locked, read or sent.
    const unsaid = readsRefusal(selected.pairs, inventory);
    if (unsaid) throw unsaid;
    // A pooler this baton cannot rotate is refused as early: rotated anyway, its logins strand.
    const poolerRefused = authFileRefusal(selected, inventory);
    if (poolerRefused) throw poolerRefused;
    // The first machines the read reaches open their connections while the locks are taken.
    const ahead = machinesToOpenAhead(selected.pairs, selected.holders, inputs.concurrency);
    return withMeshLock(journal.dir, journal.mesh, command, () =>
      withProviderLocks(
        selected.pairs,
        transports.transportFor,
        command,
        async (locks) => {
          const history = await meshHistory(journal);
          let plan = selected;
          if (inputs.olderThan) {
            // Ages are read over the same connections the rotation then uses (one per machine).
            const chosen = await selectOlderThan(
              inventory,
              inputs.selector,
              inputs.olderThan.text,
              inputs.olderThan.ms,
              transports.transportFor,
              history,
              { concurrency: inputs.concurrency, nowMs: Date.now() },
            );
            if (!chosen.plan) {
              ports.out(
                `None of the ${chosen.considered} pair(s) of ${describeSelector(inputs.selector)} was rotated longer ago than ${inputs.olderThan.text}. Nothing was generated and nothing was sent.`,
              );
              return EXIT_OK;
            }
            plan = chosen.plan;
          }
          // One read of every machine: a pair some rotation left unfinished (by the machines' own
          // records) is finished or rolled back first; each alternating pair's target login is
          // fixed from its consumer end; and whoever did not answer closes the gate.
          const inspected = await inspectPlan(
            plan,
            transports.transportFor,
            history,
            inputs.concurrency,
            (name) => findMachine(inventory, name),
            locks.holder,
          );
          plan = inspected.plan;
          if (inspected.unknownLogins.length > 0) throw unknownLoginsRefusal(inspected.unknownLogins);
          if (inspected.leftovers.length > 0)
            throw leftoversRefusal('rotate', inspected.leftovers, ports.suggester);
          // The provisioner keeping an auth_file pooler must keep the one the inventory names (poolers.ts).
          const keepers = await readPoolerKeepers(plan, transports.transportFor, inputs.concurrency);
          const otherPooler = poolerTargetRefusal(plan, inventory, keepers);
          if (otherPooler) throw otherPooler;
          // A pair whose app still uses the login this rotation would change is refused (app-behind-guard.ts).
          const behind = await behindPairs(plan, transports.transportFor, history, inputs.concurrency);
          const behindRefusal = appBehindRefusal(behind, inputs.appBehind ?? []);
          if (behindRefusal) throw behindRefusal;
          const deps: RotationDeps = {
            transportFor: transports.transportFor,
            journalDir: journal.dir,
            operator: ports.operator,
            resolve: { concurrency: inputs.concurrency },
            resolved: answersOf(plan, inspected.unread, locks.unlocked),
            concurrency: inputs.concurrency,
            waitMs: inputs.waitMs,
            pollMs: RECEIPT_POLL_MS,
            suggester: ports.suggester,
            stop: inputs.stop,
            mesh: journal.mesh,
            ...(inputs.revoke ? { revoke: inputs.revoke } : {}),
            app: appHooks(inventory), // reload: and connect: (src/app/rotation-app.ts)
          };
          const id = newRotationId(new Date(), randomBytes(3).toString('hex'));
          return present({ id, plan, deps });
        },
        ahead,
      ),
    );
  });
}

/** The gate's answers from the one read: a machine that was read (and locked, if a provider) is resolved. */
export function answersOf(
  plan: RotationPlan,
  unread: ReadonlyMap<string, string>,
  unlocked: ReadonlyMap<string, string>,
): ReadonlyMap<string, Resolution> {
  return new Map(
    plan.holders.map((h): [string, Resolution] => {
      const reason = unread.get(h.machine) ?? unlocked.get(h.machine);
      return [h.machine, reason === undefined ? { status: 'resolved' } : { status: 'unresolved', reason }];
    }),
  );
}
