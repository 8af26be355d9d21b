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
import { readFileSync } from 'node:fs';
import type { Client as PgClient } from 'pg';
import { BatonError } from '../errors.js';
import { describeFsError } from './delivered-credentials.js';

export type RoleOutcome = 'created' | 'updated';

/** pg's own quoting (a Client has it, and so has the module). */
export type SqlEscape = Pick<PgClient, 'escapeIdentifier' | 'escapeLiteral'>;

/**
 * `CREATE/ALTER ROLE … PASSWORD` is a utility statement and takes no bind parameters, so the
 * role (already validated) and the verifier (base64 and fixed characters) are quoted by pg —
 * anyway, so a validation slip can never become SQL. A backslash or NUL is refused rather than
 * sent as an E'' literal whose meaning hangs on `standard_conforming_strings`: a verifier
 * never has one.
 */
export function passwordStatement(kind: 'create' | 'alter', role: string, verifier: string, sql: SqlEscape): string {
  if (/[\\\0]/.test(verifier) || role.includes('\0')) throw new Error('a role or verifier here never contains a backslash or NUL');
  const password = `PASSWORD ${sql.escapeLiteral(verifier)}`;
  return kind === 'create' ? `CREATE ROLE ${sql.escapeIdentifier(role)} LOGIN ${password}` : `ALTER ROLE ${sql.escapeIdentifier(role)} ${password}`;
}

/** What a cycle needs from the database; a fake implements it in the unit tests. */
export interface RoleDatabase {
  /** `CREATE ROLE … LOGIN PASSWORD` when the role is missing, else `ALTER ROLE … PASSWORD`. */
  setPassword(role: string, verifier: string): Promise<RoleOutcome>;
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
}

/** Thrown by `setPassword` when the connection itself failed: the remaining roles must wait. */
export class ConnectionLost extends Error {}

export function postgresRoles(target: PostgresTarget, options: { readonly onStatement?: (sql: string) => void } = {}): ConnectRoleDatabase {
  const where = `postgresql://${target.superuser}@${target.host}:${target.port}/${target.database}`;
  return async (signal) => {
    const { default: pg } = await import('pg');
    const open = async (password: string): Promise<PgClient> => {
      const client: PgClient = new pg.Client({
        host: target.host,
        port: target.port,
        database: target.database,
        user: target.superuser,
        password,
        application_name: 'baton-provision',
        connectionTimeoutMillis: 10_000,
        query_timeout: 30_000,
        keepAlive: true,
      });
      // An idle client's socket error is emitted, not thrown: unhandled it would crash a service
      // that must outlive the database going down.
      // A refused first attempt's client must not mark the chosen one as lost.
      client.on('error', (error) => {
        if (client === chosen) lost = error;
      });
      try {
        await client.connect();
        return client;
      } catch (error) {
        await client.end().catch(() => undefined);
        throw error;
      }
    };
    let lost: Error | undefined;
    let chosen: PgClient | undefined;
    let client: PgClient;
    try {
      client = await open(readSuperuserPassword(target.superuserFile));
    } catch (error) {
      const fallback = isAuthFailure(error) && target.providerEndFile ? readOptionalPassword(target.providerEndFile) : undefined;
      if (fallback === undefined) throw error instanceof BatonError ? error : connectError(error, target, where);
      try {
        client = await open(fallback);
      } catch (second) {
        throw connectError(second, target, where);
      }
    }
    chosen = client;
    const abort = () => void client.end().catch(() => undefined);
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) abort();
    const query = async (sql: string, values?: unknown[]) => {
      if (lost) throw new ConnectionLost(`the connection was lost (${lost.message})`);
      options.onStatement?.(sql);
      try {
        return await client.query(sql, values);
      } catch (error) {
        if (isConnectionError(error) || lost) throw new ConnectionLost(`the connection was lost (${messageOf(error)})`);
        throw error;
      }
    };
    return {
      async setPassword(role, verifier) {
        const exists = (await query('SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1', [role])).rowCount! > 0;
        if (!exists) {
          try {
            await query(passwordStatement('create', role, verifier, client));
            return 'created';
          } catch (error) {
            // 42710 duplicate_object: created by someone else since the check; set its password instead.
            if ((error as { code?: string }).code !== '42710') throw error;
          }
        }
        await query(passwordStatement('alter', role, verifier, client));
        return 'updated';
      },
      async close() {
        signal?.removeEventListener('abort', abort);
        await client.end().catch(() => undefined);
      },
    };
  };
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
      next: 'Check that the file holds the role\'s current password exactly (no trailing newline), or name the right one with --superuser/--superuser-file.',
      changed: 'Nothing was applied; the provisioner will try again.',
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
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || /^E[A-Z]+$/.test(code);
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
