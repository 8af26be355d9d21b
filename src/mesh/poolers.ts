/**
 * A pooler is a holder (docs/inventory.md, "Poolers"; issue 45). pgbouncer checks a login's
 * password against a SCRAM verifier it holds itself — in its `auth_file`, or fetched from
 * PostgreSQL by its `auth_query` as the login happens — so a rotation that names only the
 * provider and the consumer can say `applied` while every new login through the pooler fails.
 * Here: what a rotation does with each pooler of its pairs, said in the preview, and the
 * plan-time refusal of what it cannot do yet.
 */
import path from 'node:path';
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import type { Inventory, Pooler } from './inventory.js';
import { mapBounded } from './map-bounded.js';
import { heartbeatPath, parseHeartbeat, type HeartbeatPooler } from './provisioner-heartbeat.js';
import type { PlannedPair, PlannedPooler, RotationPlan } from './rotation-plan.js';
import type { TransportFor } from './transport.js';

/** Where the pooler finds each login's verifier, in words (`auth_file /etc/…` or `auth_query`). */
export function poolerAuthWords(pooler: Pick<Pooler, 'auth'>): string {
  return pooler.auth.mode === 'auth_file' ? `auth_file ${shown(pooler.auth.file)}` : 'auth_query';
}

/**
 * An `auth_file` pooler beside the database is kept by the provisioner: after it sets a login's
 * verifier it writes that very verifier into the pooler's auth_file and sends RELOAD, before the
 * receipt (`provision postgres --pooler-auth-file`, src/provisioner/pooler-auth-file.ts) —
 * pgbouncer logs in to PostgreSQL with an auth_file verifier only when it is the server's own,
 * salt included. One on ANOTHER machine is kept by baton itself, in the test login's pooler step
 * (pooler-remote.ts): the verifier the provisioner recorded, then RELOAD as the inventory's admin
 * user. So, refused before anything is locked, read or sent (exit 2):
 * - a provider whose `connect:` does not go through the pooler: the test login is what proves
 *   the pooler took the new verifier. Without it, a pooler left on the old one would refuse
 *   every login through it under `applied` (issue 45: 1,912 and 426 failed logins);
 * - a pooler on another machine whose `admin:` names no `password_file`: baton could not RELOAD it.
 */
export function authFileRefusal(
  plan: Pick<RotationPlan, 'poolers' | 'pairs'>,
  inventory: Pick<Inventory, 'source' | 'providers'>,
): BatonError | undefined {
  const problems: string[] = [];
  for (const pooler of plan.poolers ?? []) {
    if (pooler.auth.mode !== 'auth_file') continue;
    const providers = new Set(plan.pairs.filter((p) => pooler.pairs.includes(p.key)).map((p) => p.provider));
    for (const name of providers) {
      const provider = inventory.providers.find((p) => p.name === name);
      if (!provider) continue;
      if (provider.connect?.pooler !== pooler.name)
        problems.push(
          `pooler "${pooler.name}" keeps ${name}'s logins in its ${poolerAuthWords(pooler)}, but ${name}'s connect: does not go through it: no test login would prove the pooler took a new verifier`,
        );
      else if (provider.machine !== pooler.machine && !pooler.admin?.passwordFile)
        problems.push(
          `pooler "${pooler.name}" keeps ${name}'s logins in its ${poolerAuthWords(pooler)} on ${pooler.machine}, away from ${name}'s provisioner on ${provider.machine}: baton gives it each new verifier itself and sends RELOAD on its admin console, but its admin: names no password_file`,
        );
    }
  }
  if (problems.length === 0) return undefined;
  return new BatonError('config', {
    what: `${problems.join('; ')}. Rotated so, a login through the pooler could be refused while the rotation says applied.`,
    where: inventory.source,
    next: "Set the provider's connect: to { pooler: <name> }, and for a pooler on another machine than its provider give its admin: { user: <its admin user>, password_file: <a 0600 file on this host with that user's password> } (docs/inventory.md, \"Poolers\"); for one beside the database start its provisioner with `--pooler-auth-file <the auth_file> --pooler-admin <host:port> --pooler-admin-user <user>`, the pooler's admin: as the inventory names it; or switch the pooler to auth_query (`auth_query: true`), which a pooler on any machine can use; or leave the pairs it serves out of this selection.",
    changed: 'Nothing was read or sent.',
  });
}

