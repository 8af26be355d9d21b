/**
 * The rotation's words, shared by the Ink view and plain line output so a script's log and
 * the screen say the same thing. Digests appear as short prefixes; secrets never reach here.
 */
import { PLAIN_SUGGESTER, suggest, type Suggester } from '../suggest-command.js';
import { digestPrefix } from '../mesh/digest.js';
import { deliveryLabel, type Holder, type RotationPlan } from '../mesh/rotation-plan.js';
import { confirmationText, isCommitted, progress, resolutionOf, setOf, unresolvedHolders, type RotationState, type Terminal } from './rotation-flow.js';
import { logHas } from './rotation-log.js';
import { MARKS } from './marks.js';

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
  for (const d of holder.receives) {
    const dir = `${d.end}/${d.provider}`;
    const roles = groups.get(dir);
    if (roles) roles.push(d.role);
    else groups.set(dir, [d.role]);
  }
  return [...groups].map(([dir, roles]) => (roles.length === 1 ? `${dir}/${roles[0]}` : `${dir} (${roles.length} roles)`)).join(', ');
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

/** Up to this many files a summary lists each one; beyond, it gives counts and the first rows. */
export const SUMMARY_FULL_FILES = 40;
/** Rows of each list a brief summary still shows. */
export const SUMMARY_ROWS = 10;

export interface SummaryOptions {
  /** Every line, however large the rotation: plain output, which scripts and logs keep. */
  readonly full?: boolean;
  /** The journal file, named where a brief summary leaves rows out. */
  readonly journal?: string;
  /** The one builder of suggested commands; plain `baton` without it. */
  readonly suggester?: Suggester;
}

/**
 * What changed where, for every terminal state. A small rotation lists every file; a large one
 * after the TTY view (over SSH every byte is carried) gives counts, the first rows and where
 * the full list is — the journal and `baton mesh plan`. Refusals and failures are never cut:
 * each unresolved or failed machine is named, since each one is something to fix.
 */
export function summaryLines(state: Terminal, waitSeconds?: number, options: SummaryOptions = {}): string[] {
  const files = progress(state).files;
  const brief = !options.full && files > SUMMARY_FULL_FILES;
  const s = options.suggester ?? PLAIN_SUGGESTER;
  const fullList = `the journal${options.journal ? ` (${options.journal})` : ''} records every file and digest of rotation ${state.id}; \`${suggest(s, `mesh plan ${state.plan.selectorText} --json`)}\` lists every holder`;
  /** `lines` whole, or its first rows and how many more (never cut when not brief). */
  const rows = (lines: readonly string[], what: string): string[] =>
    !brief || lines.length <= SUMMARY_ROWS ? [...lines] : [...lines.slice(0, SUMMARY_ROWS), `  …and ${lines.length - SUMMARY_ROWS} more ${what}: ${fullList}.`];
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
      const done = setOf(state.committed);
      const entries = state.plan.holders.flatMap((holder) =>
        holder.receives.map((d) => {
          const live = done.has(`${holder.machine}\0${d.path}`);
          return { live, line: `  ${holder.machine}: ${deliveryLabel(d)} ${live ? 'replaced' : 'still staged'}` };
        }),
      );
      const lines = ['Commit interrupted: the new secrets are staged, some are not live yet.'];
      if (brief) {
        const staged = entries.filter((e) => !e.live).map((e) => e.line);
        const replaced = entries.filter((e) => e.live).map((e) => e.line);
        lines.push(`  ${replaced.length} of ${files} files replaced, ${staged.length} still staged.`, ...rows(staged, 'still staged'), ...rows(replaced, 'replaced'));
      } else lines.push(...entries.map((e) => e.line));
      lines.push(...state.failures.map((f) => `  ${f.machine}: ${f.reason}`));
      lines.push(`Next: fix the machine, then run: ${suggest(s, `mesh resume ${state.id}`)}`);
      return lines;
    }
    case 'done': {
      const n = state.plan.pairs.length;
      const lines = [`Rotated ${n} credential${n === 1 ? '' : 's'} (rotation ${state.id}).`];
      if (brief) lines.push(`  ${files} files replaced on ${state.plan.holders.length} machines.`);
      const replaced = state.plan.holders.flatMap((holder) =>
        holder.receives.map((d) => {
          const digest = state.digests[d.pair];
          return `  ${holder.machine}: ${d.path} replaced (${digest ? digestPrefix(digest) : '?'})`;
        }),
      );
      lines.push(...rows(replaced, 'files replaced'));
      const applied = setOf(state.applied);
      const receipts = state.plan.pairs.map((pair) =>
        applied.has(pair.key)
          ? { missing: false, line: `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}` }
          : state.waited
            ? { missing: true, line: `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.role}${waitSeconds ? ` within ${waitSeconds} s` : ''}: until it does, ${pair.window}.` }
            : { missing: false, line: `  ${MARKS.info.glyph} ${pair.provider}: ${pair.role} not waited for (check its provisioner's receipt)` },
      );
      if (!brief) return [...lines, ...receipts.map((r) => r.line)];
      const missing = receipts.filter((r) => r.missing).map((r) => r.line);
      lines.push(
        state.waited
          ? `  Receipts: ${n - missing.length} of ${n} applied, ${missing.length} not confirmed${waitSeconds ? ` within ${waitSeconds} s` : ''}.`
          : `  Receipts: not waited for (--wait 0); check each provisioner's receipt for the ${n} roles.`,
        ...rows(missing, 'not confirmed'),
      );
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
  const resolution = resolutionOf(state, holder.machine);
  if (!resolution || resolution.status === 'pending') return { tone: 'busy', text: 'resolving' };
  if (resolution.status === 'unresolved') return { tone: 'refused', text: resolution.reason };
  switch (state.step) {
    case 'preparing':
      return logHas(state.staged, holder.machine) ? { tone: 'ok', text: 'staged' } : { tone: 'busy', text: 'staging' };
    case 'prepare-failed':
      return { tone: 'info', text: 'staged files removed' };
    case 'committing':
    case 'commit-failed': {
      const done = holder.receives.filter((d) => isCommitted(state.committed, `${holder.machine}\0${d.path}`)).length;
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
