/**
 * An app for measuring a rotation's window from the outside: it opens a NEW connection every
 * 50 ms, re-reading its consumer file for each one, and records what happened with which login
 * and password. Free of vitest, so the bench uses it too.
 *
 * The file is read as a consumer reads it: a single pair's file is the bare secret (the login is
 * the pair's role); an alternating pair's file is libpq keyword/value text naming the login and
 * the password (docs/mesh-rotation.md, "Alternating credentials"). The app never guesses past
 * that: whatever else the file holds is sent as a bare password and fails visibly.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { conninfoLogin, parseConninfo } from '../../src/mesh/alternating.js';
import type { PostgresSandbox } from '../../src/sandbox/postgres.js';
import { registerChild } from './process-registry.js';
import { waitOn } from './wait-on.js';

export interface AppAttempt {
  /** The login the file named (the pair's role for a bare secret). */
  readonly user: string;
  readonly password: string;
  readonly ok: boolean;
  /** The server's SQLSTATE when it refused (28P01: wrong password; 28000: NOLOGIN or no such role). */
  readonly code?: string;
  /** When the attempt started (ms since the epoch). */
  readonly at: number;
}

export interface ConsumerLogin {
  readonly user: string;
  readonly password: string;
  readonly format: 'bare' | 'conninfo';
}

/** What a consumer file says to log in with: keyword/value `user` + `password`, else the bare secret as `role`'s password. */
export function consumerLogin(text: string, role: string): ConsumerLogin {
  if (conninfoLogin(text) !== undefined) {
    const fields = parseConninfo(text)!;
    return { user: fields.user!, password: fields.password!, format: 'conninfo' };
  }
  return { user: role, password: text, format: 'bare' };
}

export interface PasswordApp {
  readonly attempts: AppAttempt[];
  /** The refused logins, each named: `<user> <code> at <ISO time>`. */
  failures(): string[];
  stop(): Promise<void>;
}

/**
 * An app that re-reads its consumer file for EVERY new connection, every 50 ms, logging in with
 * what it says (see consumerLogin; `role` is the pair's role, the login of a bare secret). A
 * missing file (before the first rotation) is skipped.
 */
export function startPasswordApp(
  sandbox: Pick<PostgresSandbox, 'host' | 'port'>,
  file: () => string,
  role: string,
): PasswordApp {
  const attempts: AppAttempt[] = [];
  let running = true as boolean; // set false by stop()
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      let text: string | undefined;
      try {
        text = readFileSync(file(), 'utf8');
      } catch {
        text = undefined;
      }
      if (text !== undefined) {
        const { user, password } = consumerLogin(text, role);
        const client = new pg.Client({
          host: sandbox.host,
          port: sandbox.port,
          database: 'postgres',
          user,
          password,
        });
        client.on('error', () => undefined);
        try {
          await client.connect();
          await client.query('SELECT 1');
          attempts.push({ user, password, ok: true, at: started });
        } catch (error) {
          attempts.push({ user, password, ok: false, code: (error as { code?: string }).code, at: started });
        } finally {
          await client.end().catch(() => undefined);
        }
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 50 - (Date.now() - started))));
    }
  })();
  return {
    attempts,
    failures: () =>
      attempts
        .filter((a) => !a.ok)
        .map((a) => `${a.user} ${a.code ?? 'no code'} at ${new Date(a.at).toISOString()}`),
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** One attempt of a caching app, from its log. */
export interface CachingAttempt {
  readonly user: string;
  readonly ok: boolean;
  readonly code?: string | null;
  readonly at: number;
}

export interface CachingApp {
  /** The pid file a `reload:` signals (`kill -HUP "$(cat …)"`). */
  readonly pidFile: string;
  attempts(): CachingAttempt[];
  failures(): string[];
  /** Attempts since `fromMs` (ms since the epoch). */
  since(fromMs: number): CachingAttempt[];
  stop(): Promise<void>;
}

export const CACHING_APP = path.join(path.dirname(new URL(import.meta.url).pathname), 'caching-app.mjs');

/**
 * An app as most apps are: a separate process that reads its consumer file ONCE at start (and
 * on SIGHUP: what its `reload:` sends), then opens a new connection every `intervalMs` and holds
 * each `holdMs` (test/helpers/caching-app.mjs). Its log is `dir/<name>.log`, its pid `dir/<name>.pid`.
 */
export async function startCachingApp(
  sandbox: PostgresSandbox,
  options: {
    readonly file: string;
    readonly role: string;
    readonly dir: string;
    readonly name: string;
    readonly intervalMs?: number;
    readonly holdMs?: number;
  },
): Promise<CachingApp> {
  const log = path.join(options.dir, `${options.name}.log`);
  const pidFile = path.join(options.dir, `${options.name}.pid`);
  writeFileSync(log, '');
  rmSync(pidFile, { force: true });
  const child = spawn(
    process.execPath,
    [
      CACHING_APP,
      options.file,
      options.role,
      sandbox.host,
      String(sandbox.port),
      log,
      pidFile,
      String(options.intervalMs ?? 100),
      String(options.holdMs ?? 400),
    ],
    { stdio: 'ignore', cwd: path.dirname(CACHING_APP) },
  );
  registerChild(child, `caching app ${options.name}`);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Started when it wrote its pid, however long a loaded machine takes; at once if it died first.
  await waitOn(
    () => {
      if (!existsSync(pidFile)) throw new Error(`no ${pidFile} yet`);
    },
    child,
    `the caching app ${options.name} starting`,
  ).catch(() => undefined);
  const attempts = (): CachingAttempt[] =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => JSON.parse(l) as CachingAttempt);
  return {
    pidFile,
    attempts,
    failures: () =>
      attempts()
        .filter((a) => !a.ok)
        .map((a) => `${a.user} ${a.code ?? 'no code'} at ${new Date(a.at).toISOString()}`),
    since: (fromMs) => attempts().filter((a) => a.at >= fromMs),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Resolves once `app` has tried `n` logins more than now (at its 50 ms pace, whatever the load). */
export async function loginsMore(app: Pick<PasswordApp, 'attempts'>, n: number): Promise<void> {
  const target = app.attempts.length + n;
  while (app.attempts.length < target) await new Promise((r) => setTimeout(r, 50));
}
