/**
 * A pooler is a holder (docs/inventory.md, "Poolers"; issue 45). pgbouncer checks a login's
 * password against a SCRAM verifier it holds itself — in its `auth_file`, or fetched from
 * PostgreSQL by its `auth_query` as the login happens — so a rotation that names only the
 * provider and the consumer can say `applied` while every new login through the pooler fails.
 * Here: what a rotation does with each pooler of its pairs, said in the preview, and the
 * plan-time refusal of what it cannot do yet.
 */
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import type { Pooler } from './inventory.js';
import type { PlannedPair, PlannedPooler, RotationPlan } from './rotation-plan.js';

/** Where the pooler finds each login's verifier, in words (`auth_file /etc/…` or `auth_query`). */
export function poolerAuthWords(pooler: Pick<Pooler, 'auth'>): string {
  return pooler.auth.mode === 'auth_file' ? `auth_file ${shown(pooler.auth.file)}` : 'auth_query';
}

/**
 * An `auth_file` pooler of a selected pair is refused before anything is locked, read or sent
 * (exit 2). Rotating it needs two things this baton does not have yet: a machine-side write of
 * a file of many lines (the agent stages one line per file: docs/agent-protocol.md), and the
 * provisioner setting the very verifier the file holds (pgbouncer logs in to PostgreSQL with an
 * auth_file verifier only when it is byte-identical to the server's, salt included; the
 * provisioner salts at random). Rotated anyway, every login through the pooler after the
 * rotation is refused (issue 45: 1,912 and 426 failed logins under `5 applied`).
 */
export function authFileRefusal(plan: Pick<RotationPlan, 'poolers'>, source: string): BatonError | undefined {
  const fileBound = (plan.poolers ?? []).filter((p) => p.auth.mode === 'auth_file');
  if (fileBound.length === 0) return undefined;
  const named = fileBound.map(
    (p) =>
      `pooler "${p.name}" on ${p.machine} keeps the verifiers of ${listed(p.pairs)} in its ${poolerAuthWords(p)}`,
  );
  return new BatonError('config', {
    what: `${named.join('; ')}. baton cannot rewrite a pgbouncer auth_file yet (its machine-side agent writes one-line files only, and pgbouncer logs in to PostgreSQL with an auth_file verifier only when it is the database's own, salt included): rotated, every new login through ${fileBound.length === 1 ? 'that pooler' : 'those poolers'} would be refused.`,
    where: source,
    next: `Switch ${fileBound.map((p) => `"${p.name}"`).join(', ')} to auth_query (pgbouncer.ini: auth_user and auth_query reading pg_authid; inventory: \`auth_query: true\` in place of auth_file:), then rotate; or leave the pairs it serves out of this selection.`,
    changed: 'Nothing was read or sent.',
  });
}

/** The preview's words for each pooler of the plan: what it holds and what the rotation does with it. */
export function poolerPreviewLines(plan: Pick<RotationPlan, 'poolers'>): string[] {
  return (plan.poolers ?? []).map((p) => {
    const does =
      p.auth.mode === 'auth_query'
        ? "asks PostgreSQL for each login's verifier as the login happens, so it holds the new one as soon as the database does: nothing is staged there and no RELOAD is needed"
        : `holds each login's verifier in its ${poolerAuthWords(p)}`;
    return `pooler ${p.name} (pgbouncer on ${p.machine}, listening on ${shown(p.listen.host)}:${p.listen.port}) for ${listed(p.pairs)}: ${does}`;
  });
}

/** The pooler of the plan that holds `pair`'s logins and answers its test login, if any. */
export function poolerOfPair(
  plan: Pick<RotationPlan, 'poolers'>,
  pair: Pick<PlannedPair, 'key'>,
  through: string | undefined,
): PlannedPooler | undefined {
  if (through === undefined) return undefined;
  return (plan.poolers ?? []).find((p) => p.name === through && p.pairs.includes(pair.key));
}

function listed(items: readonly string[]): string {
  if (items.length <= 3) return items.join(', ');
  return `${items.slice(0, 3).join(', ')} and ${items.length - 3} more pair${items.length === 4 ? '' : 's'}`;
}
