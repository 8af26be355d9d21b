/**
 * The rotation against a REAL PostgreSQL (the embedded one), end to end through the built CLI:
 * `baton mesh seed | rotate | resume` on a local-transport mesh, the real provisioner
 * (`baton provision postgres --watch`) on "db1", and an app-like client that re-reads its
 * consumer file for every new connection, every 50 ms. The window is measured at `--interval 2`,
 * as the unit runs it; the other tests, which assert what ends where rather than how long it took,
 * cycle every 250 ms so that each rotation waits a quarter of a second for its receipt, not two.
 *
 * The provisioner logs in as a superuser role made for each test (`su_…`, a pair of the mesh
 * like any other), so rotating it never touches the sandbox's own superuser. Run
 * `npm run build` before running this file alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { readJournal } from '../../src/mesh/journal.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { dyingAfterProviderCommit, rotationDyingIn } from './dying-baton.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { usePostgresMesh } from '../helpers/postgres-mesh.js';
import { asSuperuser, canLogin, serverLogSoFar } from '../helpers/postgres.js';
import { startPasswordApp } from '../helpers/password-app.js';
import { BIN } from '../helpers/run-baton.js';
import { waitOn } from '../helpers/wait-on.js';

const PROVIDER = 'pg-main';
/** Every password any test saw: none may ever appear in the server's statement log. */
const seen = new Set<string>();
const children: ChildProcess[] = [];

beforeAll(() => {
  if (!existsSync(BIN)) throw new Error('bin/baton.js is missing: run `npm run build`.');
});
// The provisioner logs in as a superuser made for each test, seeded from a file that ends in a
// newline (the seed takes the password without it).
const suite = usePostgresMesh({
  logStatements: true,
  prefix: 'baton-mesh-pg-',
  seedFileText: (password) => `${password}\n`,
  batonTimeoutMs: 90_000,
});

const meshDirOn = (m: string) => suite.mesh.meshDirOn(m);
const consumerFile = (m: string, role: string) => suite.mesh.consumerFile(m, role);
const providerFile = (role: string) => suite.mesh.providerFile(role);
const inventory = () => suite.mesh.inventory;
const read = (file: string) => {
  const text = readFileSync(file, 'utf8');
  seen.add(text);
  return text;
};

const baton = (...args: string[]) => suite.mesh.baton(...args);

const rotate = (selector: string[], wait = '20') =>
  baton('mesh', 'rotate', ...selector, '--inventory', inventory(), '--yes', '--wait', wait);

/** The real provisioner, as the unit of docs/provisioner-service.md runs it (there at `--interval 2`). */
const startProvisioner = (intervalSeconds = 0.25) => suite.mesh.startProvisioner(intervalSeconds);

const startApp = (machine: string, role: string) =>
  startPasswordApp(suite.sandbox, () => consumerFile(machine, role), role);

async function waitForReceipt(role: string, digest: string): Promise<void> {
  await vi.waitFor(
    () => {
      const receipt = parseReceipt(
        readFileSync(path.join(meshDirOn('db1'), 'provides', PROVIDER, '.applied', role), 'utf8'),
      );
      if (receipt?.digest !== digest) throw new Error(`no receipt for ${role} with ${digest} yet`);
    },
    { timeout: 20_000, interval: 50 },
  );
}

beforeEach(() => {
  const { seeded, seededPassword, superuser } = suite.mesh;
  seen.add(seededPassword);
  expect(seeded.all).not.toContain(seededPassword);
  expect(read(consumerFile('db1', superuser))).toBe(seededPassword);
});

