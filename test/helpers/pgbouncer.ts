/**
 * Debian's pgbouncer (/usr/sbin/pgbouncer, 1.18 here) in front of a sandbox PostgreSQL: the
 * pooler a mesh names under `poolers:` (docs/inventory.md, "Poolers"). It listens on a free port
 * on 127.0.0.1, authenticates clients with SCRAM (`auth_type = scram-sha-256`) and finds each
 * login's verifier with `auth_query` (as `auth_user`) or in its `auth_file`. As root it runs as
 * the `postgres` user (pgbouncer refuses root), so its directory is that user's.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/sandbox/free-port.js';
import type { PostgresSandbox } from '../../src/sandbox/postgres.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { asSuperuser } from './postgres.js';
import { registerChild } from './process-registry.js';
import { waitOn } from './wait-on.js';

export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** Why pgbouncer cannot be started here, for test/helpers/real-part.ts; undefined when it can. */
export function pgbouncerMissing(bin = PGBOUNCER): string | undefined {
  return existsSync(bin) ? undefined : `pgbouncer is not installed (no ${bin}; apt-get install pgbouncer)`;
}

export interface PgbouncerOptions {
  /** The port to listen on (a free one when not given: a mesh's inventory may need it first). */
  readonly port?: number;
  /** `auth_query` run as `user` (whose clear password only this pgbouncer's auth_file holds). */
  readonly authQuery?: { readonly user: string; readonly password: string; readonly query: string };
  /** The auth_file's text (pgbouncer's `"login" "secret"` lines) when there is no auth_query. */
  readonly authFileText?: string;
  /** pgbouncer.ini's admin_users (its password in the auth_file). */
  readonly adminUser?: string;
}

export interface Pgbouncer {
  readonly host: string;
  readonly port: number;
  readonly dir: string;
  readonly authFile: string;
  /** What it logged so far. */
  log(): string;
  stop(): Promise<void>;
}

export async function startPgbouncer(
  sandbox: PostgresSandbox,
  options: PgbouncerOptions,
): Promise<Pgbouncer> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = options.port ?? (await freePort());
  const authFile = path.join(dir, 'userlist.txt');
  const logFile = path.join(dir, 'pgbouncer.log');
  const ini = path.join(dir, 'pgbouncer.ini');
  const q = options.authQuery;
  writeFileSync(
    authFile,
    options.authFileText ?? (q ? `"${q.user}" "${q.password.replace(/"/g, '""')}"\n` : ''),
    { mode: 0o600 },
  );
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${sandbox.host} port=${sandbox.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${dir}`,
      'auth_type = scram-sha-256',
      `auth_file = ${authFile}`,
      ...(q ? [`auth_user = ${q.user}`, `auth_query = ${q.query}`] : []),
      ...(options.adminUser ? [`admin_users = ${options.adminUser}`] : []),
      // Server connections come and go within a rotation: new ones log in after each change.
      'server_lifetime = 1',
      'server_idle_timeout = 1',
      `logfile = ${logFile}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  writeFileSync(logFile, '', { mode: 0o644 });
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const server = statSync(sandbox.dataDir);
    for (const f of [dir, authFile, ini, logFile]) chownSync(f, server.uid, server.gid);
  }
  const child: ChildProcess = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), ini], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  registerChild(child, 'pgbouncer');
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => `${readFileSync(logFile, 'utf8')}${stderr}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitOn(
      () =>
        new Promise<void>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1');
          socket.once('connect', () => {
            socket.destroy();
            resolve();
          });
          socket.once('error', (error) => {
            socket.destroy();
            reject(new Error(`pgbouncer does not listen on ${port} yet (${error.message}): ${log()}`));
          });
        }),
      child,
      'pgbouncer listening',
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { host: '127.0.0.1', port, dir, authFile, log, stop };
}

/** The auth_query the pooler tests give pgbouncer: a SECURITY DEFINER function only its auth_user may call. */
export const POOLER_AUTH_USER = 'pooler_auth';
const POOLER_AUTH_PASSWORD = 'pooler-auth-only-in-this-test';
const POOLER_AUTH_QUERY = 'SELECT usename, passwd FROM public.pooler_auth($1)';

/**
 * pgbouncer with `auth_query` in front of `sandbox`: its auth_user is made (a SCRAM verifier,
 * never the text, in the statement) with EXECUTE on the one function that reads a login's
 * verifier from pg_authid, and nothing else.
 */
export async function startAuthQueryPgbouncer(sandbox: PostgresSandbox, port: number): Promise<Pgbouncer> {
  const verifier = await scramVerifier(Buffer.from(POOLER_AUTH_PASSWORD));
  await asSuperuser(sandbox, async (c) => {
    await c.query(`CREATE ROLE ${POOLER_AUTH_USER} LOGIN PASSWORD '${verifier}'`);
    await c.query(
      `CREATE FUNCTION public.pooler_auth(p_user text, OUT usename text, OUT passwd text) RETURNS record LANGUAGE sql SECURITY DEFINER AS $$ SELECT rolname::text, rolpassword FROM pg_authid WHERE rolname = p_user AND rolcanlogin $$`,
    );
    await c.query(`REVOKE ALL ON FUNCTION public.pooler_auth(text) FROM PUBLIC`);
    await c.query(`GRANT EXECUTE ON FUNCTION public.pooler_auth(text) TO ${POOLER_AUTH_USER}`);
  });
  return startPgbouncer(sandbox, {
    port,
    authQuery: { user: POOLER_AUTH_USER, password: POOLER_AUTH_PASSWORD, query: POOLER_AUTH_QUERY },
  });
}

/** The sha256 of pgbouncer's own files (its auth_file and pgbouncer.ini): what a rotation must leave as it found. */
export function pgbouncerFileDigests(bouncer: Pick<Pgbouncer, 'dir'>): string[] {
  return ['userlist.txt', 'pgbouncer.ini'].map((f) =>
    createHash('sha256')
      .update(readFileSync(path.join(bouncer.dir, f)))
      .digest('hex'),
  );
}
