/**
 * The database end of the provisioner: one connection per cycle that has work, as the
 * superuser whose password the mesh delivered to a file.
 *
 * The password file is read at EACH connection and the value is dropped with the connection:
 * the mesh may rotate the superuser too, and a password captured at start-up would go stale
 * exactly then. It is never taken from argv or the environment — `docker inspect` and `ps`
 * print those (mesh seed) — and because it is always passed explicitly, pg never falls back to
 * PGPASSWORD or a .pgpass file.
 */
import { CENSUS_SQL, type ActiveSession } from './session-census.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Client as PgClient } from 'pg';
import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import { RECEIPT_SESSIONS_MAX, type LoginSession } from '../mesh/digest.js';
import { conninfoLogin, parseConninfo } from '../mesh/alternating.js';
import { describeFsError } from './delivered-credentials.js';

export type RoleOutcome = 'created' | 'updated';

/** pg's own quoting (a Client has it, and so has the module). */
export type SqlEscape = Pick<PgClient, 'escapeIdentifier' | 'escapeLiteral'>;

/**
 * `CREATE/ALTER ROLE … PASSWORD` is a utility statement and takes no bind parameters, so the
 * role and the verifier are quoted by pg's own escapeIdentifier / escapeLiteral even though
 * both were validated already: a validation slip can never become SQL. A backslash in the
 * verifier (or a NUL in either) is refused rather than sent as an E'' literal whose meaning
 * hangs on `standard_conforming_strings`: a verifier never has one.
 */
export function passwordStatement(
  kind: 'create' | 'alter',
  role: string,
  verifier: string,
  sql: SqlEscape,
  options: { readonly clearExpiry?: boolean } = {},
): string {
  if (/[\\\0]/.test(verifier) || role.includes('\0'))
    throw new Error('a role or verifier here never contains a backslash or NUL');
  const password = `PASSWORD ${sql.escapeLiteral(verifier)}`;
  // LOGIN on ALTER too: a role someone set NOLOGIN is put back to what was delivered, and an
  // expired validity is lifted, or the consumer's password would still be refused.
  return kind === 'create'
    ? `CREATE ROLE ${sql.escapeIdentifier(role)} LOGIN ${password}`
    : `ALTER ROLE ${sql.escapeIdentifier(role)} LOGIN ${password}${options.clearExpiry ? " VALID UNTIL 'infinity'" : ''}`;
}

