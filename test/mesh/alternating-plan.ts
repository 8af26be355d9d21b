/**
 * A rotation plan as the rotation shapes it for alternating pairs once their live logins are
 * known (`PlannedPair.login`): the provider end and receipt are the target login's file
 * (`R+y`), the consumer end stays `consumes/P/R`. For tests of what reads `login` (revoke,
 * status) without the part that fills it in.
 */
import path from 'node:path';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import type { OpenSession } from '../../src/mesh/revoke.js';
import type { FakeMachine } from './fake-transport.js';
import { loginRole, otherSlot, type LoginSlot } from '../../src/mesh/alternating.js';
import { findMachine, type Inventory } from '../../src/mesh/inventory.js';
import { holdersOf, type PlannedPair, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { endSessionsPath } from '../../src/mesh/revoke.js';
import { loginFilePaths } from '../../src/mesh/rotation-plan.js';

const loginPaths = loginFilePaths;

/** Every pair alternating, its consumer live on `live` (null: a single pair being switched): the rotation moves it to the other login. */
export function asAlternating(
  inventory: Inventory,
  plan: RotationPlan,
  live: LoginSlot | null = 'a',
): RotationPlan {
  const pairs: PlannedPair[] = plan.pairs.map((p) => {
    const slot = live ? otherSlot(live) : 'a';
    const target = loginPaths(p, slot);
    return {
      ...p,
      credential: 'alternating',
      ...target,
      login: {
        slot,
        role: loginRole(p.role, slot),
        ...(live ? { left: { slot: live, role: loginRole(p.role, live), ...loginPaths(p, live) } } : {}),
      },
    };
  });
  return { ...plan, pairs, holders: holdersOf(pairs, (name) => findMachine(inventory, name)) };
}

/** Per provider machine, the left logins' files a revoke may touch (for fakeMesh's `also`). */
export function leftPaths(plan: RotationPlan): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const p of plan.pairs) {
    const left = p.login?.left;
    if (left)
      (out[p.providerMachine] ??= []).push(
        left.providerPath,
        left.receiptPath,
        endSessionsPath(left.providerPath),
      );
  }
  return out;
}

/**
 * A provisioner on a fake provider machine for login files: each provider file committed gets
 * its receipt at once, listing `sessions` open for the login; a matching end-sessions request
 * ends them (`ended_sessions`) and is removed. `applies` picks the files it applies (default all).
 */
export function loginProvisionerOn(
  machine: FakeMachine,
  sessions: readonly OpenSession[],
  applies: (file: string) => boolean = () => true,
): void {
  machine.afterCommit = (paths, files) => {
    for (const p of paths) {
      if (path.basename(path.dirname(p)) === '.end-sessions' || !applies(p)) continue;
      const name = path.basename(p);
      const digest = secretDigest(files.get(p)!);
      const request = endSessionsPath(p);
      const ended = files.get(request) === digest;
      if (ended) files.delete(request);
      const receipt = {
        ...JSON.parse(formatReceipt({ role: name, digest, applied_at: new Date().toISOString() })),
        login: name.replace('+', '_'),
        sessions: ended ? [] : sessions,
        ...(ended ? { ended_sessions: sessions.length } : {}),
      };
      files.set(path.join(path.dirname(p), '.applied', name), JSON.stringify(receipt));
    }
  };
}
