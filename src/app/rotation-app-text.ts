/**
 * The words of the app's part of a rotation (rotation-app.ts): the preview says, per pair,
 * whether the new credential will be tried from the consumer's machine and how its app will
 * take it; the summary says how each test login and reload went. A server's refusal, a
 * reload's command and its stderr come from outside: they reach the terminal through shown().
 */
import { shown } from '../outside-text.js';
import type { AppHooks, ReloadOutcome } from '../mesh/reload.js';
import type { PlannedPair, RotationPlan } from '../mesh/rotation-plan.js';
import type { AppResults, TestLoginRecord } from '../mesh/test-login.js';
import { MARKS } from './marks.js';
import type { Pooler } from '../mesh/inventory.js';
import { poolerAuthWords, poolerOfPair, poolerPreviewLines } from '../mesh/poolers.js';
import { confirmations, confirmedOf } from '../mesh/confirmed.js';
import { confirmedText } from './confirmed-text.js';
import type { Terminal } from './rotation-flow.js';

export function appPreviewLines(plan: RotationPlan, hooks: AppHooks | undefined): string[] {
  if (!hooks) return [];
  const lines = plan.pairs.map((pair) => `  test login ${pair.key}: ${testLoginWords(pair, hooks)}`);
  for (const pair of firstPairOfEachConsumer(plan)) lines.push(`  ${reloadText(pair, hooks)}`);
  // A pooler is a holder: named with what it holds, wherever the apps' part is listed.
  for (const line of poolerPreviewLines(plan)) lines.push(`  ${line}`);
  return lines;
}

/**
 * Per pair, in the plan's order: its test login, and its consumer's reload on the consumer's
 * first pair (a consumer of two providers is reloaded once). The Ink preview shows these under
 * each pair's line; the plain preview and `mesh plan` list the same words (appPreviewLines).
 */
export function appPreviewByPair(plan: RotationPlan, hooks: AppHooks | undefined): string[][] {
  if (!hooks) return plan.pairs.map(() => []);
  const first = new Set(firstPairOfEachConsumer(plan));
  // Under the pair's own line, so the pair's key is not said again.
  return plan.pairs.map((pair) => [
    `test login: ${testLoginWords(pair, hooks)}`,
    ...(first.has(pair) ? [reloadText(pair, hooks)] : []),
  ]);
}

/** Whether the new credential is tried from the consumer's machine before it moves (`connect:`). */
export function testLoginWords(pair: PlannedPair, hooks: AppHooks): string {
  const connect = hooks.connectOf(pair.provider);
  const login = pair.login?.role ?? pair.role;
  const through = connect?.pooler === undefined ? '' : ` (pooler ${connect.pooler})`;
  return connect
    ? `as ${login} to ${shown(connect.host)}:${connect.port}/${shown(connect.database)}${through}, from ${pair.consumerMachine}, before ${pair.consumer} moves; refused = not moved`
    : `none — ${pair.provider} has no connect:, so the new credential will NOT be tried from ${pair.consumerMachine} before ${pair.consumer} moves`;
}

/** How the pair's consumer's app will take the new credential: its `reload:`, or none. */
export function reloadText(pair: PlannedPair, hooks: AppHooks): string {
  const reload = hooks.reloadOf(pair.consumer);
  return reload
    ? `reload ${pair.consumer}: \`${shown(reload.command, 120)}\` on ${pair.consumerMachine} once its end is committed (at most ${Math.round(reload.timeoutMs / 1000)} s)`
    : `reload ${pair.consumer}: none — an app that reads its credential once keeps the old one until it is restarted`;
}

function firstPairOfEachConsumer(plan: RotationPlan): PlannedPair[] {
  const consumers = new Map<string, PlannedPair>();
  for (const pair of plan.pairs) if (!consumers.has(pair.consumer)) consumers.set(pair.consumer, pair);
  return [...consumers.values()];
}

