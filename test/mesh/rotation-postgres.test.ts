/**
 * The rotation against a REAL PostgreSQL (the embedded one), end to end through the built CLI:
 * `baton mesh seed | rotate | resume` on a local-transport mesh, the real provisioner
 * (`baton provision postgres --watch --interval 2`) on "db1", and an app-like client that
 * re-reads its consumer file for every new connection, every 50 ms.
 *
 * The provisioner logs in as a superuser role made for each test (`su_…`, a pair of the mesh
 * like any other), so rotating it never touches the sandbox's own superuser. Run
 * `npm run build` before running this file alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { readJournal } from '../../src/mesh/journal.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { asSuperuser, canLogin, serverLogSoFar } from '../helpers/postgres.js';
import { startPasswordApp } from '../helpers/password-app.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';

const PROVIDER = 'pg-main';
const MESH = '/var/lib/baton/mesh';
let sandbox: PostgresSandbox;
let tmp: { dir: string; cleanup: () => void };
let superuser: string;
/** Every password any test saw: none may ever appear in the server's statement log. */
const seen = new Set<string>();
const children: ChildProcess[] = [];

const machineDir = (m: string) => path.join(tmp.dir, 'machines', m);
const meshDirOn = (m: string) => path.join(machineDir(m), MESH);
const consumerFile = (m: string, role: string) => path.join(meshDirOn(m), 'consumes', PROVIDER, role);
const providerFile = (role: string) => path.join(meshDirOn('db1'), 'provides', PROVIDER, role);
const read = (file: string) => {
  const text = readFileSync(file, 'utf8');
  seen.add(text);
  return text;
};

function baton(...args: string[]) {
  return runBaton(['--state-dir', path.join(tmp.dir, 'state'), ...args], { cwd: tmp.dir, env: { NO_COLOR: '1' }, timeoutMs: 90_000 });
}

const rotate = (selector: string[], wait = '20') => baton('mesh', 'rotate', ...selector, '--inventory', path.join(tmp.dir, 'mesh.yaml'), '--yes', '--wait', wait);