/** One role's error inside a batch, as setPassword would have thrown it. */
function roleError(error: unknown, lockMs: number, statementMs: number): Error {
  const code = (error as { code?: string }).code;
  if (code === '55P03')
    return new RoleSkipped(`another transaction holds a lock on it (waited ${lockMs} ms)`);
  if (code === '57014') return new RoleSkipped(`its statement ran longer than ${statementMs} ms`);
  // 42710 duplicate_object: created by someone else since the check; set next cycle.
  if (code === '42710') return new RoleSkipped('it was created by someone else meanwhile');
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * Roles' statements per simple query in a batch: small enough that the first go in while later
 * verifiers are still being derived, large enough that 100 roles are a handful of round trips.
 */
const STATEMENTS_PER_QUERY = 20;

/** How long ending one session may wait for its backend to exit (below the statement's own timeout). */
const END_SESSION_WAIT_MS = 2_000;

type Query = (sql: string, values?: unknown[]) => Promise<{ rows: unknown[] }>;

function isScramVerifier(verifier: string | null): verifier is string {
  return verifier !== null && verifier.startsWith('SCRAM-SHA-256$');
}

/**
 * Creates `to` as a LOGIN role holding `from`'s stored SCRAM verifier, so it accepts whatever
 * password `from` accepts — without the password being known here. PostgreSQL stores a
 * password given in verifier form as is.
 */
export async function copyVerifier(
  query: Query,
  sql: SqlEscape,
  fromVerifier: string,
  to: string,
): Promise<void> {
  if (!isScramVerifier(fromVerifier)) throw new Error('only a SCRAM-SHA-256 verifier is copied');
  await query(passwordStatement('create', to, fromVerifier, sql));
}

/** Membership in the group and `SET role` to it at login, so what the login creates is owned by the group. */
async function joinGroup(query: Query, sql: SqlEscape, login: string, group: string): Promise<void> {
  await query(`GRANT ${sql.escapeIdentifier(group)} TO ${sql.escapeIdentifier(login)}`);
  await query(`ALTER ROLE ${sql.escapeIdentifier(login)} SET role = ${sql.escapeLiteral(group)}`);
}

/** What the database holds for a role, read from `pg_authid` (superuser only). */
export interface StoredRole {
  readonly canLogin: boolean;
  /** `rolvaliduntil` is in the past. */
  readonly expired: boolean;
  /** `rolpassword`: a secret-equivalent, only ever compared or hashed, never logged or stored. */
  readonly verifier: string | null;
  /** The roles it is a direct member of (a login's group is checked too). */
  readonly memberOf?: readonly string[];
}

/** What `setLogin` applies: one login of an alternating pair, in one transaction. */
export interface LoginApply {
  readonly group: string;
  readonly login: string;
  /** The pair's other login: created with the group's stored verifier when a single pair is switched. */
  readonly other: string;
  readonly verifier: string;
  /** A plain file for the group is delivered too (a pair being switched): the group keeps its LOGIN. */
  readonly groupLogin: boolean;
}

export interface LoginOutcome {
  readonly outcome: RoleOutcome;
  /** The other login was created with the group's stored verifier. */
  readonly copied: boolean;
}

/** What a cycle needs from the database; a fake implements it in the unit tests. */
export interface RoleDatabase {
  /**
   * In a transaction of its own, with its own lock and statement timeouts: `CREATE ROLE …
   * LOGIN PASSWORD` when the role is missing, else `ALTER ROLE … LOGIN PASSWORD`. Throws
   * RoleSkipped when a timeout ended it (the role is left as it was).
   */
  setPassword(role: string, verifier: string): Promise<RoleOutcome>;
  /**
   * Many roles' passwords in ONE transaction (one commit), a savepoint per role with the same
   * timeouts: a role refused or skipped is rolled back to its savepoint and answered with its
   * error (RoleSkipped for a timeout), the others still go in. Rejects (nothing applied) when
   * the transaction itself fails. Absent: the provisioner sets them one by one. A verifier may
   * still be computing (a promise): the transaction opens and the first roles go in while the
   * rest are derived; one that resolves to undefined is not sent (its file had a problem).
   */
  setPasswords?(
    roles: readonly { readonly role: string; readonly verifier: string | Promise<string | undefined> }[],
  ): Promise<ReadonlyMap<string, RoleOutcome | Error>>;
  /**
   * In one transaction, with the same timeouts: the group exists (NOLOGIN unless
   * `groupLogin`), the login exists with LOGIN and `verifier`, is a member of the group and
   * has `SET role` to it at login. When neither login existed and the group is a LOGIN role
   * with a SCRAM verifier, the other login is created with that verifier copied.
   */
  setLogin(apply: LoginApply): Promise<LoginOutcome>;
  /** `ALTER ROLE … NOLOGIN` in a transaction of its own; false when it was missing or NOLOGIN already. */
  disableLogin(role: string): Promise<boolean>;
  /** The open sessions of a login (at most RECEIPT_SESSIONS_MAX), never this connection's. */
  sessions(login: string): Promise<LoginSession[]>;
  /** Ends the open sessions of a login (never this connection's); how many were ended. */
  endSessions(login: string): Promise<number>;
  /** The roles among `roles` that exist, with what the database holds for each. */
  inspect(roles: readonly string[]): Promise<ReadonlyMap<string, StoredRole>>;
  /**
   * A digest, computed by the server, of every role's state, verifier and memberships: equal
   * between two calls only if no role changed in between. Lets an idle poll skip the check of
   * every role (thousands of rows) when nothing changed. Absent: every cycle checks all.
   */
  fingerprint?(): Promise<string>;
  /** app-truth: every client session of these logins now (session-census.ts). */
  activity?(logins: readonly string[]): Promise<ActiveSession[]>;
  close(): Promise<void>;
}

/** Opens a connection for one cycle; rejects with a BatonError that says why it could not. */
export type ConnectRoleDatabase = (signal?: AbortSignal) => Promise<RoleDatabase>;

export interface PostgresTarget {
  readonly host: string;
  readonly port: number;
  readonly database: string;
  readonly superuser: string;
  /** The file holding the superuser's password (delivered by the mesh). */
  readonly superuserFile: string;
  /**
   * The provider end of the superuser's own pair (`provides/<provider>/<superuser>`), tried
   * when the database refuses `superuserFile`: once the provisioner has applied a rotation of
   * its own superuser, the database holds the provider end's password until the consumer end
   * is flipped after the receipt — and after a crash between ALTER ROLE and the receipt, it
   * holds it for good. Without this the provisioner would lock itself out.
   */
  readonly providerEndFile?: string;
  /**
   * What a roll-back of the superuser's own pair took away (`rolledBackPath` of the provider
   * end), tried last: the provisioner may have set that password and died before its receipt,
   * and after the roll-back no other file holds it. Logged in with it, the cycle applies the
   * live (previous) password again, and the files work once more.
   */
  readonly rolledBackFile?: string;
}

/** Thrown by `setPassword` when the connection itself failed: the remaining roles must wait. */
export class ConnectionLost extends Error {}

/**
 * Thrown by `setPassword` when the role's own timeout ended its statement (another transaction
 * holds a lock on the role, or the statement was slow): this role waits for the next cycle,
 * the others go on, and the loop does not back off.
 */
export class RoleSkipped extends Error {}

export interface RoleTimeouts {
  /** `lock_timeout` of each role's transaction (default 1 s). */
  readonly lockTimeoutMs?: number;
  /** `statement_timeout` of each role's transaction (default 10 s, below the client's 30 s). */
  readonly statementTimeoutMs?: number;
}

export function postgresRoles(
  target: PostgresTarget,
  options: RoleTimeouts & {
    readonly onStatement?: (sql: string) => void;
    readonly log?: (line: string) => void;
  } = {},
): ConnectRoleDatabase {
  const lockMs = Math.max(1, Math.round(options.lockTimeoutMs ?? 1_000));
  const statementMs = Math.max(1, Math.round(options.statementTimeoutMs ?? 10_000));
  return async (signal) => {
    let lost: Error | undefined;
    const client = await openSession(
      target,
      'baton-provision',
      (error) => (lost = error),
      (file) =>
        options.log?.(
          `logged in as ${target.superuser} with the rolled-back password (${file}); putting the previous one back`,
        ),
    );
    const abort = () => void client.end().catch(() => undefined);
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) abort();
    const query = async (sql: string, values?: unknown[]) => {
      if (lost) throw new ConnectionLost(`the connection was lost (${messageOf(lost)})`);
      options.onStatement?.(sql);
      try {
        return await client.query(sql, values);
      } catch (error) {
        // `lost` is set by the client's error callback while the query awaited.
        if (isConnectionError(error) || (lost as Error | undefined))
          throw new ConnectionLost(`the connection was lost (${messageOf(error)})`);
        throw error;
      }
    };
    /**
     * One transaction with the role's own lock and statement timeouts: a role another
     * transaction holds (or a slow catalog) costs this role one cycle instead of holding every
     * other role back until the client gives up. Retried once on a role created by someone else
     * between the check and the CREATE.
     */
    const inTransaction = async <T>(run: () => Promise<T>): Promise<T> => {
      for (let attempt = 0; ; attempt++) {
        await query('BEGIN');
        try {
          await query(`SET LOCAL lock_timeout = ${lockMs}`);
          await query(`SET LOCAL statement_timeout = ${statementMs}`);
          const result = await run();
          await query('COMMIT');
          return result;
        } catch (error) {
          if (error instanceof ConnectionLost) throw error;
          await query('ROLLBACK').catch(() => undefined);
          const code = (error as { code?: string }).code;
          // 42710 duplicate_object: created by someone else since the check; set its password instead.
          if (code === '42710' && attempt === 0) continue;
          if (code === '55P03')
            throw new RoleSkipped(`another transaction holds a lock on it (waited ${lockMs} ms)`);
          if (code === '57014') throw new RoleSkipped(`its statement ran longer than ${statementMs} ms`);
          throw error;
        }
      }
    };
    const rolesNamed = async (names: readonly string[]) => {
      const found = await query(
        'SELECT rolname, rolcanlogin, rolvaliduntil IS NOT NULL AND rolvaliduntil <= now() AS expired, rolpassword FROM pg_catalog.pg_authid WHERE rolname = ANY($1)',
        [names],
      );
      const rows = found.rows as {
        rolname: string;
        rolcanlogin: boolean;
        expired: boolean;
        rolpassword: string | null;
      }[];
      return new Map(rows.map((r) => [r.rolname, r]));
    };
    const sessionsOf = async (login: string): Promise<LoginSession[]> => {
      const result = await query(
        `SELECT pid, application_name, client_addr::text AS client_addr, backend_start FROM pg_catalog.pg_stat_activity
          WHERE usename = $1 AND pid <> pg_catalog.pg_backend_pid() ORDER BY backend_start, pid LIMIT ${RECEIPT_SESSIONS_MAX}`,
        [login],
      );
      return (
        result.rows as {
          pid: number;
          application_name: string | null;
          client_addr: string | null;
          backend_start: Date | null;
        }[]
      ).map((r) => ({
        pid: r.pid,
        application_name: r.application_name ?? '',
        client_addr: r.client_addr,
        backend_start: r.backend_start ? r.backend_start.toISOString() : '',
      }));
    };
    return {
      async setPassword(role, verifier) {
        return inTransaction(async () => {
          const row = (await rolesNamed([role])).get(role);
          await query(
            passwordStatement(row ? 'alter' : 'create', role, verifier, client, {
              clearExpiry: row?.expired === true,
            }),
          );
          return row ? 'updated' : 'created';
        });
      },
      async setPasswords(roles) {
        const outcomes = new Map<string, RoleOutcome | Error>();
        if (roles.length === 0) return outcomes;
        const begin = () =>
          query(`BEGIN; SET LOCAL lock_timeout = ${lockMs}; SET LOCAL statement_timeout = ${statementMs}`);
        const statementOf = (row: { expired: boolean } | undefined, role: string, verifier: string) =>
          passwordStatement(row ? 'alter' : 'create', role, verifier, client, {
            clearExpiry: row?.expired === true,
          });
        // Settled even if the batch fails half-way: no verifier's rejection goes unhandled.
        const ready = Promise.all(roles.map(async ({ verifier }) => verifier));
        ready.catch(() => undefined);
        // First the roles' statements in a few simple queries, sent as their verifiers are ready
        // (the key derivations overlap the database's work), the last with the COMMIT. PostgreSQL
        // (≥ 13) applies statement_timeout to each statement of a query, and the first error
        // aborts the transaction, so nothing is half-applied.
        await begin();
        try {
          const rows = await rolesNamed(roles.map((r) => r.role));
          try {
            for (let at = 0; at < roles.length; at += STATEMENTS_PER_QUERY) {
              const group = roles.slice(at, at + STATEMENTS_PER_QUERY);
              const verifiers = await Promise.all(group.map(async ({ verifier }) => verifier));
              const statements = group.flatMap(({ role }, i) => {
                const verifier = verifiers[i];
                return verifier === undefined ? [] : [statementOf(rows.get(role), role, verifier)];
              });
              if (at + STATEMENTS_PER_QUERY >= roles.length) statements.push('COMMIT');
              if (statements.length > 0) await query(statements.join('; '));
            }
            for (const { role } of roles) outcomes.set(role, rows.has(role) ? 'updated' : 'created');
            const verifiers = await ready;
            roles.forEach(({ role }, i) => {
              if (verifiers[i] === undefined) outcomes.delete(role);
            });
            return outcomes;
          } catch (error) {
            if (error instanceof ConnectionLost) throw error;
            // One role was refused (or the COMMIT): nothing was applied. Each role goes again
            // behind its own savepoint, so the one refused is answered with its error and the
            // others still go in.
            await query('ROLLBACK');
          }
          const verifiers = await ready;
          await begin();
          const again = await rolesNamed(roles.map((r) => r.role));
          for (const [i, { role }] of roles.entries()) {
            const verifier = verifiers[i];
            if (verifier === undefined) continue;
            const row = again.get(role);
            try {
              // One round trip per role: the savepoint, the statement and its release in one
              // simple query (no parameters: passwordStatement quotes everything itself).
              await query(
                `SAVEPOINT baton_role; ${statementOf(row, role, verifier)}; RELEASE SAVEPOINT baton_role`,
              );
              outcomes.set(role, row ? 'updated' : 'created');
            } catch (error) {
              if (error instanceof ConnectionLost) throw error;
              await query('ROLLBACK TO SAVEPOINT baton_role');
              outcomes.set(role, roleError(error, lockMs, statementMs));
            }
          }
          await query('COMMIT');
          return outcomes;
        } catch (error) {
          if (!(error instanceof ConnectionLost)) await query('ROLLBACK').catch(() => undefined);
          throw error;
        }
      },
      async setLogin({ group, login, other, verifier, groupLogin }) {
        return inTransaction(async () => {
          const rows = await rolesNamed([group, login, other]);
          const groupRow = rows.get(group);
          if (!groupRow) await query(`CREATE ROLE ${client.escapeIdentifier(group)} NOLOGIN`);
          // Switching a single pair: its consumer still holds R's password, so the other login
          // starts out valid with it — exactly as after any alternating rotation.
          let copied = false;
          if (
            !rows.has(login) &&
            !rows.has(other) &&
            groupRow?.rolcanlogin &&
            isScramVerifier(groupRow.rolpassword)
          ) {
            await copyVerifier(query, client, groupRow.rolpassword, other);
            await joinGroup(query, client, other, group);
            copied = true;
          }
          const row = rows.get(login);
          await query(
            passwordStatement(row ? 'alter' : 'create', login, verifier, client, {
              clearExpiry: row?.expired === true,
            }),
          );
          await joinGroup(query, client, login, group);
          if (!groupLogin && groupRow?.rolcanlogin)
            await query(`ALTER ROLE ${client.escapeIdentifier(group)} NOLOGIN`);
          return { outcome: row ? 'updated' : 'created', copied } as const;
        });
      },
      async disableLogin(role) {
        return inTransaction(async () => {
          const row = (await rolesNamed([role])).get(role);
          if (!row?.rolcanlogin) return false;
          await query(`ALTER ROLE ${client.escapeIdentifier(role)} NOLOGIN`);
          return true;
        });
      },
      sessions: sessionsOf,
      // app-truth: the session census's one query (session-census.ts).
      async activity(logins) {
        const result = await query(CENSUS_SQL, [logins]);
        return (
          result.rows as {
            login: string;
            pid: number;
            backend_start: Date | null;
            client_addr: string | null;
            application_name: string | null;
          }[]
        ).map((r) => ({
          login: r.login,
          pid: r.pid,
          backendStart: r.backend_start ? r.backend_start.toISOString() : '',
          clientAddr: r.client_addr,
          applicationName: r.application_name ?? '',
        }));
      },
      async endSessions(login) {
        // Never this session: the provisioner logs in as the superuser, and the filter says so.
        // With a timeout the call waits until each backend is gone (PostgreSQL 14+), so the
        // sessions listed right after no longer show the ones just ended.
        const result = await query(
          `SELECT count(*) FILTER (WHERE pg_catalog.pg_terminate_backend(pid, ${END_SESSION_WAIT_MS}))::int AS ended FROM pg_catalog.pg_stat_activity
            WHERE usename = $1 AND pid <> pg_catalog.pg_backend_pid()`,
          [login],
        );
        return (result.rows[0] as { ended: number }).ended;
      },
      async inspect(roles) {
        const result = await query(
          `SELECT rolname, rolcanlogin, rolvaliduntil IS NOT NULL AND rolvaliduntil <= now() AS expired, rolpassword,
                  ARRAY(SELECT g.rolname FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles g ON g.oid = m.roleid WHERE m.member = pg_authid.oid)::text[] AS member_of
             FROM pg_catalog.pg_authid WHERE rolname = ANY($1)`,
          [roles],
        );
        const rows = result.rows as {
          rolname: string;
          rolcanlogin: boolean;
          expired: boolean;
          rolpassword: string | null;
          member_of: string[];
        }[];
        return new Map(
          rows.map((r) => [
            r.rolname,
            { canLogin: r.rolcanlogin, expired: r.expired, verifier: r.rolpassword, memberOf: r.member_of },
          ]),
        );
      },
      async fingerprint() {
        const result = await query(
          `SELECT md5(coalesce((SELECT string_agg(oid::text || ':' || rolname || ':' || rolcanlogin::text || ':' || coalesce(rolpassword, '') || ':' || coalesce(rolvaliduntil::text, ''), ',' ORDER BY oid) FROM pg_catalog.pg_authid), ''))
               || md5(coalesce((SELECT string_agg(roleid::text || ':' || member::text, ',' ORDER BY roleid, member) FROM pg_catalog.pg_auth_members), '')) AS fingerprint`,
        );
        return (result.rows[0] as { fingerprint: string }).fingerprint;
      },
      async close() {
        signal?.removeEventListener('abort', abort);
        await client.end().catch(() => undefined);
      },
    };
  };
}