function reloadLine(outcome: ReloadOutcome, pairs: readonly PlannedPair[]): string[] {
  const took = `${(outcome.durationMs / 1000).toFixed(1)} s`;
  const who = `reload of ${outcome.consumer} on ${outcome.machine}`;
  if (outcome.result === 'ok') return [`  ${MARKS.ok.glyph} ${who}: exit 0 after ${took}`];
  const how =
    outcome.result === 'timed-out'
      ? `TIMED OUT after ${took} (ended)`
      : outcome.reason
        ? `FAILED: ${shown(outcome.reason)}`
        : `FAILED: exit ${outcome.exitCode ?? '?'} after ${took}`;
  const alternating = pairs.filter((p) => outcome.pairs.includes(p.key) && p.login?.left);
  const consequence =
    alternating.length === outcome.pairs.length && alternating.length > 0
      ? `its app may still use ${alternating.map((p) => p.login!.left!.role).join(', ')}, which keeps working until the pair's next rotation`
      : `its app may still hold the OLD password, which the database no longer accepts for new connections`;
  return [
    `  ${MARKS.refused.glyph} ${who}: ${how}; the pair stays rotated (database and file agree), but ${consequence}.`,
    ...outcome.stderr.map((line) => `      stderr: ${shown(line)}`),
    `    Next: restart ${outcome.consumer}'s app on ${outcome.machine} by hand, and fix its reload: in the inventory; mesh status shows the pair until a reload succeeds.`,
  ];
}

/**
 * pgbouncer answers every failure of its own with SQLSTATE 08P01 ("SASL authentication failed",
 * "password authentication failed", "no such user"); PostgreSQL says 28P01 for a wrong password
 * and 08P01 only for a protocol violation. A refusal in those words came from a pooler, whose
 * auth_file (or auth_query) still has the old verifier: advice that named only pg_hba.conf made
 * "rotate again" fail for ever (issue 45).
 */
export function answeredByPooler(t: Pick<TestLoginRecord, 'code' | 'reason'>): boolean {
  return (
    t.code === '08P01' &&
    /SASL authentication failed|password authentication failed|no such user|pgbouncer/i.test(t.reason ?? '')
  );
}

/**
 * What to do after a refused test login, naming a pooler when one answered: the inventory's
 * pooler (`connect: { pooler: … }`) by name, its machine and its auth_file or auth_query; else a
 * pooler the inventory does not list, recognised by pgbouncer's words.
 */
export function refusedLoginAdvice(
  t: Pick<TestLoginRecord, 'code' | 'reason' | 'login' | 'machine' | 'pooler_step'>,
  pooler?: Pick<Pooler, 'name' | 'machine' | 'auth'>,
  /** The pair's provider machine: an auth_file pooler elsewhere is kept by baton, not by a provisioner. */
  providerMachine?: string,
): string {
  const keptByBaton =
    pooler?.auth.mode === 'auth_file' && providerMachine !== undefined && pooler.machine !== providerMachine;
  if (pooler && t.pooler_step)
    return `baton could not give pooler ${pooler.name} on ${pooler.machine} ${t.login}'s new verifier (the reason above), so no login was tried: see that ${providerMachine ?? "the provider's machine"}'s provisioner records its verifiers (baton's round 10 or later), that ${pooler.machine} is reachable and its ${poolerAuthWords(pooler)} there, and that the pooler's admin: user and password_file log in to its admin console; then rotate the pair again.`;
  if (pooler && (answeredByPooler(t) || t.code === '08P01')) {
    const fix =
      pooler.auth.mode === 'auth_query'
        ? `its auth_query could not give the new verifier: check that pgbouncer.ini's auth_user can still log in to PostgreSQL and that its auth_query reads ${t.login}'s row of pg_authid (or pg_shadow) as the database has it now`
        : keptByBaton
          ? `it refused ${t.login}'s new verifier although baton wrote it into its ${poolerAuthWords(pooler)} and its admin console answered RELOAD: check that pgbouncer.ini's auth_file is that file and that the inventory's admin: reaches this pgbouncer`
          : `its ${poolerAuthWords(pooler)} still holds ${t.login}'s old SCRAM verifier: start the provisioner on ${pooler.machine} with --pooler-auth-file ${shownAuthFile(pooler)} (it writes the database's own verifier there before each receipt), or give the line ${t.login}'s new verifier by hand (the database's own, salt included), then RELOAD on its admin console`;
    return `the server that answered is pooler ${pooler.name} on ${pooler.machine} (pgbouncer's SQLSTATE 08P01, where PostgreSQL says 28P01): ${fix}; then rotate the pair again.`;
  }
  if (answeredByPooler(t))
    return `the server that answered is a pooler the inventory does not list (pgbouncer's SQLSTATE 08P01, where PostgreSQL says 28P01): its auth_file still holds ${t.login}'s old SCRAM verifier, or its auth_query cannot read the new one. List it under poolers: (docs/inventory.md, "Poolers") with auth_query, or give it ${t.login}'s new verifier (its auth_file line, then RELOAD on its admin console), or point connect: at PostgreSQL itself, then rotate the pair again.`;
  return `let ${t.login} connect from ${t.machine} (pg_hba.conf, CONNECTION LIMIT, the network; a pooler in front of the database: its auth_file or auth_query), then rotate the pair again.`;
}

