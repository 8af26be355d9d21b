/**
 * `baton provision postgres` as operators run it: the BUILT CLI (`node bin/baton.js`) as a
 * child process against a real PostgreSQL. `npm test` builds first; run `npm run build`
 * before running this file alone.
 */
import type { ResultPromise } from 'execa';
import { spawn, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { providerLock } from '../../src/provisioner/postgres-roles.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { canLogin, superuserPassword } from '../helpers/postgres.js';
import { assertBuilt, BIN, startBaton } from '../helpers/run-baton.js';
import { deliverFile, secret, uniqueRole } from './delivered-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const PROVIDER = 'pg-main';
let pg: PostgresSandbox;
let temp: { dir: string; cleanup: () => void };
let provides: string;
const children: ResultPromise[] = [];

const deliver = (role: string, value: string) => deliverFile(provides, role, value);

interface Run {
  readonly child: ResultPromise;
  output(): string;
  readonly exit: Promise<{ code: number | undefined; signal: string | undefined }>;
}

/**
 * Starts the CLI with a hostile environment: a wrong PGPASSWORD/PGUSER/PGDATABASE must not be
 * consulted (the password comes from the delivered file, everything else from flags).
 */
function baton(...args: string[]): Run {
  const child = startBaton(
    [
      'provision',
      'postgres',
      '--mesh-dir',
      temp.dir,
      '--provider',
      PROVIDER,
      '--pg-host',
      pg.host,
      '--pg-port',
      String(pg.port),
      ...args,
    ],
    {
      env: { PGPASSWORD: 'not-the-password', PGUSER: 'nobody', PGDATABASE: 'nowhere', NO_COLOR: '1' },
    },
  );
  children.push(child);
  let text = '';
  child.all.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exit = child.then((result) => ({ code: result.exitCode, signal: result.signal }));
  return { child, output: () => text, exit };
}

/** Waits until the output shows `text`; fails at once, with the output, if the CLI exits first. */
async function waitForOutput(run: Run, text: string): Promise<void> {
  const exited = run.exit.then(({ code }) => {
    throw new Error(`baton exited (${code}) before printing ${JSON.stringify(text)}:\n${run.output()}`);
  });
  const shown = vi.waitFor(
    () => {
      if (!run.output().includes(text))
        throw new Error(`waiting for ${JSON.stringify(text)} in:\n${run.output()}`);
    },
    { timeout: 30_000, interval: 50 },
  );
  await Promise.race([shown, exited]);
  exited.catch(() => undefined);
}

beforeAll(async () => {
  assertBuilt();
  pg = await startPostgres();
});

afterAll(async () => {
  await ifSet(pg)?.destroy();
  ifSet(temp)?.cleanup();
});

beforeEach(() => {
  ifSet(temp)?.cleanup();
  temp = makeTempDir('baton-prov-cli-');
  provides = path.join(temp.dir, 'provides', PROVIDER);
  mkdirSync(provides, { recursive: true, mode: 0o700 });
  const superuserFile = path.join(temp.dir, 'consumes', PROVIDER, pg.superuser);
  mkdirSync(path.dirname(superuserFile), { recursive: true, mode: 0o700 });
  writeFileSync(superuserFile, superuserPassword(pg), { mode: 0o600 });
});

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('baton provision postgres (built CLI)', () => {
  it('--watch applies what is delivered, picks up an atomic replacement, and exits 0 on SIGTERM', async () => {
    const role = uniqueRole('watched');
    const first = secret();
    const second = secret();
    deliver(role, first);
    const run = baton('--watch', '--interval', '0.2');

    await waitForOutput(run, `${role} ${secretDigest(first).slice(0, 19)} created`);
    expect(await canLogin(pg, role, first)).toBe(true);

    deliver(role, second);
    await waitForOutput(run, `${role} ${secretDigest(second).slice(0, 19)} updated`);
    expect(await canLogin(pg, role, second)).toBe(true);
    expect(await canLogin(pg, role, first)).toBe(false);
    expect(parseReceipt(readFileSync(path.join(provides, '.applied', role), 'utf8'))?.digest).toBe(
      secretDigest(second),
    );

    run.child.kill('SIGTERM');
    expect(await run.exit).toEqual({ code: 0, signal: undefined });
    expect(run.output()).toContain('stopped');
    expect(run.output()).not.toContain(first);
    expect(run.output()).not.toContain(second);
    expect(run.output()).not.toContain(superuserPassword(pg));
  });

  it('--watch survives the database going down and applies on recovery, then stops on SIGINT', async () => {
    const run = baton('--watch', '--interval', '0.2');
    await waitForOutput(run, 'watching');
    const role = uniqueRole('outage');
    const password = secret();
    await pg.stop();
    try {
      deliver(role, password);
      await waitForOutput(run, 'PostgreSQL cannot be reached');
      expect(run.child.exitCode).toBeNull();
    } finally {
      await pg.start();
    }
    await waitForOutput(run, `${role} ${secretDigest(password).slice(0, 19)} created`);
    expect(await canLogin(pg, role, password)).toBe(true);
    run.child.kill('SIGINT');
    expect(await run.exit).toEqual({ code: 0, signal: undefined });
  });

  it('one cycle exits 1 naming each file it could not apply, after applying the others', async () => {
    const good = uniqueRole('good');
    const password = secret();
    deliver(good, password);
    writeFileSync(path.join(provides, 'empty_one'), '', { mode: 0o600 });
    writeFileSync(path.join(provides, 'Bad Name'), secret(), { mode: 0o600 });

    const run = baton();
    const exit = await run.exit;

    expect(exit.code).toBe(1);
    expect(run.output()).toContain('empty_one (is empty)');
    expect(run.output()).toContain('Bad Name (the file name is not a PostgreSQL identifier');
    expect(run.output()).toContain(`Applied, with receipts: ${good}.`);
    expect(await canLogin(pg, good, password)).toBe(true);
    expect(existsSync(path.join(provides, '.applied', 'empty_one'))).toBe(false);
  });

  it('one cycle exits 0 when everything is applied, and a second run has nothing to do', async () => {
    const role = uniqueRole('once');
    deliver(role, secret());
    const first = baton('--once');
    expect((await first.exit).code).toBe(0);
    expect(first.output()).toContain(`${role} `);
    const second = baton();
    expect((await second.exit).code).toBe(0);
    expect(second.output()).toContain('nothing to apply (1 role already applied)');
  });

  it('a missing superuser password file is refused by name with exit 1, and nothing is receipted', async () => {
    const role = uniqueRole('no_su');
    deliver(role, secret());
    const missing = path.join(temp.dir, 'elsewhere', 'postgres.password');
    const run = baton('--superuser-file', missing);
    expect((await run.exit).code).toBe(1);
    expect(run.output()).toContain('superuser password file cannot be read');
    expect(run.output()).toContain(missing);
    expect(existsSync(path.join(provides, '.applied'))).toBe(false);
  });

  it('run as a user that cannot read the root-owned 0700 mesh dir, --once and --watch both say permission denied, the uid, and what to change (not that the dir is missing)', async () => {
    deliver(uniqueRole('unreadable'), secret());
    chmodSync(temp.dir, 0o700);
    // As root (CI's containers, this machine): the service user docs/provisioner-service.md warns about. As
    // anyone else: a mesh dir that user cannot read either.
    const asRoot = process.getuid?.() === 0;
    if (!asRoot) chmodSync(path.join(temp.dir, 'provides'), 0o000);
    const user = asRoot ? userInfoOf('postgres') : undefined;
    if (asRoot && !user)
      throw new Error(
        'the postgres OS user is missing (the sandbox PostgreSQL creates it): cannot run the provisioner as a service user',
      );
    const args = [
      BIN,
      'provision',
      'postgres',
      '--mesh-dir',
      temp.dir,
      '--provider',
      PROVIDER,
      '--pg-host',
      pg.host,
      '--pg-port',
      String(pg.port),
    ];
    const options: SpawnSyncOptions = {
      cwd: '/',
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        NO_COLOR: '1',
        XDG_CONFIG_HOME: '/nonexistent-baton-test-config',
      },
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    };
    const once = spawnSync(process.execPath, args, { ...options, encoding: 'utf8' });
    const watched = await firstOutputOf(
      process.execPath,
      [...args, '--watch', '--interval', '0.05'],
      options,
      'cannot be listed',
    );
    if (!asRoot) chmodSync(path.join(temp.dir, 'provides'), 0o700);

    expect(once.status).toBe(1);
    const what = `The delivered credentials for provider "${PROVIDER}" cannot be listed: permission denied.`;
    const next = /The provisioner runs as uid \d+ and cannot read it: .*? as the user it runs as\./.exec(
      once.stderr,
    )?.[0];
    expect(once.stderr).toContain(what);
    expect(next).toContain(`runs as uid ${user?.uid ?? process.getuid?.()}`);
    expect(next).toContain('Run the provisioner as root (User=root');
    expect(watched).toContain(what);
    expect(watched).toContain(next!);
    for (const output of [once.stderr, watched]) expect(output).not.toContain('creates this directory');
    expect(existsSync(path.join(provides, '.applied'))).toBe(false);
  });

  it('--once while another provisioner holds the provider: exit 5 naming it, nothing applied or receipted', async () => {
    const role = uniqueRole('held');
    const password = secret();
    deliver(role, password);
    const lock = providerLock(
      {
        host: pg.host,
        port: pg.port,
        database: 'postgres',
        superuser: pg.superuser,
        superuserFile: pg.superuserPasswordFile,
      },
      PROVIDER,
    );
    try {
      expect(await lock.acquire()).toEqual({ held: true });
      const run = baton('--once');
      expect((await run.exit).code).toBe(5);
      expect(run.output()).toContain(
        `Another provisioner for provider "${PROVIDER}" is running: "baton-provision ${PROVIDER} pid ${process.pid} on `,
      );
      expect(run.output()).toContain('Nothing was applied.');
      expect(existsSync(path.join(provides, '.applied'))).toBe(false);
      expect(await canLogin(pg, role, password)).toBe(false);
    } finally {
      await lock.release();
    }
    expect((await baton('--once').exit).code).toBe(0);
    expect(await canLogin(pg, role, password)).toBe(true);
  });

  it('bad flags are usage errors (exit 2) that say what to give', async () => {
    const run = baton('--interval', 'soon', '--watch');
    expect((await run.exit).code).toBe(2);
    expect(run.output()).toContain('--interval "soon" is not a number of seconds');
    const timeout = baton('--lock-timeout', '60');
    expect((await timeout.exit).code).toBe(2);
    expect(timeout.output()).toContain('--lock-timeout "60" is not a number of seconds between 0.001 and 25');
    expect(existsSync(path.join(provides, '.applied'))).toBe(false);
  });
});

/** Runs a command until its output shows `text`, then stops it; its output so far. */
function firstOutputOf(
  command: string,
  args: readonly string[],
  options: SpawnSyncOptions,
  text: string,
): Promise<string> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    uid: options.uid,
    gid: options.gid,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no ${JSON.stringify(text)} within 20 s:\n${output}`));
    }, 20_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes(text)) child.kill('SIGTERM');
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('close', () => {
      clearTimeout(timer);
      if (output.includes(text)) resolve(output);
      else reject(new Error(`exited before showing ${JSON.stringify(text)}:\n${output}`));
    });
  });
}

/** uid/gid of an OS user from /etc/passwd, or undefined when there is none. */
function userInfoOf(name: string): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${name}:`));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
