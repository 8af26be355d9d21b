/**
 * The rotation's words, shared by the Ink view and plain line output so a script's log and
 * the screen say the same thing. Digests appear as short prefixes; secrets never reach here.
 */
import { appSummaryLines } from './rotation-app-text.js';
import { nextStep, renderStep } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import { digestPrefix } from '../mesh/digest.js';
import { endDigest } from '../mesh/delivery.js';
import { deliveredName, deliveryLabel, type Holder, type RotationPlan } from '../mesh/rotation-plan.js';
import {
  confirmationText,
  isCommitted,
  isTerminal,
  progress,
  resolutionOf,
  setOf,
  unresolvedHolders,
  type RotationState,
  type Terminal,
} from './rotation-flow.js';
import { logHas } from './rotation-log.js';
import { MARKS } from './marks.js';
import type { PairRollback } from '../mesh/rollback.js';

/** Every file a holder receives, e.g. `provides/pg-main/web1_app, consumes/pg-audit/web1_app`. */
export function receivesText(holder: Holder): string {
  // A pooler's machine that holds no pair's end is a holder all the same (rotation-plan.ts).
  if (holder.receives.length === 0) return 'nothing (a pooler of the pairs: poolers:)';
  return holder.receives.map(deliveryLabel).join(', ');
}

/**
 * The same, compact for a table cell: one provider directory with many roles becomes
 * `provides/pg-main (40 roles)` so a provider holder's row still fits 80 columns.
 */
export function receivesShort(holder: Holder): string {
  if (holder.receives.length === 0) return 'nothing (a pooler)';
  const groups = new Map<string, string[]>();
  for (const d of holder.receives) {
    const dir = `${d.end}/${d.provider}`;
    const roles = groups.get(dir);
    if (roles) roles.push(deliveredName(d));
    else groups.set(dir, [deliveredName(d)]);
  }
  return [...groups]
    .map(([dir, roles]) => (roles.length === 1 ? `${dir}/${roles[0]}` : `${dir} (${roles.length} roles)`))
    .join(', ');
}

export function planHeadline(plan: RotationPlan): string {
  const n = plan.pairs.length;
  return `${plan.selectorText}: ${n} credential${n === 1 ? '' : 's'} on ${plan.holders.length} machine${plan.holders.length === 1 ? '' : 's'}`;
}

export function gateClosedLines(state: RotationState): string[] {
  const unresolved = unresolvedHolders(state);
  return [
    `Gate closed: ${unresolved.length} of ${plural(state.plan.holders.length, 'machine')} could not be resolved.`,
    'Nothing was generated and nothing was sent; the old credentials keep working.',
    // A pooler's machine is named with its pooler: the operator knows pgbouncer by that name.
    ...unresolved.map((u) => {
      const poolers = (state.plan.poolers ?? []).filter((p) => p.machine === u.machine).map((p) => p.name);
      return `  ${u.machine}${poolers.length > 0 ? ` (pooler ${poolers.join(', ')})` : ''}: ${u.reason}`;
    }),
    'Next: make every machine reachable (or narrow the selection), then run the rotation again.',
  ];
}

export function confirmPrompt(plan: RotationPlan): string {
  const n = confirmationText(plan);
  return `Type ${n} (the number of credentials) and Enter to rotate; Esc cancels.`;
}

/**
 * A journal record that could not be written: what failed and where, where the credentials
 * stand, and the next step (the last line). The view and the summary both say it this way.
 */
export function journalFailedLines(
  state: Extract<RotationState, { step: 'journal-failed' }>,
  resume: string,
): string[] {
  const lines = [state.journal.what, `  Journal: ${state.journal.where}`];
  switch (state.files) {
    case 'nothing-staged':
      lines.push('No new credential took effect.');
      lines.push(`Next: ${state.journal.next} Then run the rotation again.`);
      break;
    case 'unstaged':
      lines.push(
        state.unstageFailures.length === 0
          ? 'Every staged file was removed: nothing took effect, the old credentials keep working.'
          : `Staged files could NOT be removed on: ${state.unstageFailures.map((f) => `${f.machine} (${f.reason})`).join('; ')} — remove the *.next files there by hand; the old credentials keep working.`,
      );
      lines.push(`Next: ${state.journal.next} Then run the rotation again.`);
      break;
    case 'live':
      lines.push('Provider ends are live; what is not applied yet stays staged (old passwords still work).');
      lines.push(`Next: ${state.journal.next} Then run: ${resume}`);
      break;
    default: {
      const never: never = state.files;
      throw new Error(`unknown files ${String(never)}`);
    }
  }
  return lines;
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
  // app-truth: the test logins and reloads follow the rotation's own summary (rotation-app-text.ts).
  const app = appSummaryLines(state);
  const base = rotationSummaryLines(state, waitSeconds, options);
  return app.length === 0 ? base : [...base, ...app];
}

