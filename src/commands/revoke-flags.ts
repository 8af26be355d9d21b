/**
 * The refusals of `mesh rotate --revoke-previous` / `--end-sessions`, before anything is read
 * from a holder: both are about the login an alternating pair's consumer leaves, so they mean
 * nothing for a selection without one, and ending sessions without revoking would cut the
 * consumer's connections while its old password still works.
 */
import { BatonError } from '../errors.js';
import type { RevokeRequest } from '../app/rotation-revoke.js';
import type { Inventory } from '../mesh/inventory.js';
import type { RotationPlan } from '../mesh/rotation-plan.js';
import type { MeshFlags } from './mesh-flags.js';

/** The request the flags make (undefined without --revoke-previous); --end-sessions alone is refused. */
export function revokeRequest(
  flags: Pick<MeshFlags, 'revokePrevious' | 'endSessions'>,
): RevokeRequest | undefined {
  if (flags.endSessions && !flags.revokePrevious) {
    throw new BatonError('usage', {
      what: '--end-sessions ends the open sessions of the login a rotation revokes, and is only meaningful with --revoke-previous.',
      next: 'Add --revoke-previous, or leave out --end-sessions.',
      changed: 'Nothing was generated and nothing was sent.',
    });
  }
  return flags.revokePrevious ? { endSessions: flags.endSessions === true } : undefined;
}

/** Refuses a revoke for a selection where no pair is `credential: alternating`. */
export function revokeSelectionRefusal(inventory: Inventory, plan: RotationPlan): void {
  if (plan.pairs.some((p) => p.credential === 'alternating')) return;
  throw new BatonError('usage', {
    what: `--revoke-previous revokes the login an alternating pair's consumer leaves, and none of the ${plan.pairs.length} pair(s) of ${plan.selectorText} is "credential: alternating": each has one login role, whose old password the rotation itself replaces.`,
    where: inventory.source,
    next: 'Set "credential: alternating" for the consumer (or its provider) in the inventory, or rotate without --revoke-previous and --end-sessions.',
    changed: 'Nothing was generated and nothing was sent.',
  });
}
