/**
 * `mesh rotate --revoke-previous [--end-sessions]` in the rotation: the one call after the
 * consumer-commit phase, the preview and summary lines, and what the journal marks. The revoke
 * runs only once EVERY consumer end of the rotation has been committed: before that a consumer
 * may still be on the login it would revoke, and a rotation that does not finish must leave
 * every consumer on a login that works.
 */
import { leftLogins, notRevoked, revokePrevious, sessionText, type PairRevoke } from '../mesh/revoke.js';
import type { ApplyWait, ConsumerCommitResult, MachineFailure } from '../mesh/delivery.js';
import type { JournalPair, JournalRecord } from '../mesh/journal.js';
import type { RotationPlan } from '../mesh/rotation-plan.js';
import { reasonOf, type TransportFor } from '../mesh/transport.js';
import { renderSaidBare } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import { MARKS } from './marks.js';
import type { Terminal } from './rotation-flow.js';

/** What the operator asked for with the flags. */
export interface RevokeRequest {
  readonly endSessions: boolean;
}

/**
 * The revoke, when it was asked for and every pair's consumer end is now committed (no commit
 * failure, none left unconfirmed, not stopped); undefined otherwise, and then nothing is revoked.
 */
export async function revokeAfterCommit(
  request: RevokeRequest | undefined,
  plan: Pick<RotationPlan, 'pairs'>,
  commitFailures: readonly MachineFailure[],
  consumers: ConsumerCommitResult,
  transportFor: TransportFor,
  wait: ApplyWait,
  /** Journals the targets before anything is staged (the `revoking` record: revokingRecord). */
  beforeStage?: (targets: ReadonlyMap<string, string>) => Promise<void>,
): Promise<readonly PairRevoke[] | undefined> {
  if (!request || wait.stop?.aborted) return undefined;
  if (
    commitFailures.length > 0 ||
    consumers.failures.length > 0 ||
    consumers.applied.length !== plan.pairs.length
  )
    return undefined;
  const logins = leftLogins(plan.pairs);
  if (logins.length === 0) return [];
  // The consumer ends are committed: whatever breaks here is a revoke not confirmed, never a rotation to roll back.
  return revokePrevious(logins, transportFor, {
    ...wait,
    endSessions: request.endSessions,
    ...(beforeStage ? { beforeStage } : {}),
  }).catch((error: unknown) =>
    logins.map((l) => notRevoked(l, `the revoke failed (${reasonOf(error)})`, request.endSessions)),
  );
}

/** The preview: per alternating pair, what will be revoked and what happens to its sessions. */
export function revokePreviewLines(plan: RotationPlan, request: RevokeRequest | undefined): string[] {
  if (!request) return [];
  const sessions = request.endSessions
    ? 'its open sessions are named and ended'
    : 'its open sessions are named, not ended (--end-sessions ends them)';
  return plan.pairs.map((p) => {
    if (p.credential !== 'alternating')
      return `  revoke ${p.key}: nothing (one login role: the rotation itself replaces its password).`;
    const left = p.login?.left?.role ?? `the login ${p.consumer} uses now`;
    return `  revoke ${p.key}: once every consumer end is committed, ${left} (the login ${p.consumer} leaves) gets a fresh password delivered nowhere; ${sessions}.`;
  });
}

/** The summary's revoke lines, after the rotation's own; nothing when no revoke was asked for. */
export function revokeSummaryLines(
  state: Terminal,
  request: RevokeRequest | undefined,
  s: Suggester = PLAIN_SUGGESTER,
): string[] {
  if (!request) return [];
  const revoked = state.step === 'done' ? state.revoked : undefined;
  if (!revoked) {
    // Every consumer end committed yet no revoke: the operator or a signal stopped it first, and a stop starts no new commit.
    const stopped = state.step === 'done' && state.applied.length === state.plan.pairs.length;
    return [
      stopped
        ? "Nothing was revoked: the rotation was stopped before the revoke began, so each consumer's previous login keeps its password."
        : "Nothing was revoked: the rotation did not commit every consumer end, so each consumer's previous login keeps its password.",
    ];
  }
  return revokeResultLines(request, revoked, s);
}

/**
 * How each revoke ended, for a rotation's summary and for the `mesh resume` that finished one;
 * a rotation that did not finish never revoked (`revoked` undefined) and says so.
 */
export function revokeResultLines(
  request: RevokeRequest | undefined,
  revoked: readonly PairRevoke[] | undefined,
  s: Suggester = PLAIN_SUGGESTER,
): string[] {
  if (!request) return [];
  if (!revoked)
    return [
      "Nothing was revoked: the rotation's consumer ends are not all live yet, so each consumer's previous login keeps its password until a resume finishes them.",
    ];
  if (revoked.length === 0)
    return ['Nothing was revoked: no pair of the rotation had a previous login to revoke.'];
  const lines: string[] = [];
  for (const r of revoked) {
    if (r.revoked) {
      lines.push(
        `  ${MARKS.ok.glyph} revoked ${r.login} (${r.pair}): its provisioner applied a fresh password delivered nowhere; its old password is refused.`,
      );
      if (r.endedSessions !== undefined)
        lines.push(`      ended ${r.endedSessions} open session(s) of ${r.login}.`);
      if (r.sessions.length > 0)
        lines.push(
          `      open sessions of ${r.login}${request.endSessions ? '' : ' (not ended; --end-sessions ends them)'}: ${r.sessions.map(sessionText).join('; ')}.`,
        );
      else if (r.endedSessions === undefined) lines.push(`      no open session of ${r.login}.`);
    } else {
      lines.push(`  ${MARKS.action.glyph} NOT revoked ${r.login} (${r.pair}): ${r.reason}.`);
      // Committed, not confirmed: nothing takes it back, so the provisioner applies it later. Before,
      // the summary said only "may still work", and a minute later the sessions were ended unannounced.
      if (r.armed)
        lines.push(
          `      The request stays ARMED: the fresh password (${r.target}) is live beside ${r.login}'s provider end, and when its provisioner next applies it, ${r.login}'s old password is refused${request.endSessions ? ` and its open sessions are ENDED (--end-sessions)` : ''}; until then the old password may still work. \`mesh status\` shows ${r.login} revoked once its receipt matches.`,
        );
      lines.push(`Next: ${renderSaidBare(s, r.next)}`);
    }
  }
  return lines;
}

/** The journal marks each pair whose left login was revoked. */
export function journalRevoked(
  pair: JournalPair,
  state: { readonly step: string; readonly revoked?: readonly PairRevoke[] },
): JournalPair {
  const mine = state.revoked?.find((r) => r.pair === pair.key);
  if (mine?.revoked) return { ...pair, revoked: true };
  return mine?.target === undefined ? pair : { ...pair, revoke_target: mine.target };
}

/**
 * The record a revoke writes before it stages anything (phase `revoking`): the rotation's record
 * with every pair finished — a revoke starts only then — and each left login's target, so what
 * a baton killed during the revoke left on the provider machine is read as the revoke's own.
 */
export function revokingRecord(record: JournalRecord, targets: ReadonlyMap<string, string>): JournalRecord {
  return {
    ...record,
    phase: 'revoking',
    applied: record.pairs.map((p) => p.key),
    pairs: record.pairs.map((p) => {
      const target = targets.get(p.key);
      return target === undefined ? p : { ...p, revoke_target: target };
    }),
  };
}