function rotationSummaryLines(state: Terminal, waitSeconds?: number, options: SummaryOptions = {}): string[] {
  const files = progress(state).files;
  const brief = !options.full && files > SUMMARY_FULL_FILES;
  const s = options.suggester ?? PLAIN_SUGGESTER;
  const fullList = `the journal${options.journal ? ` (${options.journal})` : ''} records every file and digest of rotation ${state.id}; \`${renderStep(s, nextStep(`mesh plan ${state.plan.selectorText} --json`))}\` lists every holder`;
  /** `lines` whole, or its first rows and how many more (never cut when not brief). */
  const rows = (lines: readonly string[], what: string): string[] =>
    !brief || lines.length <= SUMMARY_ROWS
      ? [...lines]
      : [...lines.slice(0, SUMMARY_ROWS), `  …and ${lines.length - SUMMARY_ROWS} more ${what}: ${fullList}.`];
  switch (state.step) {
    case 'gate-closed':
      return gateClosedLines(state);
    case 'cancelled':
      return [
        'Cancelled before anything was generated. Nothing was sent.',
        ...state.plan.pairs
          .filter((p) => p.login)
          .map((p) => `  ${MARKS.info.glyph} ${p.key}: ${staysOn(p)}.`),
      ];
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
          return {
            live,
            line: `  ${holder.machine}: ${deliveryLabel(d)} ${live ? 'replaced' : 'still staged'}`,
          };
        }),
      );
      const lines = [
        `Commit interrupted: ${appliedCount(state.applied.length, state.plan.pairs.length)}; the rest are staged, and their consumers keep the old password, which still works.`,
      ];
      if (brief) {
        const staged = entries.filter((e) => !e.live).map((e) => e.line);
        const replaced = entries.filter((e) => e.live).map((e) => e.line);
        lines.push(
          `  ${replaced.length} of ${files} files replaced, ${staged.length} still staged.`,
          ...rows(staged, 'still staged'),
          ...rows(replaced, 'replaced'),
        );
      } else lines.push(...entries.map((e) => e.line));
      lines.push(...state.failures.map((f) => `  ${f.machine}: ${f.reason}`));
      lines.push(
        ...rows(
          receiptLines(state, waitSeconds)
            .filter((r) => r.missing)
            .map((r) => r.line),
          'not confirmed',
        ),
      );
      lines.push(...windowSummary(state));
      lines.push(`Next: fix the machine, then run: ${renderStep(s, nextStep(`mesh resume ${state.id}`))}`);
      return lines;
    }
    case 'done': {
      const n = state.plan.pairs.length;
      const all = state.applied.length === n;
      const lines = [
        all
          ? `Rotated ${plural(n, 'credential')} (rotation ${state.id}).`
          : `${capitalise(appliedCount(state.applied.length, n))}, ${n - state.applied.length} pending (rotation ${state.id}).`,
      ];
      if (brief)
        lines.push(
          `  ${progress(state).committed} of ${files} files replaced on ${plural(state.plan.holders.length, 'machine')}.`,
        );
      const applied = setOf(state.applied);
      const replaced = state.plan.holders.flatMap((holder) =>
        holder.receives.map((d) => {
          const digest = endDigest(state.digests, d.pair, d.end);
          const live = d.end === 'provides' || applied.has(d.pair);
          return `  ${holder.machine}: ${d.path} ${live ? 'replaced' : 'still staged'} (${digest ? digestPrefix(digest) : '?'})`;
        }),
      );
      lines.push(...rows(replaced, 'files'));
      const receipts = receiptLines(state, waitSeconds);
      if (!brief) lines.push(...receipts.map((r) => r.line));
      else {
        const missing = receipts.filter((r) => r.missing).map((r) => r.line);
        lines.push(
          `  Receipts: ${n - missing.length} of ${n} applied, ${missing.length} not confirmed${waitSeconds !== undefined ? ` within ${waitSeconds} s` : ''}.`,
          ...rows(missing, 'not confirmed'),
        );
      }
      lines.push(...windowSummary(state));
      if (!all)
        lines.push(
          `Next: once each provisioner has applied them (its receipt), run: ${renderStep(s, nextStep(`mesh resume ${state.id}`))}`,
        );
      return lines;
    }
    case 'rolled-back':
      return rolledBackLines(state, s);
    case 'journal-failed': {
      // Where the credentials stand first, then the journal: the operator fixes it, then goes on.
      const before = state.before;
      const lines = journalFailedLines(state, renderStep(s, nextStep(`mesh resume ${state.id}`)));
      const standing = isTerminal(before)
        ? summaryLines(before, waitSeconds, options).filter((line) => !line.startsWith('Next:'))
        : [];
      return [...lines.slice(0, -1), ...standing, lines[lines.length - 1]!];
    }
    default: {
      const never: never = state;
      throw new Error(`unknown terminal ${String(never)}`);
    }
  }
}

