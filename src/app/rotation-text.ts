/**
 * The rotation's words, shared by the Ink view and plain line output so a script's log and
 * the screen say the same thing. Digests appear as short prefixes; secrets never reach here.
 */
import { digestPrefix } from '../mesh/digest.js';
import { deliveryLabel, type Holder, type RotationPlan } from '../mesh/rotation-plan.js';
import type { Resolution } from '../mesh/resolve-holders.js';
import { confirmationText, progress, unresolvedHolders, type RotationState, type Terminal } from './rotation-flow.js';

/** Every file a holder receives, e.g. `provides/pg-main/web1_app, consumes/pg-audit/web1_app`. */
export function receivesText(holder: Holder): string {
  return holder.receives.map(deliveryLabel).join(', ');
}

/**
 * The same, compact for a table cell: one provider directory with many roles becomes
 * `provides/pg-main (40 roles)` so a provider holder's row still fits 80 columns.
 */
export function receivesShort(holder: Holder): string {
  const groups = new Map<string, string[]>();
  for (const d of holder.receives) groups.set(`${d.end}/${d.provider}`, [...(groups.get(`${d.end}/${d.provider}`) ?? []), d.role]);
  return [...groups].map(([dir, roles]) => (roles.length === 1 ? `${dir}/${roles[0]}` : `${dir} (${roles.length} roles)`)).join(', ');
}

export function resolutionText(resolution: Resolution | undefined): string {
  if (!resolution || resolution.status === 'pending') return 'resolving…';
  return resolution.status === 'resolved' ? 'resolved' : `unresolved: ${resolution.reason}`;
}

export function planHeadline(plan: RotationPlan): string {
  const n = plan.pairs.length;
  return `${plan.selectorText}: ${n} credential${n === 1 ? '' : 's'} on ${plan.holders.length} machine${plan.holders.length === 1 ? '' : 's'}`;
}

export function gateClosedLines(state: RotationState): string[] {
  const unresolved = unresolvedHolders(state);
  return [
    `Gate closed: ${unresolved.length} of ${state.plan.holders.length} machines could not be resolved.`,
    'Nothing was generated and nothing was sent; the old credentials keep working.',
    ...unresolved.map((u) => `  ${u.machine}: ${u.reason}`),
    'Next: make every machine reachable (or narrow the selection), then run the rotation again.',
  ];
}

export function confirmPrompt(plan: RotationPlan): string {
  const n = confirmationText(plan);
  return `Type ${n} (the number of credentials) and Enter to rotate; Esc cancels.`;
}

export function progressText(state: RotationState): string {
  const p = progress(state);
  return `prepared ${p.staged}/${p.files} · committed ${p.committed}/${p.files} · applied ${p.applied}/${p.pairs}`;
}

/** What changed where, for every terminal state. */
export function summaryLines(state: Terminal, waitSeconds?: number): string[] {
  switch (state.step) {
    case 'gate-closed':
      return gateClosedLines(state);
    case 'cancelled':
      return ['Cancelled before anything was generated. Nothing was sent.'];
    case 'prepare-failed':
      return [
        'Prepare failed: nothing took effect, the old credentials keep working.',
        ...state.failures.map((f) => `  ${f.machine}: ${f.reason}`),
        state.unstageFailures.length === 0
          ? 'Every staged file was removed.'
          : `Staged files could NOT be removed on: ${state.unstageFailures.map((f) => `${f.machine} (${f.reason})`).join('; ')} — remove the *.next files there by hand.`,
      ];
    case 'commit-failed': {
      const done = new Set(state.committed);
      const lines = ['Commit interrupted: the new secrets are staged, some are not live yet.'];
      for (const holder of state.plan.holders) {
        for (const d of holder.receives) {
          lines.push(`  ${holder.machine}: ${deliveryLabel(d)} ${done.has(`${holder.machine}\0${d.path}`) ? 'replaced' : 'still staged'}`);
        }
      }
      lines.push(...state.failures.map((f) => `  ${f.machine}: ${f.reason}`));
      lines.push(`Next: fix the machine, then run: baton mesh resume ${state.id}`);
      return lines;
    }
    case 'done': {
      const lines = [`Rotated ${state.plan.pairs.length} credential${state.plan.pairs.length === 1 ? '' : 's'} (rotation ${state.id}).`];
      for (const holder of state.plan.holders) {
        for (const d of holder.receives) {
          const digest = state.digests[d.pair];
          lines.push(`  ${holder.machine}: ${d.path} replaced (${digest ? digestPrefix(digest) : '?'})`);
        }
      }
      for (const pair of state.plan.pairs) {
        if (state.applied.includes(pair.key)) lines.push(`  ✓ ${pair.provider} applied ${pair.role}`);
        else if (state.waited) {
          lines.push(`  ! ${pair.provider} has not confirmed ${pair.role}${waitSeconds ? ` within ${waitSeconds} s` : ''}: until it does, ${pair.window}.`);
        } else lines.push(`  · ${pair.provider}: ${pair.role} not waited for (check its provisioner's receipt)`);
      }
      return lines;
    }
    default: {
      const never: never = state;
      throw new Error(`unknown terminal ${String(never)}`);
    }
  }
}

export interface HolderStatus {
  readonly tone: 'ok' | 'refused' | 'busy' | 'info';
  readonly text: string;
}

/** One holder's latest state in words: resolving → resolved → staged → replaced (or why not). */
export function holderStatus(state: RotationState, holder: Holder): HolderStatus {
  const failure = 'failures' in state ? state.failures.find((f) => f.machine === holder.machine) : undefined;
  if (failure) return { tone: 'refused', text: failure.reason };
  const resolution = state.resolutions[holder.machine];
  if (!resolution || resolution.status === 'pending') return { tone: 'busy', text: 'resolving' };
  if (resolution.status === 'unresolved') return { tone: 'refused', text: resolution.reason };
  switch (state.step) {
    case 'preparing':
      return state.staged.includes(holder.machine) ? { tone: 'ok', text: 'staged' } : { tone: 'busy', text: 'staging' };
    case 'prepare-failed':
      return { tone: 'info', text: 'staged files removed' };
    case 'committing':
    case 'commit-failed': {
      const done = holder.receives.filter((d) => state.committed.includes(`${holder.machine}\0${d.path}`)).length;
      if (done === holder.receives.length) return { tone: 'ok', text: 'replaced' };
      return state.step === 'committing' ? { tone: 'busy', text: `committing ${done}/${holder.receives.length}` } : { tone: 'info', text: `still staged (${holder.receives.length - done})` };
    }
    case 'applying':
    case 'done':
      return { tone: 'ok', text: 'replaced' };
    default:
      return { tone: 'ok', text: 'resolved' };
  }
}