function shownAuthFile(pooler: Pick<Pooler, 'auth'>): string {
  return pooler.auth.mode === 'auth_file' ? shown(pooler.auth.file) : '';
}

export function appSummaryLines(state: Terminal): string[] {
  const app: AppResults | undefined = 'app' in state ? state.app : undefined;
  if (!app) return [];
  const lines = testLoginLines(
    app.testLogins,
    state.plan.pairs,
    (pair) =>
      pair.login?.left
        ? `${pair.consumer} stays on ${pair.login.left.role}, which works`
        : `${pair.consumer} keeps its old password: the pair was rolled back and the provisioner puts the old password back`,
    state.plan,
  );
  for (const r of app.reloads) lines.push(...reloadLine(r, state.plan.pairs));
  lines.push(...confirmedLines(state, app));
  return lines;
}

/**
 * How each test login went, in the words of the command that tried it (a rotation, `mesh
 * resume`, `mesh rollback`): `stays` says where a refused pair's consumer is left.
 */
export function testLoginLines(
  logins: readonly TestLoginRecord[],
  pairs: readonly PlannedPair[],
  stays: (pair: PlannedPair) => string,
  /** The plan's poolers, so a login refused by one names it (a later command without a plan passes none). */
  poolers?: Pick<RotationPlan, 'poolers'>,
): string[] {
  const byKey = new Map(pairs.map((p) => [p.key, p]));
  const lines: string[] = [];
  for (const t of logins) {
    const pair = byKey.get(t.pair);
    if (t.ok) {
      lines.push(
        `  ${MARKS.ok.glyph} test login ${t.pair}: ${t.login} accepted from ${t.machine} (${t.ms} ms)`,
      );
      continue;
    }
    lines.push(
      `  ${MARKS.refused.glyph} test login ${t.pair}: the new credential for ${t.login} was REFUSED from ${t.machine}${t.code ? ` (SQLSTATE ${shown(t.code)})` : ''}: ${shown(t.reason ?? 'no reason given')}`,
      `    ${pair?.consumer ?? t.pair} was NOT moved: ${pair ? stays(pair) : 'it keeps its old password'}. Next: ${refusedLoginAdvice(t, pair && poolers ? poolerOfPair(poolers, pair, t.pooler) : undefined, pair?.providerMachine)}`,
    );
  }
  return lines;
}

/**
 * Per pair this rotation finished, which steps were confirmed (confirmed.ts), from the same
 * marks the journal keeps: "applied" is said with what backs it, never alone.
 */
function confirmedLines(state: Terminal, app: AppResults): string[] {
  const finished = [
    ...('applied' in state ? state.applied : []),
    ...(state.step === 'rolled-back'
      ? state.results.filter((r) => r.result === 'finished').map((r) => r.pair)
      : []),
  ];
  const marks = confirmedOf({ applied: finished, test_logins: app.testLogins, reloads: app.reloads });
  return finished.map(
    (key) =>
      `  ${MARKS.info.glyph} ${key} confirmed: ${confirmedText(
        confirmations({
          journal: marks?.[key] ?? {},
          hasConnect: undefined,
          hasReload: undefined,
          filesAgreeNow: true,
          sessions: 'not-recorded',
        }),
        'rotation',
      )}`,
  );
}