/**
 * After a roll-back: per pair what is live now, the window that may remain (stated, never
 * guessed: "the old password works" only when the receipt says so), and as the last line
 * either that nothing is left to do or the commands that finish or take back what is left.
 */
export interface RolledBack {
  readonly id: string;
  readonly plan: { readonly pairs: RotationPlan['pairs']; readonly selectorText: string };
  readonly applied: readonly string[];
  readonly windows: Readonly<Record<string, number>>;
  readonly failures: readonly { readonly machine: string; readonly reason: string }[];
  readonly stopped: string | undefined;
  readonly app?: { readonly testLogins: readonly { readonly ok: boolean }[] };
  readonly results: readonly PairRollback[];
}

export function rolledBackLines(state: RolledBack, s: Suggester = PLAIN_SUGGESTER): string[] {
  const byKey = new Map(state.plan.pairs.map((p) => [p.key, p] as const));
  const n = state.plan.pairs.length;
  const finished = state.applied.length + state.results.filter((r) => r.result === 'finished').length;
  const rolled = state.results.filter((r) => r.result === 'rolled-back').length;
  const why =
    state.stopped ??
    (state.failures.length > 0
      ? "a machine's commit failed"
      : // app-truth: a test login refused from a consumer's machine left its pair unfinished on purpose.
        state.app?.testLogins.some((t) => !t.ok)
        ? "the new credential was refused from a consumer's machine"
        : 'not every provider confirmed in time');
  const left = n - finished - rolled;
  const lines = [
    // The headline says what the counts say: every pair found finished is "finished", not "rolled back".
    `Rotation ${state.id} ${rolled === 0 && left === 0 ? 'finished' : rolled > 0 || left === 0 ? 'rolled back' : 'did not finish'} (${why}): ${finished} of ${plural(n, 'credential')} finished, ${rolled} rolled back${left > 0 ? `, ${left} left` : ''}.`,
  ];
  for (const f of state.failures) lines.push(`  ${MARKS.refused.glyph} ${f.machine}: ${f.reason}`);
  const applied = setOf(state.applied);
  let leftover = false;
  const rolledBackKeys = state.results.filter((r) => r.result === 'rolled-back').map((r) => r.pair);
  for (const pair of state.plan.pairs) {
    if (applied.has(pair.key)) {
      const ms = state.windows[pair.key];
      lines.push(
        pair.login
          ? `  ${MARKS.ok.glyph} ${pair.key}: finished; ${pair.provider} applied ${pair.login.role} and ${pair.consumer} moved to it (no window).`
          : `  ${MARKS.ok.glyph} ${pair.key}: finished; ${pair.provider} applied ${pair.role} and ${pair.consumer}'s file was replaced${ms === undefined ? '' : ` ${formatWindow(ms)} later`}.`,
      );
    }
  }
  for (const r of state.results) {
    const pair = byKey.get(r.pair)!;
    switch (r.result) {
      case 'finished':
        lines.push(
          `  ${MARKS.ok.glyph} ${pair.key}: finished; ${pair.provider}'s receipt showed the new password, and ${pair.consumer}'s file holds it.`,
        );
        break;
      case 'rolled-back': {
        if (pair.login) {
          lines.push(
            `  ${MARKS.info.glyph} ${pair.key}: rolled back; ${pair.providerMachine}:${pair.providerPath} holds what it held before this rotation (no file, if it had none) and ${pair.consumer}'s staged file was removed; ${staysOn(pair)}.`,
          );
          if (r.leftover) {
            leftover = true;
            lines.push(`      ${r.leftover} (it is never read, but it blocks the next rotation).`);
          }
          break;
        }
        const receipt =
          r.receipt === 'old'
            ? `${pair.provider}'s provisioner set the old password again (its receipt): it works.`
            : r.receipt === 'new'
              ? `${pair.provider}'s receipt still shows the NEW password: it was applied before the roll-back, so new connections of ${pair.consumer} fail until the provisioner's next cycle puts the old one back.`
              : `no receipt confirms the old password yet: the provisioner sets it again on its next cycle; if it had applied the new one, new connections of ${pair.consumer} fail until then.`;
        lines.push(
          `  ${MARKS.info.glyph} ${pair.key}: rolled back; ${pair.providerMachine}:${pair.providerPath} holds what it held before this rotation (no file, if it had none) and ${pair.consumer}'s staged file was removed; ${receipt}`,
        );
        if (r.leftover) {
          leftover = true;
          lines.push(`      ${r.leftover} (it is never read, but it blocks the next rotation).`);
        }
        break;
      }
      case 'provider-unknown':
        leftover = true;
        if (pair.login) {
          lines.push(
            `  ${MARKS.refused.glyph} ${pair.key}: ${pair.providerMachine} could not be rolled back (${r.reason}); ${staysOn(pair)} — only ${pair.login.role}'s files are unfinished.`,
          );
          break;
        }
        lines.push(
          `  ${MARKS.refused.glyph} ${pair.key}: ${pair.providerMachine} could not be rolled back (${r.reason}): whether ${pair.provider} took the new password is unknown; if it did, new connections of ${pair.consumer} (file still old, new one staged) fail until this is finished or rolled back.`,
        );
        break;
      case 'consumer-unknown':
        leftover = true;
        if (pair.login) {
          lines.push(
            `  ${MARKS.refused.glyph} ${pair.key}: ${pair.consumerMachine} could not be reached (${r.reason}); whichever login its file names works: ${pair.login.role} if the file was replaced, else the one it was on.`,
          );
          break;
        }
        lines.push(
          `  ${MARKS.refused.glyph} ${pair.key}: ${pair.consumerMachine} could not be reached (${r.reason}); its provider end stays live with the new password, so if ${pair.provider} applied it, ${pair.consumer}'s live password is now refused until this is finished or rolled back.`,
        );
        break;
      default: {
        const never: never = r;
        throw new Error(`unknown roll-back result ${String(never)}`);
      }
    }
  }
  const finishedKeys = new Set([
    ...state.applied,
    ...state.results.filter((r) => r.result === 'finished').map((r) => r.pair),
  ]);
  lines.push(...switchedLines(state.plan.pairs.filter((p) => finishedKeys.has(p.key))));
  lines.push(
    leftover
      ? `Next: once the machines are reachable, finish with ${renderStep(s, nextStep(`mesh resume ${state.id}`))} or take it back with ${renderStep(s, nextStep(`mesh rollback ${state.id}`))}`
      : rolledBackKeys.length === 0
        ? 'Nothing is left to do: every pair is finished.'
        : // The rolled-back pairs by name: the plan's selector may be "every pair" or an age filter, which would not name the same pairs again.
          `Nothing is left to do: every pair is finished or rolled back. Once the provisioner runs, rotate again with ${renderStep(s, nextStep(`mesh rotate ${rolledBackKeys.map((key) => `--pair ${key}`).join(' ')}`))}`,
  );
  return lines;
}