/**
 * One provisioner per provider: a session-level advisory lock keyed by the provider's name,
 * held for as long as the provisioner runs. Two provisioners applying the same roles would
 * race each other's `ALTER ROLE` ("tuple concurrently updated") and their receipts.
 */
export interface ProviderLock {
  /** Takes the lock (or confirms it is still held); otherwise says who holds it. Throws a BatonError when the database cannot be reached. */
  acquire(): Promise<{ readonly held: true } | { readonly held: false; readonly holder: string }>;
  release(): Promise<void>;
}

/** The lock's first key: "btnp", so baton's locks do not collide with an application's. */
const PROVIDER_LOCK_CLASS = 0x62746e70;

export function providerLockKey(provider: string): readonly [number, number] {
  return [
    PROVIDER_LOCK_CLASS,
    createHash('sha256').update(`baton-provision:${provider}`).digest().readUInt32BE(0) & 0x7fffffff,
  ];
}

export function providerLock(target: PostgresTarget, provider: string): ProviderLock {
  const [classKey, providerKey] = providerLockKey(provider);
  // What the other provisioner sees of this one: application_name is limited to 63 bytes.
  const name = Buffer.from(`baton-provision ${provider} pid ${process.pid} on ${hostname()}`)
    .subarray(0, 63)
    .toString('utf8')
    .replace(/\uFFFD+$/, '');
  let session: PgClient | undefined;
  let held = false;
  const drop = () => {
    const old = session;
    session = undefined;
    held = false;
    void old?.end().catch(() => undefined);
  };
  return {
    async acquire() {
      if (held && session) {
        try {
          await session.query('SELECT 1');
          return { held: true };
        } catch {
          drop();
        }
      }
      if (!session) {
        const opened = await openSession(target, name, () => {
          if (session === opened) drop();
        });
        session = opened;
        opened.on('end', () => {
          if (session === opened) drop();
        });
      }
      try {
        const result = await session.query(
          'SELECT pg_catalog.pg_try_advisory_lock($1::int4, $2::int4) AS held',
          [classKey, providerKey],
        );
        held = (result.rows[0] as { held: boolean }).held;
        if (held) return { held: true };
        const holders = await session.query(
          `SELECT a.pid, a.application_name, a.client_addr::text AS addr, a.backend_start
             FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::int8::oid AND l.objid = $2::int8::oid AND l.objsubid = 2
              AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())`,
          [classKey, providerKey],
        );
        const row = holders.rows[0] as
          | { pid: number; application_name: string; addr: string | null; backend_start: Date | null }
          | undefined;
        return {
          held: false,
          holder: row
            ? `"${row.application_name || 'unnamed'}" (server pid ${row.pid}, from ${row.addr ?? 'a local socket'}${row.backend_start ? `, connected since ${row.backend_start.toISOString()}` : ''})`
            : 'another session (it let go while being looked up)',
        };
      } catch (error) {
        drop();
        throw error instanceof BatonError ? error : connectError(error, target, whereOf(target));
      }
    },
    async release() {
      const old = session;
      session = undefined;
      held = false;
      // Ending the session releases a session-level advisory lock.
      await old?.end().catch(() => undefined);
    },
  };
}

