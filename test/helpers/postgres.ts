/**
 * Test-side helpers around the sandbox PostgreSQL: real logins as a role, and a way to wait
 * for the server log to have caught up (it is written asynchronously) without sleeping.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { vi } from 'vitest';
import type { PostgresSandbox } from '../../src/sandbox/postgres.js';

/** Debian's packaged server (postgresql-15): a test against it as well as the embedded one. */
export const DEBIAN_POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

/** Why Debian's PostgreSQL 15 cannot be started here, for test/helpers/real-part.ts; undefined when it can. */
export function debianPostgresMissing(bin = DEBIAN_POSTGRES_BIN): string | undefined {
  const absent = ['initdb', 'postgres'].filter((name) => !existsSync(path.join(bin, name)));
  return absent.length === 0
    ? undefined
    : `Debian's PostgreSQL 15 is not installed (no ${absent.join(' or ')} in ${bin}; apt-get install postgresql-15)`;
}

export function superuserPassword(sandbox: PostgresSandbox): string {
  return readFileSync(sandbox.superuserPasswordFile, 'utf8');
}

/**
 * Logs in as `role` with `password` over TCP (scram-sha-256): true when the server accepted,
 * false when it refused the password or the role (missing, wrong password, or NOLOGIN).
 * Anything else (server down) throws.
 */
export async function canLogin(sandbox: PostgresSandbox, role: string, password: string): Promise<boolean> {
  return (await loginRefusal(sandbox, role, password)) === undefined;
}

/**
 * Logs in as `role` with `password`: undefined when the server accepted, else the SQLSTATE of
 * its refusal (28P01 wrong password or no such role, 28000 NOLOGIN). Anything else throws.
 */
export async function loginRefusal(
  sandbox: PostgresSandbox,
  role: string,
  password: string,
): Promise<'28P01' | '28000' | undefined> {
  const client = new pg.Client({
    host: sandbox.host,
    port: sandbox.port,
    database: 'postgres',
    user: role,
    password,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === '28P01' || code === '28000') return code;
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Runs `sql` as the sandbox superuser (or the password given). */
export async function asSuperuser<T>(
  sandbox: PostgresSandbox,
  run: (client: pg.Client) => Promise<T>,
  password = superuserPassword(sandbox),
): Promise<T> {
  const client = new pg.Client({
    host: sandbox.host,
    port: sandbox.port,
    database: 'postgres',
    user: sandbox.superuser,
    password,
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The server log up to now: a unique marker statement is sent and the log is read once the
 * marker shows up in it, so everything the server logged before it is there too. The marker's
 * own line is cut off.
 */
export async function serverLogSoFar(sandbox: PostgresSandbox, password?: string): Promise<string> {
  const marker = `baton-log-marker-${randomBytes(6).toString('hex')}`;
  await asSuperuser(sandbox, (client) => client.query(`SELECT '${marker}'`), password);
  return vi.waitFor(
    () => {
      const text = readFileSync(sandbox.logFile, 'utf8');
      if (!text.includes(marker)) throw new Error(`the server log does not show ${marker} yet`);
      return text.slice(0, text.lastIndexOf('\n', text.indexOf(marker)) + 1);
    },
    { timeout: 10_000, interval: 20 },
  );
}

/** The statements (log_statement = 'all') in a slice of the server log. */
export function loggedStatements(log: string): string[] {
  return log
    .split('\n')
    .filter((line) => line.includes('LOG:  statement: '))
    .map((line) => line.slice(line.indexOf('statement: ') + 11));
}