/** `1 credential`, `2 credentials`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `all 3 machines`, `the 1 machine`. */
export function allOf(n: number, word: string): string {
  return n === 1 ? `the 1 ${word}` : `all ${n} ${word}s`;
}

export function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** `applied 2 of 3 credentials` — the honest count when not every pair finished. */
export function appliedCount(applied: number, total: number): string {
  return `applied ${applied} of ${plural(total, 'credential')}`;
}

/** `37 ms` / `1.2 s`: a window as people read it. */
export function formatWindow(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * One line per pair: applied, with the window it had; or not confirmed, with what that means
 * (its consumer end is staged, the old password still works).
 */
function receiptLines(
  state: Extract<Terminal, { step: 'done' | 'commit-failed' }>,
  waitSeconds: number | undefined,
): { missing: boolean; line: string }[] {
  const applied = setOf(state.applied);
  return state.plan.pairs.map((pair) => {
    if (pair.login) {
      // With --revoke-previous the login left does not keep working: the revoke lines below say how it ended.
      const revoked = state.step === 'done' && state.revoked?.some((r) => r.pair === pair.key && r.revoked);
      const left = pair.login.left
        ? `: ${pair.login.left.role}, which it left, ${revoked ? 'is revoked (below)' : 'keeps working until the next rotation'}`
        : '';
      return applied.has(pair.key)
        ? {
            missing: false,
            line: `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.login.role}; ${pair.consumer} moved to it (no window${left})`,
          }
        : {
            missing: true,
            line: `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.login.role}${waitSeconds ? ` within ${waitSeconds} s` : ''}: ${pair.consumer}'s new file is still staged; ${staysOn(pair)}.`,
          };
    }
    if (applied.has(pair.key)) {
      const ms = state.windows[pair.key];
      if (pair.leaves)
        return {
          missing: false,
          line: `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}; ${pair.consumer}'s file names it now (no window: it used ${pair.leaves} until then)`,
        };
      return {
        missing: false,
        line: `  ${MARKS.ok.glyph} ${pair.provider} applied ${pair.role}; ${pair.consumer}'s file replaced ${ms === undefined ? 'after the receipt' : `${formatWindow(ms)} later (the window)`}`,
      };
    }
    return {
      missing: true,
      line: `  ${MARKS.action.glyph} ${pair.provider} has not confirmed ${pair.role}${waitSeconds ? ` within ${waitSeconds} s` : ''}: ${pair.consumer}'s file is still staged; its old password still works.`,
    };
  });
}

/**
 * The window this rotation actually had, measured: the longest and the median over the pairs
 * whose consumer end went live, and which connections it concerned.
 */
function windowSummary(state: Extract<Terminal, { step: 'done' | 'commit-failed' }>): string[] {
  const alternating = state.plan.pairs.filter((p) => p.login);
  const applied = setOf(state.applied);
  const lines = switchedLines(state.plan.pairs.filter((p) => applied.has(p.key)));
  if (alternating.length > 0) {
    lines.unshift(
      `No window for ${plural(alternating.length, 'alternating pair')}: each consumer keeps a login that works until it moves to one its database already has.`,
    );
  }
  // A pair switched back to one role had no window either: its consumer kept its login until its file named the role.
  const single = new Set(state.plan.pairs.filter((p) => !p.login && !p.leaves).map((p) => p.key));
  const values = Object.entries(state.windows)
    .filter(([key]) => single.has(key))
    .map(([, ms]) => ms)
    .sort((a, b) => a - b);
  if (values.length === 0) return lines;
  const median = values[Math.floor((values.length - 1) / 2)]!;
  return [
    ...lines,
    `Window: new connections that still used the OLD password could fail from the database applying the new one until the consumer's file was replaced — ${values.length === 1 ? formatWindow(values[0]!) : `at most ${formatWindow(values[values.length - 1]!)} (median ${formatWindow(median)}) over ${values.length} pairs`}. No consumer held a password before its database had it.`,
  ];
}

/**
 * The window a finished rotation had, for a status line: the longest over its single pairs
 * (` · window ≤ 37 ms`), ` · window: none (alternating)` when only alternating pairs applied.
 */
export function windowBadge(state: Extract<Terminal, { step: 'done' }>): string {
  const applied = setOf(state.applied);
  const single = state.plan.pairs
    .filter((p) => !p.login && !p.leaves && applied.has(p.key))
    .map((p) => state.windows[p.key])
    .filter((ms): ms is number => ms !== undefined);
  if (single.length > 0) return ` · window ≤ ${formatWindow(Math.max(...single))}`;
  if (state.plan.pairs.some((p) => p.login && applied.has(p.key))) return ' · window: none (alternating)';
  return state.plan.pairs.some((p) => p.leaves && applied.has(p.key))
    ? ' · window: none (switching to one role)'
    : '';
}

/** A pair the view lists as not confirmed: what stays live, and that it works. */
export function notConfirmedText(pair: RotationPlan['pairs'][number]): string {
  if (pair.login)
    return `${pair.provider} has not confirmed ${pair.login.role}: ${pair.consumer}'s new file is still staged; ${staysOn(pair)}.`;
  return `${pair.provider} has not confirmed ${pair.role}: ${pair.consumer}'s file is still staged; its old password still works.`;
}

/** Where an alternating pair's consumer stays when its rotation does not finish: a login that works. */
export function staysOn(pair: RotationPlan['pairs'][number]): string {
  if (pair.login?.left)
    return `${pair.consumer} stayed on its live login ${pair.login.left.role}, which works`;
  return `${pair.consumer} kept its current file, which works (${pair.provider} still has its password)`;
}

/**
 * The second half of a switch between single and alternating, for pairs whose consumer end
 * is live: the old mode's provider files are removed now, or by the next rotation if baton
 * stopped first (harmless meanwhile: the consumer no longer reads them).
 */
export function switchedLines(finished: readonly RotationPlan['pairs'][number][]): string[] {
  return finished
    .filter((p) => p.retire && p.retire.length > 0)
    .map(
      (p) =>
        `  ${MARKS.info.glyph} ${p.key}: switched to ${p.credential}; ${p.consumer}'s file changed format, so baton removes ${p.retire!.map((f) => f.slice(f.lastIndexOf('/') + 1)).join(' and ')} on ${p.providerMachine} (were it stopped first, the next rotation of the pair removes ${p.retire!.length === 1 ? 'it' : 'them'}; harmless meanwhile).`,
    );
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
      return logHas(state.staged, holder.machine)
        ? { tone: 'ok', text: 'staged' }
        : { tone: 'busy', text: 'staging' };
    case 'prepare-failed':
      return { tone: 'info', text: 'staged files removed' };
    case 'committing':
    case 'commit-failed': {
      const done = holder.receives.filter((d) =>
        isCommitted(state.committed, `${holder.machine}\0${d.path}`),
      ).length;
      if (done === holder.receives.length) return { tone: 'ok', text: 'replaced' };
      return state.step === 'committing'
        ? { tone: 'busy', text: `committing ${done}/${holder.receives.length}` }
        : { tone: 'info', text: `still staged (${holder.receives.length - done})` };
    }
    case 'unstaging':
      return { tone: 'busy', text: 'removing staged files' };
    case 'rolling-back':
      return { tone: 'busy', text: 'rolling back what did not finish' };
    case 'rolled-back':
      return { tone: 'info', text: 'finished or rolled back (see the summary)' };
    case 'journal-failed': {
      const unstageFailure = state.unstageFailures.find((f) => f.machine === holder.machine);
      if (unstageFailure) return { tone: 'refused', text: unstageFailure.reason };
      return state.files === 'unstaged'
        ? { tone: 'info', text: 'staged files removed' }
        : holderStatus(state.before, holder);
    }
    case 'applying':
    case 'done': {
      const log = state.step === 'applying' ? state.applied : undefined;
      const applied = state.step === 'done' ? setOf(state.applied) : undefined;
      const waiting = holder.receives.filter(
        (d) => d.end === 'consumes' && !(log ? logHas(log, d.pair) : applied!.has(d.pair)),
      ).length;
      if (waiting === 0) return { tone: 'ok', text: 'replaced' };
      return state.step === 'applying'
        ? { tone: 'busy', text: `waiting for ${waiting} receipt${waiting === 1 ? '' : 's'}` }
        : { tone: 'info', text: `still staged (${waiting})` };
    }
    default:
      return { tone: 'ok', text: 'resolved' };
  }
}