function whereOf(target: PostgresTarget): string {
  return `postgresql://${target.superuser}@${target.host}:${target.port}/${target.database}`;
}

/**
 * A connected client as the superuser, trying the provider end of its own pair when the
 * database refuses the consumer end's password. `onLost` hears an idle socket's error, which
 * pg emits rather than throws: unhandled it would crash a service that must outlive the
 * database going down.
 */
async function openSession(
  target: PostgresTarget,
  applicationName: string,
  onLost: (error: Error) => void,
  onRolledBack?: (file: string) => void,
): Promise<PgClient> {
  const { default: pg } = await import('pg');
  const where = whereOf(target);
  let chosen: PgClient | undefined;
  const open = async (password: string, user = target.superuser): Promise<PgClient> => {
    const client: PgClient = new pg.Client({
      host: target.host,
      port: target.port,
      database: target.database,
      user,
      password,
      application_name: applicationName,
      connectionTimeoutMillis: 10_000,
      query_timeout: 30_000,
      keepAlive: true,
    });
    // A refused first attempt's client must not mark the chosen one as lost.
    client.on('error', (error) => {
      if (client === chosen) onLost(error);
    });
    try {
      await client.connect();
      return client;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  };
  let refused: unknown;
  try {
    const credential = readSuperuserCredential(target.superuserFile);
    return (chosen = await open(credential.password, credential.user));
  } catch (error) {
    if (!isAuthFailure(error)) throw error instanceof BatonError ? error : connectError(error, target, where);
    refused = error;
  }
  // Refused: the other files that may hold what the database has, in order, each only on an
  // authentication failure (never the environment).
  for (const file of [target.providerEndFile, target.rolledBackFile]) {
    const fallback = file === undefined ? undefined : readOptionalPassword(file);
    if (fallback === undefined) continue;
    try {
      chosen = await open(fallback);
    } catch (error) {
      if (!isAuthFailure(error)) throw connectError(error, target, where);
      refused = error;
      continue;
    }
    if (file === target.rolledBackFile) onRolledBack?.(file!);
    return chosen;
  }
  throw connectError(refused, target, where);
}

function isAuthFailure(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === '28P01' || code === '28000';
}

/** The provider end's password, or undefined when there is none (or it is not a usable secret). */
function readOptionalPassword(file: string): string | undefined {
  try {
    const text = readFileSync(file, 'utf8');
    return text.length > 0 && !/[\r\n\0]/.test(text) ? text : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The superuser's own pair may be alternating: its consumer end then names the login
 * (`user=postgres_a password='…'`, alternating.ts), a member of the superuser role with `SET role`
 * to it at login, and the provisioner logs in as that login — the only one that works once the
 * group is NOLOGIN. A bare secret is the password of `--superuser`, as before.
 */
function readSuperuserCredential(file: string): { user?: string; password: string } {
  const text = readSuperuserPassword(file);
  const fields = conninfoLogin(text) === undefined ? undefined : parseConninfo(text);
  return fields ? { user: fields.user!, password: fields.password! } : { password: text };
}

function readSuperuserPassword(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new BatonError('failed', {
      what: `The superuser password file cannot be read: ${describeFsError(error)}.`,
      where: file,
      next: 'Deliver it (the mesh writes consumes/<provider>/<superuser> on this machine) or name another with --superuser-file.',
      changed: 'Nothing was applied; the provisioner will try again.',
    });
  }
  if (text.length === 0) {
    throw new BatonError('failed', {
      what: 'The superuser password file is empty.',
      where: file,
      next: 'Deliver the superuser password to it (the secret exactly, no trailing newline).',
      changed: 'Nothing was applied; the provisioner will try again.',
    });
  }
  return text;
}

function connectError(error: unknown, target: PostgresTarget, where: string): BatonError {
  const code = (error as { code?: string }).code;
  if (code === '28P01' || code === '28000') {
    return new BatonError('failed', {
      what: `PostgreSQL refused the superuser login for "${target.superuser}" (${messageOf(error)}).`,
      where: `${where} with the password from ${target.superuserFile}${target.providerEndFile ? ` (and from ${target.providerEndFile})` : ''}`,
      next: "Check that the file holds the role's current password exactly (no trailing newline), or name the right one with --superuser/--superuser-file.",
      changed: 'Nothing was applied; the provisioner will try again.',
      // What the heartbeat tells a lock-out from a database that is down by (heartbeat.ts).
      reason: 'denied',
    });
  }
  return new BatonError('failed', {
    what: `PostgreSQL cannot be reached (${messageOf(error)}).`,
    where,
    next: 'Start the database or fix --pg-host/--pg-port/--pg-database; --watch retries on its own.',
    changed: 'Nothing was applied; the provisioner will try again.',
  });
}

/** Errors that end the connection rather than one statement (SQLSTATE class 08, shutdowns). */
function isConnectionError(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  if (typeof code !== 'string') return true;
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    /^E[A-Z]+$/.test(code)
  );
}

/** A PostgreSQL or system error's message as a log line may carry it: the server writes it (names, quoted values). */
export function messageOf(error: unknown): string {
  return shown(error instanceof Error ? error.message : String(error));
}
