/**
 * The rotation gate's preview, one line per pair: its window (or that it has none), and with
 * `--revoke-previous` the login it will revoke. A preview that counted "3 more windows like
 * it" listed none of them, and counted alternating pairs (which have no window) among them;
 * each pair is now named with what happens to it, and what does not fit says where the rest is.
 */
import type { PlannedPair, RotationPlan } from '../mesh/rotation-plan.js';
import type { Selector } from '../mesh/selector.js';
import type { RevokeRequest } from './rotation-revoke.js';

/** The login an alternating pair's consumer leaves: what `--revoke-previous` revokes. */
function leftLogin(pair: PlannedPair): string | undefined {
  return pair.credential === 'alternating' ? pair.login?.left?.role : undefined;
}

/** A pair with no window: alternating, or switched back to one role (its consumer keeps a login until its file moves). */
export function hasNoWindow(pair: PlannedPair): boolean {
  return pair.credential === 'alternating' || pair.leaves !== undefined;
}

/**
 * One pair's line. The first single pair says its window whole; a later one names its role and
 * says it has the same window (the sentence differs only by the names). A pair switching modes
 * (files to remove) keeps its whole sentence: it is not like any other.
 */
export function pairPreviewLine(
  pair: PlannedPair,
  revoke: RevokeRequest | undefined,
  firstSingle: boolean,
): string {
  if (pair.retire !== undefined && pair.retire.length > 0) return `${pair.key}: window ${pair.window}.`;
  if (pair.credential === 'alternating') {
    // Short, to fit one line at 80 columns: the consumer's logins say it alternates.
    const to = pair.login?.role ?? 'its other login';
    const left = leftLogin(pair);
    if (!left) return `${pair.key}: no window, ${pair.consumer} moves to ${to} (alternating).`;
    return `${pair.key}: no window, ${left} → ${to}; ${revoke ? `revokes ${left}` : `${left} keeps working`}.`;
  }
  if (pair.leaves !== undefined) return `${pair.key}: window ${pair.window}.`;
  if (firstSingle) return `${pair.key}: window ${pair.window}.`;
  return `${pair.key}: the same window, for ${pair.role} until ${pair.consumer}'s file is replaced.`;
}

/** Every pair's line, in the plan's order. */
export function pairPreviewLines(
  plan: Pick<RotationPlan, 'pairs'>,
  revoke: RevokeRequest | undefined,
): string[] {
  let seenSingle = false;
  return plan.pairs.map((pair) => {
    const first = !hasNoWindow(pair) && !seenSingle;
    if (!hasNoWindow(pair)) seenSingle = true;
    return pairPreviewLine(pair, revoke, first);
  });
}

/** `--revoke-previous` at the gate: the logins it revokes (each also named on its pair's line), and when. */
export function revokeGateLine(
  plan: Pick<RotationPlan, 'pairs'>,
  revoke: RevokeRequest | undefined,
): string | undefined {
  if (!revoke) return undefined;
  const logins = plan.pairs.flatMap((p) => leftLogin(p) ?? []);
  const sessions = revoke.endSessions
    ? 'open sessions are named and ended'
    : 'open sessions named, not ended (--end-sessions)';
  if (!plan.pairs.some((p) => p.credential === 'alternating'))
    return 'Revoke: no pair of this selection alternates, so nothing is revoked.';
  if (logins.length === 0)
    return 'Revoke: no pair has a previous login yet, so nothing is revoked (each alternating consumer moves to its first login).';
  // Each login is on its pair's line too ("revokes …"); past a handful the sentence counts them instead.
  const which = logins.length <= 4 ? listed(logins) : `the ${logins.length} logins marked "revokes"`;
  return `Revoke, once every consumer end is live: ${which} ${logins.length === 1 ? 'gets' : 'get'} a password delivered nowhere; ${sessions}.`;
}

/** The line that stands for the pairs not listed: how many of each kind, and where each is listed. */
export function foldedPairsLine(
  rest: readonly PlannedPair[],
  revoke: RevokeRequest | undefined,
  where: string,
): string {
  const none = rest.filter(hasNoWindow).length;
  const single = rest.length - none;
  // The revoked are alternating pairs, so among those with none: counted as part of them, not
  // beside them, so the kinds add up to the pairs folded.
  const revoked = revoke ? rest.filter((p) => leftLogin(p)).length : 0;
  const kinds = [
    single > 0 ? `${single} with a window` : '',
    none > 0 ? `${none} with none (alternating)${revoked > 0 ? `: ${revoked} of them to revoke` : ''}` : '',
  ].filter(Boolean);
  // The command ends the sentence: what follows a command in a line is taken as its arguments.
  return `…and ${rest.length} more pair${rest.length === 1 ? '' : 's'} (${kinds.join(', ')}), each listed by ${where}`;
}

/**
 * When the pairs' test logins and reloads do not all fit beside every pair's line: where they
 * are listed. The command ends the sentence, as in foldedPairsLine.
 */
export function appsFoldedLine(where: string): string {
  return `Each pair's test login (connect:) and reload (reload:) are listed by ${where}`;
}

function listed(items: readonly string[]): string {
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]!}`;
}

/** The words after `baton` that list every pair of a selection with its window: `mesh plan` and the selector's flags. */
export function planWords(selector: Selector): string {
  const flags = (s: Selector): string =>
    s.by === 'all'
      ? ''
      : s.by === 'union'
        ? s.of.map(flags).join(' ')
        : s.by === 'pair'
          ? `--pair ${s.provider}:${s.consumer}`
          : `--${s.by} ${s.name}`;
  return `mesh plan ${flags(selector)}`.trim();
}