/** The preview's words for each pooler of the plan: what it holds and what the rotation does with it. */
export function poolerPreviewLines(
  plan: Pick<RotationPlan, 'poolers'> & Partial<Pick<RotationPlan, 'pairs'>>,
): string[] {
  return (plan.poolers ?? []).map((p) => {
    const providers = [
      ...new Set(
        (plan.pairs ?? []).filter((pair) => p.pairs.includes(pair.key)).map((pair) => pair.providerMachine),
      ),
    ];
    const away = providers.filter((m) => m !== p.machine);
    const does =
      p.auth.mode === 'auth_query'
        ? "asks PostgreSQL for each login's verifier as the login happens, so it holds the new one as soon as the database does: nothing is staged there and no RELOAD is needed"
        : away.length > 0
          ? `holds each login's verifier in its ${poolerAuthWords(p)}: after the receipt baton copies there the verifier ${away.join(', ')}'s provisioner recorded (never a password) and sends RELOAD on its admin console, then the test login through it proves it; a refused login puts the old line back`
          : `holds each login's verifier in its ${poolerAuthWords(p)}: ${p.machine}'s provisioner writes the new one there and sends RELOAD before the receipt, and the test login through it proves it`;
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

/** The admin user `provision postgres --pooler-admin-user` defaults to, and so the inventory's when `admin:` names none. */
export const DEFAULT_POOLER_ADMIN_USER = 'pgbouncer';

/** What the inventory says the provisioner beside an auth_file pooler must keep: its file and admin console. */
export function inventoryPoolerTarget(
  pooler: Pick<Pooler, 'auth' | 'admin' | 'listen'>,
): HeartbeatPooler | undefined {
  if (pooler.auth.mode !== 'auth_file') return undefined;
  const admin = pooler.admin ?? { user: DEFAULT_POOLER_ADMIN_USER, ...pooler.listen };
  return { auth_file: pooler.auth.file, admin: `${admin.host}:${admin.port}`, admin_user: admin.user };
}

/** The heartbeat text of each provider that keeps an auth_file pooler of the plan (undefined: none, or unread). */
export async function readPoolerKeepers(
  plan: Pick<RotationPlan, 'poolers' | 'pairs'>,
  transportFor: TransportFor,
  concurrency: number,
): Promise<Map<string, string | undefined>> {
  const keepers = new Map<string, { machine: string; dir: string }>();
  for (const pooler of plan.poolers ?? []) {
    if (pooler.auth.mode !== 'auth_file') continue;
    for (const pair of plan.pairs)
      if (pooler.pairs.includes(pair.key) && pair.providerMachine === pooler.machine)
        keepers.set(pair.provider, {
          machine: pair.providerMachine,
          dir: path.posix.dirname(pair.providerPath),
        });
  }
  const out = new Map<string, string | undefined>();
  await mapBounded([...keepers], concurrency, async ([provider, { machine, dir }]) => {
    // An unread machine was already named by the gate's own read: nothing more to say here.
    const [text] = await transportFor(machine)
      .readTexts([heartbeatPath(dir)])
      .catch(() => [undefined]);
    out.set(provider, text);
  });
  return out;
}

/**
 * The inventory's pooler and the provisioner that keeps its auth_file must name ONE pooler: the
 * inventory says which file and admin console a rotation relies on (the preview, the advice), the
 * provisioner's `--pooler-*` flags say where it writes and sends RELOAD. The inventory is the
 * source; the provisioner states its flags in its heartbeat, and a rotation is refused before
 * anything is generated when they differ (a RELOAD sent to another pgbouncer leaves this one on
 * the old verifier: every new login through it refused). A heartbeat that states no pooler (none
 * kept, a provisioner from before round 9, `--once`) is not compared: the test login through the
 * pooler still refuses such a rotation and rolls it back.
 */
export function poolerTargetRefusal(
  plan: Pick<RotationPlan, 'poolers' | 'pairs'>,
  inventory: Pick<Inventory, 'source' | 'providers'>,
  heartbeats: ReadonlyMap<string, string | undefined>,
): BatonError | undefined {
  const problems: string[] = [];
  const restarts: string[] = [];
  for (const pooler of plan.poolers ?? []) {
    const want = inventoryPoolerTarget(pooler);
    if (!want) continue;
    for (const [provider, text] of heartbeats) {
      if (!plan.pairs.some((p) => p.provider === provider && pooler.pairs.includes(p.key))) continue;
      const stated = text === undefined ? undefined : parseHeartbeat(text)?.pooler;
      if (!stated || samePoolerTarget(stated, want)) continue;
      const machine = inventory.providers.find((p) => p.name === provider)?.machine ?? pooler.machine;
      problems.push(
        `pooler "${pooler.name}" is, by the inventory, ${targetWords(want)}, but ${provider}'s provisioner on ${machine} states (its heartbeat) that it keeps ${targetWords(stated)}`,
      );
      restarts.push(
        `restart ${provider}'s provisioner on ${machine} with \`--pooler-auth-file ${shown(want.auth_file)} --pooler-admin ${shown(want.admin)} --pooler-admin-user ${shown(want.admin_user)}\` (its other flags as they are)`,
      );
    }
  }
  if (problems.length === 0) return undefined;
  return new BatonError('config', {
    what: `${problems.join('; ')}. Rotated so, the new verifier would go to one pooler and the test login through the other could be refused.`,
    where: inventory.source,
    next: `Make both name the pooler the consumers log in through: correct the pooler's auth_file: or admin: { user, host, port } in the inventory, or ${restarts.join(', and ')}. Then rotate again.`,
    changed: 'Nothing was generated or sent.',
  });
}

function samePoolerTarget(a: HeartbeatPooler, b: HeartbeatPooler): boolean {
  return a.auth_file === b.auth_file && a.admin === b.admin && a.admin_user === b.admin_user;
}

/** Both sides through shown(): the heartbeat is the machine's text, the inventory the operator's file. */
function targetWords(t: HeartbeatPooler): string {
  return `auth_file ${shown(t.auth_file)} with RELOAD as ${shown(t.admin_user)} on ${shown(t.admin)}`;
}