afterEach(() => {
  for (const child of children.splice(0))
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

describe('a rotation against a real PostgreSQL, with an app re-reading its file every 50 ms', () => {
  it("the app fails logins only inside a rotation's measured window (quiet: at most 2), and never one with a NEW password", async () => {
    const provisioner = startProvisioner(2);
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0); // creates the role
    const app = startApp('web1', 'web1_app');
    await vi.waitFor(() => expect(app.attempts.filter((a) => a.ok).length).toBeGreaterThan(3), {
      timeout: 10_000,
    });
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
      await vi.waitFor(
        () => expect(app.attempts.filter((a) => a.ok && a.password === fresh).length).toBeGreaterThan(2),
        { timeout: 10_000 },
      );
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
      for (const a of failedOld) expect(a.code).toBe('28P01');
      expect(summary).toContain('Rotated 1 credential (rotation');
      const window =
        /✓ pg-main applied web1_app; web1-app's file replaced (\d+) ms later \(the window\)/.exec(summary);
      expect(window, summary).not.toBeNull();
      // Only the window can cost logins: one attempt per 50 ms inside it, plus the one that read
      // the file just before the move and the one in flight. Quiet, the window is ~40 ms (at most
      // 2 failures); how long it gets under load is the bench's to say, not this test's.
      expect(failedOld.length).toBeLessThanOrEqual(Math.ceil(Number(window![1]) / 50) + 2);
      expect(summary).toMatch(
        /Window: new connections that still used the OLD password could fail .* — \d+ ms\./,
      );
    }
    // Outside the rotations, no login failed at all.
    const inside = new Set(rotations.flatMap((r) => app.attempts.slice(r.from, r.to)));
    expect(app.attempts.filter((a) => !a.ok && !inside.has(a))).toEqual([]);
    const records = readFileSync(path.join(suite.mesh.dir, 'state', 'mesh-journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const applied = records.filter((r) => r.phase === 'applied');
    expect(applied).toHaveLength(4);
    for (const record of applied) expect(record.windows_ms['pg-main:web1-app']).toEqual(expect.any(Number));
  });

  it("rotating the provisioner's own superuser pair alone, then an ordinary pair: both exit 0 and both log in", async () => {
    const { sandbox, superuser } = suite.mesh;
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
    const { sandbox, superuser } = suite.mesh;
    const provisioner = startProvisioner();
    const r = await rotate(['--provider', PROVIDER]);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('Rotated 3 credentials (rotation');
    expect(r.stdout).toContain('applied 3/3');
    for (const [machine, role] of [
      ['web1', 'web1_app'],
      ['web2', 'web2_app'],
      ['db1', superuser],
    ] as const) {
      expect(await canLogin(sandbox, role, read(consumerFile(machine, role)))).toBe(true);
    }
    // And again: the provisioner still logs in with what its consumer end now holds.
    const again = await rotate(['--provider', PROVIDER]);
    expect(again.exitCode).toBe(0);
    for (const [machine, role] of [
      ['web1', 'web1_app'],
      ['web2', 'web2_app'],
      ['db1', superuser],
    ] as const) {
      expect(await canLogin(sandbox, role, read(consumerFile(machine, role)))).toBe(true);
    }
    await provisioner.stop();
  });

  it('a provisioner SIGKILLed between ALTER ROLE and its receipt: the rotation rolls back and removes the receipt, and the restarted provisioner sets the old password again', async () => {
    const { sandbox, superuser } = suite.mesh;
    const provisioner = startProvisioner();
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0);
    await provisioner.stop();
    const marker = path.join(suite.mesh.dir, 'paused');
    const pausing = suite.mesh.spawnTracked(process.execPath, [
      '--import',
      'tsx',
      path.join(import.meta.dirname, 'fixtures/pausing-provisioner.ts'),
      meshDirOn('db1'),
      PROVIDER,
      sandbox.host,
      String(sandbox.port),
      superuser,
      'web1_app',
      marker,
    ]);
    const before = read(consumerFile('web1', 'web1_app'));
    const r = await rotate(['--pair', `${PROVIDER}:web1-app`], '3');
    await waitOn(() => expect(existsSync(marker)).toBe(true), pausing.child, 'the pausing provisioner');
    // The database took the new password, no receipt came: the pair was rolled back, and the words do not claim the old one works.
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('rolled back');
    expect(r.stdout).toContain('no receipt confirms the old password yet');
    expect(r.stdout).not.toContain('still works');
    pausing.child.kill('SIGKILL');
    await pausing.stop();
    expect(read(consumerFile('web1', 'web1_app'))).toBe(before);
    expect(read(providerFile('web1_app'))).toBe(before);
    expect(existsSync(`${consumerFile('web1', 'web1_app')}.next`)).toBe(false);
    expect(await canLogin(sandbox, 'web1_app', before)).toBe(false); // what the crash left: the new one in the database

    const restarted = startProvisioner();
    await waitForReceipt('web1_app', secretDigest(before));
    expect(await canLogin(sandbox, 'web1_app', before)).toBe(true);
    const status = await baton(
      'mesh',
      'status',
      '--pair',
      `${PROVIDER}:web1-app`,
      '--inventory',
      inventory(),
    );
    expect(status.exitCode, status.stdout).toBe(0);
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0);
    expect(await canLogin(sandbox, 'web1_app', read(consumerFile('web1', 'web1_app')))).toBe(true);
    await restarted.stop();
  });

  it('with the provisioner stopped, --wait 0.3 rolls every pair back (exit 3, superuser pair included); the provisioner started afterwards: 0 failed logins, and it still logs in', async () => {
    const { sandbox, superuser } = suite.mesh;
    const provisioner = startProvisioner();
    expect((await rotate(['--provider', PROVIDER])).exitCode).toBe(0);
    await provisioner.stop();
    const pairs = [
      ['web1', 'web1_app'],
      ['web2', 'web2_app'],
      ['db1', superuser],
    ] as const;
    const olds = pairs.map(([m, role]) => read(consumerFile(m, role)));

    // Nobody answers: a short wait rolls back as surely as a long one.
    const r = await rotate(['--provider', PROVIDER], '0.3');
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain(
      'rolled back (not every provider confirmed in time): 0 of 3 credentials finished, 3 rolled back.',
    );
    expect(r.stdout).toContain('Nothing is left to do');
    expect(r.stdout).not.toContain('still works');
    for (const [i, [m, role]] of pairs.entries()) {
      expect(read(consumerFile(m, role))).toBe(olds[i]);
      expect(read(providerFile(role))).toBe(olds[i]);
      expect(existsSync(`${consumerFile(m, role)}.next`)).toBe(false);
    }
    // The apps re-read their files for every connection while the provisioner comes back.
    const apps = [startApp('web1', 'web1_app'), startApp('web2', 'web2_app')];
    const restarted = startProvisioner();
    for (const [i, [, role]] of pairs.entries()) await waitForReceipt(role, secretDigest(olds[i]!));
    // The apps keep connecting through two more whole cycles of the restarted provisioner (the
    // first heartbeat seen may predate the receipts) and past the 20 attempts asserted below:
    // what it does once it has caught up is in the window too, not only its first pass.
    await suite.mesh.cyclesOf(restarted, 3);
    await vi.waitFor(() => expect(Math.min(...apps.map((a) => a.attempts.length))).toBeGreaterThan(20), {
      timeout: 20_000,
      interval: 50,
    });
    for (const app of apps) await app.stop();
    for (const app of apps) {
      expect(app.attempts.length).toBeGreaterThan(20);
      expect(app.attempts.filter((a) => !a.ok)).toEqual([]);
    }
    for (const [i, [, role]] of pairs.entries()) expect(await canLogin(sandbox, role, olds[i]!)).toBe(true);
    // The provisioner still logs in: the next rotation of its own pair goes through.
    expect((await rotate(['--pair', `${PROVIDER}:provisioner`])).exitCode).toBe(0);
    expect(await canLogin(sandbox, superuser, read(consumerFile('db1', superuser)))).toBe(true);
    expect(restarted.output()).not.toContain('refused the superuser login');
    await restarted.stop();
  });

  it("the superuser's new password applied, then the provisioner died and baton rolled the pair back: the provisioner logs in with the rolled-back password and puts the old one back", async () => {
    const { sandbox, superuser } = suite.mesh;
    const provisionOnce = async () => {
      const once = suite.mesh.spawnTracked(process.execPath, [...suite.mesh.provisionerArgs(), '--once']);
      const code = await new Promise<number | null>((resolve) => once.child.once('close', resolve));
      expect(code, once.output()).toBe(0);
      return once.output();
    };
    await provisionOnce(); // the seeded password confirmed: a receipt, as before any rotation
    const old = read(providerFile(superuser));
    const kept = path.join(path.dirname(providerFile(superuser)), `.${superuser}.rolled-back`);
    // Stand-in for "the provisioner applied the new password, then was killed before its receipt".
    const rotation = rotate(['--pair', `${PROVIDER}:provisioner`], '1');
    let fresh = old;
    await vi.waitFor(
      () => {
        fresh = readFileSync(providerFile(superuser), 'utf8');
        if (fresh === old) throw new Error('no provider commit yet');
      },
      { timeout: 20_000, interval: 5 },
    );
    seen.add(fresh);
    const verifier = await scramVerifier(Buffer.from(fresh));
    await asSuperuser(sandbox, (c) => c.query(`ALTER ROLE ${superuser} PASSWORD '${verifier}'`));
    const r = await rotation;
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toContain('rolled back');
    expect(r.all).not.toContain(fresh);
    // The lockout: both files hold the old password, which the database refuses.
    expect(read(providerFile(superuser))).toBe(old);
    expect(read(consumerFile('db1', superuser))).toBe(old);
    expect(await canLogin(sandbox, superuser, old)).toBe(false);
    expect(statSync(kept).mode & 0o777).toBe(0o600);

    const first = await provisionOnce();
    expect(first).toContain(
      `logged in as ${superuser} with the rolled-back password (${kept}); putting the previous one back`,
    );
    expect(first).not.toContain(fresh);
    expect(first).not.toContain(old);
    expect(await canLogin(sandbox, superuser, old)).toBe(true);
    const receipt = parseReceipt(
      readFileSync(path.join(meshDirOn('db1'), 'provides', PROVIDER, '.applied', superuser), 'utf8'),
    );
    expect(receipt?.digest).toBe(secretDigest(old));
    // The next cycle logs in with its own file again and forgets the rolled-back password.
    expect(await provisionOnce()).not.toContain('rolled-back');
    expect(existsSync(kept)).toBe(false);
  });

  it('baton killed between the provider commit and the consumer commit (provisioner stopped): status exit 3 names the pair and the command, rotate refuses with nothing generated, resume finishes it and every consumer logs in', async () => {
    const { sandbox, superuser } = suite.mesh;
    const provisioner = startProvisioner();
    expect((await rotate(['--provider', PROVIDER])).exitCode).toBe(0);
    await provisioner.stop();
    const inv = loadInventory(inventory());
    const journalDir = suite.mesh.stateDir;
    const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(
      dying,
      {
        id: 'rot-kill',
        plan: planRotation(inv, { by: 'provider', name: PROVIDER }),
        inventory: inv,
        journalDir: journalDir,
      },
      { waitMs: 600_000 },
    );
    await dying.dead;
    await vi.waitFor(
      async () =>
        expect((await readJournal(journalDir, 'rot-kill')).map((x) => x.phase)).toContain('committed'),
      { timeout: 10_000 },
    );
    const status = await baton('mesh', 'status', '--inventory', inventory());
    expect(status.exitCode).toBe(3);
    expect(status.stdout).toMatch(/staged +pg-main:web1-app/);
    expect(status.stdout).toMatch(
      /finish it: baton (?:--\S+ \S+ )*mesh resume rot-kill --inventory \S+, or roll it back: baton (?:--\S+ \S+ )*mesh rollback rot-kill/,
    );
    const journalBefore = readFileSync(path.join(journalDir, 'mesh-journal.jsonl'), 'utf8');
    const fileBefore = read(`${consumerFile('web1', 'web1_app')}.next`);
    const refused = await rotate(['--pair', `${PROVIDER}:web1-app`]);
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr).toContain(
      'mesh rotate refused: 1 pair has a rotation that did not finish — pg-main:web1-app (rotation rot-kill)',
    );
    expect(readFileSync(path.join(journalDir, 'mesh-journal.jsonl'), 'utf8')).toBe(journalBefore);
    expect(read(`${consumerFile('web1', 'web1_app')}.next`)).toBe(fileBefore);
    const restarted = startProvisioner();
    const resumed = await baton('mesh', 'resume', 'rot-kill', '--inventory', inventory(), '--wait', '20');
    expect(resumed.stderr).toBe('');
    expect(resumed.exitCode).toBe(0);
    for (const [m, role] of [
      ['web1', 'web1_app'],
      ['web2', 'web2_app'],
      ['db1', superuser],
    ] as const)
      expect(await canLogin(sandbox, role, read(consumerFile(m, role)))).toBe(true);
    expect((await baton('mesh', 'status', '--inventory', inventory())).exitCode).toBe(0);
    await restarted.stop();
  });

  it('rotate --yes | head -1 with the provisioner running: the pair ends applied or rolled back, the journal says which, and the app logs in', async () => {
    const { sandbox } = suite.mesh;
    const provisioner = startProvisioner();
    expect((await rotate(['--pair', `${PROVIDER}:web1-app`])).exitCode).toBe(0);
    const child = spawn(
      'sh',
      [
        '-c',
        `"${process.execPath}" "${BIN}" --state-dir "${suite.mesh.stateDir}" mesh rotate --pair ${PROVIDER}:web1-app --inventory "${inventory()}" --yes --wait 20 | head -1`,
      ],
      { cwd: suite.mesh.dir, env: { ...process.env, NO_COLOR: '1' } },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).toBe('');
    const records = readFileSync(path.join(suite.mesh.dir, 'state', 'mesh-journal.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; phase: string });
    const last = records.at(-1)!;
    expect(['applied', 'rolled-back']).toContain(last.phase);
    expect(await canLogin(sandbox, 'web1_app', read(consumerFile('web1', 'web1_app')))).toBe(true);
    expect(existsSync(`${consumerFile('web1', 'web1_app')}.next`)).toBe(false);
    await provisioner.stop();
  });
});

describe('the server log (log_statement = all)', () => {
  it('never shows a password any of these rotations delivered', async () => {
    expect(seen.size).toBeGreaterThan(10);
    const log = await serverLogSoFar(suite.sandbox);
    expect(log).toContain('ALTER ROLE');
    for (const password of seen) expect(log).not.toContain(password);
  });
});