interface Provisioner {
  readonly child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

function spawnLogged(command: string, args: string[]): Provisioner {
  const child = spawn(command, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
  children.push(child);
  let text = '';
  child.stdout!.on('data', (c: Buffer) => (text += c.toString('utf8')));
  child.stderr!.on('data', (c: Buffer) => (text += c.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => text,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The real provisioner, as the README's unit runs it, at `--interval 2`. */
function startProvisioner(): Provisioner {
  return spawnLogged(process.execPath, [BIN, 'provision', 'postgres', '--mesh-dir', meshDirOn('db1'), '--provider', PROVIDER,
    '--pg-host', sandbox.host, '--pg-port', String(sandbox.port), '--superuser', superuser, '--watch', '--interval', '2']);
}

const startApp = (machine: string, role: string) => startPasswordApp(sandbox, () => consumerFile(machine, role), role);

async function waitForReceipt(role: string, digest: string): Promise<void> {
  await vi.waitFor(() => {
    const receipt = parseReceipt(readFileSync(path.join(meshDirOn('db1'), 'provides', PROVIDER, '.applied', role), 'utf8'));
    if (receipt?.digest !== digest) throw new Error(`no receipt for ${role} with ${digest} yet`);
  }, { timeout: 20_000, interval: 50 });
}

beforeAll(async () => {
  if (!existsSync(BIN)) throw new Error('bin/baton.js is missing: run `npm run build`.');
  assertBuilt();
  sandbox = await startPostgres({ logStatements: true });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await sandbox?.destroy();
});

beforeEach(async () => {
  tmp = makeTempDir('baton-mesh-pg-');
  superuser = `su_${randomBytes(3).toString('hex')}`;
  for (const m of ['db1', 'web1', 'web2']) mkdirSync(machineDir(m), { recursive: true });
  writeFileSync(
    path.join(tmp.dir, 'mesh.yaml'),
    [
      'machines:',
      ...['db1', 'web1', 'web2'].map((m) => `  - { name: ${m}, address: machines/${m}, transport: local }`),
      'providers:',
      `  - { name: ${PROVIDER}, machine: db1, kind: postgres }`,
      'consumers:',
      `  - { name: web1-app, machine: web1, uses: [${PROVIDER}] }`,
      `  - { name: web2-app, machine: web2, uses: [${PROVIDER}] }`,
      `  - { name: provisioner, machine: db1, uses: [${PROVIDER}], role: ${superuser} }`,
      '',
    ].join('\n'),
  );
  // The provisioner's superuser exists with a password the database has; only its verifier is
  // sent (the statement log must never show a password), then the mesh is seeded with it.
  const first = randomBytes(24).toString('base64url');
  seen.add(first);
  const verifier = await scramVerifier(Buffer.from(first));
  await asSuperuser(sandbox, (c) => c.query(`CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${verifier}'`));
  const file = path.join(tmp.dir, 'superuser.password');
  writeFileSync(file, `${first}\n`, { mode: 0o600 });
  const seeded = await baton('mesh', 'seed', '--pair', `${PROVIDER}:provisioner`, '--from-file', file, '--inventory', path.join(tmp.dir, 'mesh.yaml'));
  expect(seeded.all).not.toContain(first);
  expect(seeded.exitCode).toBe(0);
  expect(read(consumerFile('db1', superuser))).toBe(first);
});

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  tmp.cleanup();
});

describe('a rotation against a real PostgreSQL, with an app re-reading its file every 50 ms', () => {
  it('the app sees at most 2 failed logins per rotation at --interval 2, and never one with a NEW password', async () => {
    const provisioner = startProvisioner();
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0); // creates the role
    const app = startApp('web1', 'web1_app');
    await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok).length).toBeGreaterThan(3), { timeout: 10_000 });
    // Each rotation's attempts are those from its start to a few successes with its new password.
    const rotations: { old: string; fresh: string; summary: string; from: number; to: number }[] = [];
    for (let i = 0; i < 3; i++) {
      const old = read(consumerFile('web1', 'web1_app'));
      const from = app.attempts.length;
      const r = await rotate(['--pair', `${PROVIDER}:web1-app`]);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
      const fresh = read(consumerFile('web1', 'web1_app'));
      expect(fresh).not.toBe(old);
      // Let the app connect a few times with the new password before the next rotation.
      await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok && a.password === fresh).length).toBeGreaterThan(2), { timeout: 10_000 });
      rotations.push({ old, fresh, summary: r.stdout, from, to: app.attempts.length });
    }
    await app.stop();
    await provisioner.stop();
    for (const { old, fresh, summary, from, to } of rotations) {
      const during = app.attempts.slice(from, to);
      expect(during.filter((a) => a.ok && a.password === old).length).toBeGreaterThan(0);
      const failedOld = during.filter((a) => !a.ok && a.password === old);
      const failedNew = during.filter((a) => !a.ok && a.password === fresh);
      expect(during.filter((a) => !a.ok && a.password !== old && a.password !== fresh)).toEqual([]);
      expect(failedNew).toEqual([]);
      expect(failedOld.length).toBeLessThanOrEqual(2);
      for (const a of failedOld) expect(a.code).toBe('28P01');
      expect(summary).toContain('Rotated 1 credential (rotation');
      expect(summary).toMatch(/✓ pg-main applied web1_app; web1-app's file replaced \d+ ms later \(the window\)/);
      expect(summary).toMatch(/Window: new connections that still used the OLD password could fail .* — \d+ ms\./);
    }
    // Outside the rotations, no login failed at all.
    const inside = new Set(rotations.flatMap((r) => app.attempts.slice(r.from, r.to)));
    expect(app.attempts.filter((a) => !a.ok && !inside.has(a))).toEqual([]);
    const records = readFileSync(path.join(tmp.dir, 'state', 'mesh-journal.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const applied = records.filter((r) => r.phase === 'applied');
    expect(applied).toHaveLength(4);
    for (const record of applied) expect(record.windows_ms['pg-main:web1-app']).toEqual(expect.any(Number));
  });

  it("rotating the provisioner's own superuser pair alone, then an ordinary pair: both exit 0 and both log in", async () => {
    const provisioner = startProvisioner();
    const before = read(consumerFile('db1', superuser));
    const r = await rotate(['--pair', `${PROVIDER}:provisioner`]);
    expect(r.all).not.toContain(before);
    expect(r.exitCode).toBe(0);
    const fresh = read(consumerFile('db1', superuser));
    expect(fresh).not.toBe(before);
    expect(await canLogin(sandbox, superuser, fresh)).toBe(true);
    expect(await canLogin(sandbox, superuser, before)).toBe(false);
    const web = await rotate(['--pair', `${PROVIDER}:web1-app`]);
    expect(web.exitCode).toBe(0);
    expect(await canLogin(sandbox, 'web1_app', read(consumerFile('web1', 'web1_app')))).toBe(true);
    expect(provisioner.output()).not.toContain('refused the superuser login');
    await provisioner.stop();
  });

  it('rotating the whole provider, its superuser pair included, exits 0 with every pair applied, and every login works', async () => {
    const provisioner = startProvisioner();
    const r = await rotate(['--provider', PROVIDER]);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Rotated 3 credentials (rotation');
    expect(r.stdout).toContain('applied 3/3');
    for (const [machine, role] of [['web1', 'web1_app'], ['web2', 'web2_app'], ['db1', superuser]] as const) {
      expect(await canLogin(sandbox, role, read(consumerFile(machine, role)))).toBe(true);
    }
    // And again: the provisioner still logs in with what its consumer end now holds.
    const again = await rotate(['--provider', PROVIDER]);
    expect(again.exitCode).toBe(0);
    for (const [machine, role] of [['web1', 'web1_app'], ['web2', 'web2_app'], ['db1', superuser]] as const) {
      expect(await canLogin(sandbox, role, read(consumerFile(machine, role)))).toBe(true);
    }
    await provisioner.stop();
  });

  it('a provisioner SIGKILLed between ALTER ROLE and the receipt of its own superuser converges when restarted', async () => {
    const provisioner = startProvisioner();
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0);
    await provisioner.stop();
    const marker = path.join(tmp.dir, 'paused');
    const pausing = spawnLogged(process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'fixtures/pausing-provisioner.ts'),
      meshDirOn('db1'), PROVIDER, sandbox.host, String(sandbox.port), superuser, superuser, marker]);
    const before = read(consumerFile('db1', superuser));
    const r = await rotate(['--pair', `${PROVIDER}:provisioner`], '3');
    // The database took the new password, no receipt came: the consumer end is still staged.
    await vi.waitFor(() => expect(existsSync(marker)).toBe(true), { timeout: 20_000 });
    expect(r.exitCode).toBe(3);
    const id = /Rotation (\S+):/.exec(r.stdout)![1]!;
    // The suggested command keeps the flags this run was given (the one builder).
    expect(r.stdout).toMatch(new RegExp(`baton (?:--\\S+ \\S+ )*mesh resume ${id}`));
    pausing.child.kill('SIGKILL');
    await pausing.stop();
    const staged = read(`${consumerFile('db1', superuser)}.next`);
    expect(read(consumerFile('db1', superuser))).toBe(before);
    expect(await canLogin(sandbox, superuser, staged)).toBe(true); // what the crash left: the new one
    expect(await canLogin(sandbox, superuser, before)).toBe(false);

    const restarted = startProvisioner();
    await waitForReceipt(superuser, secretDigest(staged));
    const resumed = await baton('mesh', 'resume', id, '--inventory', path.join(tmp.dir, 'mesh.yaml'));
    expect(resumed.exitCode).toBe(0);
    expect(read(consumerFile('db1', superuser))).toBe(staged);
    // Converged: the next rotation of an ordinary pair goes through.
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0);
    expect(await canLogin(sandbox, 'web1_app', read(consumerFile('web1', 'web1_app')))).toBe(true);
    await restarted.stop();
  });

  it('with the provisioner stopped, --wait 1 exits 3 with the consumer ends staged and the old passwords working; resume after it starts applies exactly the staged secrets', async () => {
    const provisioner = startProvisioner();
    expect((await rotate(['--provider', PROVIDER])).exitCode).toBe(0);
    await provisioner.stop();
    const pairs = [['web1', 'web1_app'], ['web2', 'web2_app'], ['db1', superuser]] as const;
    const olds = pairs.map(([m, role]) => read(consumerFile(m, role)));

    const r = await rotate(['--provider', PROVIDER], '1');
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('Applied 0 of 3 credentials, 3 pending');
    const id = /Rotation (\S+):/.exec(r.stdout)![1]!;
    // The suggested command keeps the flags this run was given (the one builder).
    expect(r.stdout).toMatch(new RegExp(`baton (?:--\\S+ \\S+ )*mesh resume ${id}`));
    const staged = pairs.map(([m, role]) => read(`${consumerFile(m, role)}.next`));
    for (const [i, [m, role]] of pairs.entries()) {
      expect(read(consumerFile(m, role))).toBe(olds[i]);
      expect(read(providerFile(role))).toBe(staged[i]);
      expect(await canLogin(sandbox, role, olds[i]!)).toBe(true);
    }

    const restarted = startProvisioner();
    const resumed = await baton('mesh', 'resume', id, '--inventory', path.join(tmp.dir, 'mesh.yaml'), '--wait', '20');
    expect(resumed.stderr).toBe('');
    expect(resumed.exitCode).toBe(0);
    expect(resumed.stdout).toContain('No secret was generated.');
    const prepared = (await readJournal(path.join(tmp.dir, 'state'), id)).find((x) => x.phase === 'prepared')!;
    for (const [i, [m, role]] of pairs.entries()) {
      const now = read(consumerFile(m, role));
      expect(now).toBe(staged[i]);
      expect(secretDigest(now)).toBe(prepared.pairs.find((p) => p.role === role)!.digest);
      expect(await canLogin(sandbox, role, now)).toBe(true);
      expect(await canLogin(sandbox, role, olds[i]!)).toBe(false);
    }
    await restarted.stop();
  });
});

describe('the server log (log_statement = all)', () => {
  it('never shows a password any of these rotations delivered', async () => {
    expect(seen.size).toBeGreaterThan(10);
    const log = await serverLogSoFar(sandbox);
    expect(log).toContain('ALTER ROLE');
    for (const password of seen) expect(log).not.toContain(password);
  });
});
