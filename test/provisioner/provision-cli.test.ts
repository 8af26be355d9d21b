/**
 * `baton provision postgres` as operators run it: the BUILT CLI (`node bin/baton.js`) as a
 * child process against a real PostgreSQL. `npm test` builds first; run `npm run build`
 * before running this file alone.
 */
import type { ResultPromise } from 'execa';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { canLogin, superuserPassword } from '../helpers/postgres.js';
import { assertBuilt, BIN, startBaton } from '../helpers/run-baton.js';
import { deliverFile, secret, uniqueRole } from './delivered-fixture.js';

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
  const child = startBaton(['provision', 'postgres', '--mesh-dir', temp.dir, '--provider', PROVIDER,
    '--pg-host', pg.host, '--pg-port', String(pg.port), ...args], {
    env: { PGPASSWORD: 'not-the-password', PGUSER: 'nobody', PGDATABASE: 'nowhere', NO_COLOR: '1' },
  });
  children.push(child);
  let text = '';
  child.all?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exit = child.then((result) => ({ code: result.exitCode, signal: result.signal }));
  return { child, output: () => text, exit };
}

/** Waits until the output shows `text`; fails at once, with the output, if the CLI exits first. */
async function waitForOutput(run: Run, text: string): Promise<void> {
  const exited = run.exit.then(({ code }) => {
    throw new Error(`baton exited (${code}) before printing ${JSON.stringify(text)}:\n${run.output()}`);
  });
  const shown = vi.waitFor(() => {
    if (!run.output().includes(text)) throw new Error(`waiting for ${JSON.stringify(text)} in:\n${run.output()}`);
  }, { timeout: 30_000, interval: 50 });
  await Promise.race([shown, exited]);
  exited.catch(() => undefined);
}

beforeAll(async () => {
  assertBuilt();
  pg = await startPostgres();
});

afterAll(async () => {
  await pg?.destroy();
  temp?.cleanup();
});

beforeEach(() => {
  temp?.cleanup();
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
    expect(parseReceipt(readFileSync(path.join(provides, '.applied', role), 'utf8'))?.digest).toBe(secretDigest(second));

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

  it('run as a user that cannot read the root-owned 0700 mesh dir, it says permission denied and what to change, not that the dir is missing', async () => {
    deliver(uniqueRole('unreadable'), secret());
    chmodSync(temp.dir, 0o700);
    // As root (CI's containers, this machine): the service user the README warns about. As
    // anyone else: a mesh dir that user cannot read either.
    const asRoot = process.getuid?.() === 0;
    if (!asRoot) chmodSync(path.join(temp.dir, 'provides'), 0o000);
    const user = asRoot ? userInfoOf('postgres') : undefined;
    if (asRoot && !user) throw new Error('the postgres OS user is missing (the sandbox PostgreSQL creates it): cannot run the provisioner as a service user');
    const result = spawnSync(process.execPath, [BIN, 'provision', 'postgres', '--mesh-dir', temp.dir, '--provider', PROVIDER, '--pg-host', pg.host, '--pg-port', String(pg.port)], {
      encoding: 'utf8',
      cwd: '/',
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', NO_COLOR: '1', XDG_CONFIG_HOME: '/nonexistent-baton-test-config' },
      ...(user ? { uid: user.uid, gid: user.gid } : {}),
    });
    if (!asRoot) chmodSync(path.join(temp.dir, 'provides'), 0o700);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('cannot be listed: permission denied');
    expect(result.stderr).toContain('Run the provisioner as root (User=root');
    expect(result.stderr).not.toContain('creates this directory');
    expect(existsSync(path.join(provides, '.applied'))).toBe(false);
  });

  it('bad flags are usage errors (exit 2) that say what to give', async () => {
    const run = baton('--interval', 'soon', '--watch');
    expect((await run.exit).code).toBe(2);
    expect(run.output()).toContain('--interval "soon" is not a number of seconds');
  });
});

/** uid/gid of an OS user from /etc/passwd, or undefined when there is none. */
function userInfoOf(name: string): { uid: number; gid: number } | undefined {
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
  if (!line) return undefined;
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}
