/**
 * A real `psql` logging in with an alternating consumer file, to prove libpq reads the file's
 * keyword/value text as it is: psql reads the file itself (`\set ci \`cat FILE …\``) and
 * `\connect`s with it plus host/port/dbname, so the password is never in psql's argv or
 * environment, nor in anything this process passes. psql needs a first connection before it
 * reads its script; that one is the sandbox superuser's, through a 0600 PGPASSFILE (a path, not
 * a password).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PostgresSandbox } from '../../src/sandbox/postgres.js';

const PSQL_CANDIDATES = ['/usr/lib/postgresql/15/bin/psql', '/usr/bin/psql'];

export const PSQL = PSQL_CANDIDATES.find((p) => existsSync(p)) ?? PSQL_CANDIDATES[0]!;

/** Why psql cannot run here, for test/helpers/real-part.ts; undefined when it can. */
export function psqlMissing(): string | undefined {
  return existsSync(PSQL)
    ? undefined
    : `psql is not installed (none of ${PSQL_CANDIDATES.join(', ')}; apt-get install postgresql-client-15)`;
}

export interface PsqlRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** What psql was started with, for asserting no secret is in it. */
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly script: string;
}

/**
 * Runs `sql` (one statement, its rows printed unaligned, `|`-separated) in a session psql opened
 * from `consumerFile`'s content plus host, port and dbname. Exit status 0 only when that
 * connection and the statement succeeded (ON_ERROR_STOP).
 */
export function psqlWithConsumerFile(sandbox: PostgresSandbox, consumerFile: string, sql: string): PsqlRun {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-psql-'));
  try {
    const passfile = path.join(dir, 'pgpass');
    const superuserPassword = readFileSync(sandbox.superuserPasswordFile, 'utf8');
    writeFileSync(
      passfile,
      `${sandbox.host}:${sandbox.port}:*:${sandbox.superuser}:${superuserPassword.replace(/[\\:]/g, (c) => `\\${c}`)}\n`,
      { mode: 0o600 },
    );
    // `:ci` unquoted: psql hands the variable to \connect as one argument, untouched; `:'ci'`
    // would turn it into an SQL literal (E'…') that libpq cannot read.
    const script = [
      `\\set ci \`cat '${consumerFile}'; printf ' host=${sandbox.host} port=${sandbox.port} dbname=postgres'\``,
      '\\connect :ci',
      sql,
      '',
    ].join('\n');
    const argv = [
      '-X',
      '-w',
      '-q',
      '-A',
      '-t',
      '-v',
      'ON_ERROR_STOP=1',
      '-d',
      `host=${sandbox.host} port=${sandbox.port} dbname=postgres user=${sandbox.superuser}`,
    ];
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', PGPASSFILE: passfile, PGCONNECT_TIMEOUT: '5' };
    const result = spawnSync(PSQL, argv, { input: script, encoding: 'utf8', env, timeout: 15_000 });
    return {
      status: result.status,
      // `||`: null, not the types' string, when psql could not be started at all
      stdout: result.stdout || '',
      stderr: result.stderr || '',
      argv,
      env,
      script,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
