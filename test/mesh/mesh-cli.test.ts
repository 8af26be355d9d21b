import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { JOURNAL_FILE, readJournal } from '../../src/mesh/journal.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { dyingAfterProviderCommit, rotationDyingIn } from './dying-baton.js';
import {
  intentPhases,
  makeTempDir,
  snapshotDir,
  withoutRolledBack,
  withoutRotationRecords,
} from '../helpers/fs-snapshot.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { startReceiptWriter } from './receipt-writer.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-mesh-cli-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => tmp.cleanup());

/** Spawned asynchronously: a test's stand-in provisioner writes receipts meanwhile. */
function baton(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BATON, '--state-dir', path.join(tmp.dir, 'state'), ...args], {
    cwd: tmp.dir,
    env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);

describe('baton mesh (the built CLI, local transport)', async () => {
  it('plan lists every holder, what it receives and each window, and changes nothing', async () => {
    const before = snapshotDir(tmp.dir);
    const r = await baton('mesh', 'plan', '--provider', 'pg-main', '--inventory', inventory, '--json');
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan.gate).toBe('open');
    expect(
      plan.holders.map((h: { machine: string; receives: { path: string }[] }) => [
        h.machine,
        h.receives.map((d) => d.path),
      ]),
    ).toEqual([
      [
        'db1',
        ['/var/lib/baton/mesh/provides/pg-main/web1_app', '/var/lib/baton/mesh/provides/pg-main/web2_app'],
      ],
      ['web1', ['/var/lib/baton/mesh/consumes/pg-main/web1_app']],
      ['web2', ['/var/lib/baton/mesh/consumes/pg-main/web2_app']],
    ]);
    expect(plan.pairs[1].window).toBe(
      "from pg-main applying the new password for web2_app until web2-app's file is replaced (right after the receipt is read), new connections from web2-app that still use the OLD password fail",
    );
    expect(snapshotDir(tmp.dir)).toEqual(before);
    const text = await baton('mesh', 'plan', '--consumer', 'web1-app', '--inventory', inventory);
    expect(text.stdout).toContain('✓ web1 (local machines/web1) receives consumes/pg-main/web1_app');
    expect(text.stdout).toContain(
      "Order: provider ends first; each consumer end only after its provider's receipt shows the database has the new password.",
    );
    // The suggested command keeps the global flags and the inventory this run was given.
    expect(text.stdout).toMatch(
      /Gate open: all 2 machines resolved; `baton (?:--\S+ \S+ )*mesh rotate --consumer web1-app --inventory \S+` would rotate 1 credential\./,
    );
    expect(text.stdout).toContain('Nothing was changed.');
  });

  it('rotate --yes delivers one secret per pair to both ends, journals digests and each measured window, and prints no secret', async () => {
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    const r = await baton(
      'mesh',
      'rotate',
      '--provider',
      'pg-main',
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '10',
    ).finally(() => provisioner.stop());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const s1 = readFileSync(live('db1', 'provides/pg-main/web1_app'), 'utf8');
    const s2 = readFileSync(live('db1', 'provides/pg-main/web2_app'), 'utf8');
    expect(readFileSync(live('web1', 'consumes/pg-main/web1_app'), 'utf8')).toBe(s1);
    expect(readFileSync(live('web2', 'consumes/pg-main/web2_app'), 'utf8')).toBe(s2);
    expect(s1).not.toBe(s2);
    const journalFile = path.join(tmp.dir, 'state', JOURNAL_FILE);
    const journalText = readFileSync(journalFile, 'utf8');
    expect(statSync(journalFile).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(journalFile)).mode & 0o777).toBe(0o700);
    expect(
      journalText
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).phase),
    ).toEqual(['resolved', 'prepared', 'committed', 'applied']);
    for (const secret of [s1, s2]) {
      expect(r.stdout).not.toContain(secret);
      expect(journalText).not.toContain(secret);
      expect(journalText).toContain(secretDigest(secret));
    }
    expect(r.stdout).toMatch(/Rotated 2 credentials \(rotation \S+\)\./);
    expect(r.stdout).toContain(
      `db1: /var/lib/baton/mesh/provides/pg-main/web1_app replaced (${secretDigest(s1).slice(0, 19)})`,
    );
    expect(r.stdout).toMatch(
      /✓ pg-main applied web1_app; web1-app's file replaced \d+ ms later \(the window\)/,
    );
    const applied = JSON.parse(journalText.trim().split('\n').at(-1)!);
    expect(Object.keys(applied.windows_ms).sort()).toEqual(['pg-main:web1-app', 'pg-main:web2-app']);
    for (const ms of Object.values(applied.windows_ms)) expect(ms).toEqual(expect.any(Number));
  });

  it('with no receipt within --wait, every pair is rolled back (exit 3): ends as before, nothing staged or kept, the journal says so, and the next rotation is accepted', async () => {
    const olds = { web1: 'old-web1-secret', web2: 'old-web2-secret' };
    for (const [m, old] of Object.entries(olds)) {
      for (const file of [live(m, `consumes/pg-main/${m}_app`), live('db1', `provides/pg-main/${m}_app`)]) {
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, old, { mode: 0o600 });
      }
    }
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const r = await baton(
      'mesh',
      'rotate',
      '--provider',
      'pg-main',
      '--inventory',
      inventory,
      '--yes',
      // Nobody answers: a short wait proves the roll-back as well as a long one (each second is
      // waited twice, for the receipt and then for the old one).
      '--wait',
      '0.3',
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toBe('');
    const id = /Rotation (\S+):/.exec(r.stdout)![1]!;
    expect(r.stdout).toContain(
      `Rotation ${id} rolled back (not every provider confirmed in time): 0 of 2 credentials finished, 2 rolled back.`,
    );
    expect(r.stdout).toContain('holds what it held before this rotation');
    expect(r.stdout).not.toContain('still works');
    expect(r.stdout.trim().split('\n').at(-1)).toMatch(
      /^Nothing is left to do: every pair is finished or rolled back\. Once the provisioner runs, rotate again with baton (?:--\S+ \S+ )*mesh rotate (?:--pair pg-main:\S+ )+--inventory \S+ --wait 0\.3$/,
    );
    // Every file exactly as before: no .next, no kept previous file; the passwords taken away
    // are kept aside, owner-only, in case the database already holds them.
    const after = snapshotDir(path.join(tmp.dir, 'machines'));
    expect(withoutRotationRecords(withoutRolledBack(after))).toEqual(before);
    // The provider keeps the rotation's last word: taken back, under its id.
    expect(intentPhases(path.join(tmp.dir, 'machines'))).toEqual({
      'pg-main:web1-app': 'rolled-back',
      'pg-main:web2-app': 'rolled-back',
    });
    expect(
      Object.entries(after)
        .filter(([k]) => k.endsWith('.rolled-back'))
        .map(([k, v]) => [path.basename(k), v.split(' ')[1]])
        .sort(),
    ).toEqual([
      ['.web1_app.rolled-back', '600'],
      ['.web2_app.rolled-back', '600'],
    ]);
    const records = await readJournal(path.join(tmp.dir, 'state'), id);
    expect(records.map((x) => x.phase)).toEqual(['resolved', 'prepared', 'committed', 'rolled-back']);
    expect(records.at(-1)!.rolled_back?.map((x) => x.result)).toEqual(['rolled-back', 'rolled-back']);
    const status = await baton('mesh', 'status', '--inventory', inventory);
    expect(status.stdout).toContain(`last rotation ${id} rolled-back`);
    expect(status.stdout).not.toMatch(/rotated \d+s ago;/); // a pair's age changes only when it was applied (the journal's age has no "(file mtime)")
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    const again = await baton(
      'mesh',
      'rotate',
      '--provider',
      'pg-main',
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '10',
    ).finally(() => provisioner.stop());
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Rotated 2 credentials');
    expect(
      readdirSync(live('db1', 'provides/pg-main')).filter(
        (n) => n.endsWith('.prev') || n.endsWith('.rolled-back'),
      ),
    ).toEqual([]);
  });

  for (const signal of ['SIGHUP'] as const) {
    it(`${signal} while receipts are awaited rolls every pair back and says so per pair, ending with nothing left to do (exit 3)`, async () => {
      for (const m of ['web1', 'web2']) {
        for (const file of [live(m, `consumes/pg-main/${m}_app`), live('db1', `provides/pg-main/${m}_app`)]) {
          mkdirSync(path.dirname(file), { recursive: true });
          writeFileSync(file, `old-${m}`, { mode: 0o600 });
        }
      }
      const before = snapshotDir(path.join(tmp.dir, 'machines'));
      const child = spawn(
        process.execPath,
        [
          BATON,
          '--state-dir',
          path.join(tmp.dir, 'state'),
          'mesh',
          'rotate',
          '--provider',
          'pg-main',
          '--inventory',
          inventory,
          '--yes',
          '--wait',
          '60',
        ],
        {
          cwd: tmp.dir,
          env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      await new Promise<void>((resolve) =>
        child.stdout.on('data', (c: Buffer) => {
          stdout += c.toString('utf8');
          if (stdout.includes('committed 2/2 provider ends')) resolve();
        }),
      );
      const started = Date.now();
      child.kill(signal);
      const code = await closed;
      // The roll-back looks for the old receipt for at most 2 s after a signal, not the 60 s --wait.
      expect(Date.now() - started).toBeLessThan(30_000);
      expect(stderr).toBe('');
      expect(code).toBe(3);
      expect(stdout).toContain(
        `rolled back (interrupted by ${signal}): 0 of 2 credentials finished, 2 rolled back.`,
      );
      expect(stdout).not.toContain('committed 0/');
      expect(stdout.trim().split('\n').at(-1)).toMatch(/^Nothing is left to do/);
      expect(withoutRotationRecords(withoutRolledBack(snapshotDir(path.join(tmp.dir, 'machines'))))).toEqual(
        before,
      );
      expect(Object.values(intentPhases(path.join(tmp.dir, 'machines')))).toEqual([
        'rolled-back',
        'rolled-back',
      ]);
    });
  }

  it('a repeated --pair selects the union of the pairs, and the preview names each', async () => {
    const r = await baton(
      'mesh',
      'plan',
      '--pair',
      'pg-main:web1-app',
      '--pair',
      'pg-main:web2-app',
      '--inventory',
      inventory,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'Plan --pair pg-main:web1-app --pair pg-main:web2-app: 2 credentials on 3 machines',
    );
  });

  it('plan into a closed pipe ends quietly: no stack trace', async () => {
    const child = spawn(
      'sh',
      [
        '-c',
        `"${process.execPath}" "${BATON}" --state-dir "${path.join(tmp.dir, 'state')}" mesh plan --provider pg-main --inventory "${inventory}" | head -1`,
      ],
      {
        cwd: tmp.dir,
        env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
      },
    );
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    await new Promise((resolve) => child.on('close', resolve));
    expect(stdout.trim().split('\n')).toHaveLength(1);
    expect(stderr).toBe('');
  });

  it('seed installs one password into both ends of a pair (0600), journals its digest, and never prints it', async () => {
    const secretFile = path.join(tmp.dir, 'superuser.password');
    writeFileSync(secretFile, 'Seeded-Password-123\n', { mode: 0o600 });
    const r = await baton(
      'mesh',
      'seed',
      '--pair',
      'pg-main:web1-app',
      '--from-file',
      secretFile,
      '--inventory',
      inventory,
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const file of [
      live('db1', 'provides/pg-main/web1_app'),
      live('web1', 'consumes/pg-main/web1_app'),
    ]) {
      expect(readFileSync(file, 'utf8')).toBe('Seeded-Password-123');
      expect(statSync(file).mode & 0o777).toBe(0o600);
    }
    expect(r.stdout).toContain(`holds ${secretDigest('Seeded-Password-123').slice(0, 19)} (0600)`);
    expect(r.stdout).not.toContain('Seeded-Password-123');
    const journalText = readFileSync(path.join(tmp.dir, 'state', JOURNAL_FILE), 'utf8');
    expect(JSON.parse(journalText).phase).toBe('seeded');
    expect(journalText).not.toContain('Seeded-Password-123');
    expect(existsSync(live('web2', 'consumes/pg-main/web2_app'))).toBe(false);
  });

  it('seed refuses a file that is not one password, naming it, and writes nothing anywhere', async () => {
    const secretFile = path.join(tmp.dir, 'two-lines.password');
    writeFileSync(secretFile, 'first-line\nsecond-line\n', { mode: 0o600 });
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const r = await baton(
      'mesh',
      'seed',
      '--pair',
      'pg-main:web1-app',
      '--from-file',
      secretFile,
      '--inventory',
      inventory,
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('The secret file contains a line break');
    expect(r.stderr).toContain(secretFile);
    expect(r.stderr).toContain('Nothing was sent.');
    expect(r.stderr + r.stdout).not.toContain('first-line');
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it.each(['public', 'none', 'current_user', 'session_user', 'current_role', 'pg_monitor'])(
    'an inventory giving a consumer the reserved role %s is refused at load (exit 2, naming consumer and file), and nothing is delivered',
    async (role) => {
      writeFileSync(
        inventory,
        readFileSync(inventory, 'utf8').replace(
          '{ name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
          `{ name: web2-app, machine: web2, reads: each-connection, uses: [pg-main], role: ${role} }`,
        ),
      );
      const before = snapshotDir(path.join(tmp.dir, 'machines'));
      const r = await baton(
        'mesh',
        'rotate',
        '--provider',
        'pg-main',
        '--inventory',
        inventory,
        '--yes',
        '--wait',
        '0',
      );
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`consumer "web2-app": role name "${role}" is reserved by PostgreSQL`);
      expect(r.stderr).toContain(inventory);
      expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
    },
  );

  it('rotate stops at the gate with exit 4 when one machine is unreachable, naming it, and nothing changes on disk', async () => {
    // web2's directory is gone: the local transport's "machine off the network".
    renameSync(path.join(tmp.dir, 'machines/web2'), path.join(tmp.dir, 'web2-unplugged'));
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const r = await baton(
      'mesh',
      'rotate',
      '--provider',
      'pg-main',
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '0',
    );
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('Gate closed: 1 of 3 machines could not be resolved.');
    expect(r.stdout).toContain(`web2: its directory ${path.join(tmp.dir, 'machines/web2')} does not exist`);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it('rotate --yes with a journal that cannot be read or written stops before anything is staged: exit 1, naming the journal and what to do', async () => {
    const journalFile = path.join(tmp.dir, 'state', JOURNAL_FILE);
    mkdirSync(journalFile, { recursive: true }); // a directory where the journal file goes: every read and append fails
    const machines = path.join(tmp.dir, 'machines');
    const before = snapshotDir(machines);
    const r = await baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('The rotation journal could not be read (EISDIR).');
    expect(r.stderr).toContain(journalFile);
    expect(r.stderr).toContain(
      'Set journal_dir in baton.yaml'.slice(0, 0) + 'Pass the --state-dir / journal_dir the rotations use',
    );
    expect(r.stderr).toContain('Nothing was generated and nothing was sent.');
    expect(snapshotDir(machines)).toEqual(before);
  });

  it('rotate without a terminal and without --yes refuses before resolving anything (exit 2)', async () => {
    const before = snapshotDir(tmp.dir);
    const r = await baton('mesh', 'rotate', '--consumer', 'web1-app', '--inventory', inventory);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('add --yes');
    expect(r.stderr).toContain('Nothing was generated and nothing was sent.');
    expect(snapshotDir(tmp.dir)).toEqual(before);
  });

  it('two selectors, or an unknown consumer, are usage errors (exit 2)', async () => {
    expect(
      (await baton('mesh', 'plan', '--consumer', 'web1-app', '--machine', 'db1', '--inventory', inventory))
        .code,
    ).toBe(2);
    const r = await baton('mesh', 'plan', '--consumer', 'web9-app', '--inventory', inventory);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('The inventory has no consumer named "web9-app".');
  });

  it('a rotation killed between the provider commit and the consumer commit: status names it (exit 3), rotate and seed refuse it with nothing generated, resume finishes it', async () => {
    const inv = loadInventory(inventory);
    const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
    const journalDir = path.join(tmp.dir, 'state');
    const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(dying, { id: 'rot-int', plan: plan, inventory: inv, journalDir: journalDir });
    await dying.dead;
    await waitUntil(async () =>
      (await readJournal(journalDir, 'rot-int')).some((x) => x.phase === 'committed'),
    );
    expect(existsSync(`${live('web2', 'consumes/pg-main/web2_app')}.next`)).toBe(true);
    expect(existsSync(live('db1', 'provides/pg-main/.web2_app.prev'))).toBe(true);
    const status = await baton('mesh', 'status', '--inventory', inventory);
    expect(status.code).toBe(3);
    expect(status.stdout).toMatch(/staged +pg-main:web2-app/);
    expect(status.stdout).toContain('a rotation stopped between the provider commit and the consumer commit');
    expect(status.stdout).toMatch(
      /finish it: baton (?:--\S+ \S+ )*mesh resume rot-int --inventory \S+, or roll it back: baton (?:--\S+ \S+ )*mesh rollback rot-int/,
    );
    const machines = path.join(tmp.dir, 'machines');
    const before = snapshotDir(machines);
    const journalBefore = readFileSync(path.join(journalDir, JOURNAL_FILE), 'utf8');
    const refused = await baton(
      'mesh',
      'rotate',
      '--pair',
      'pg-main:web1-app',
      '--inventory',
      inventory,
      '--yes',
    );
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(
      'mesh rotate refused: 1 pair has a rotation that did not finish — pg-main:web1-app (rotation rot-int)',
    );
    expect(refused.stderr).toMatch(
      /finish it with baton (?:--\S+ \S+ )*mesh resume rot-int --inventory \S+ or roll it back with baton (?:--\S+ \S+ )*mesh rollback rot-int/,
    );
    const secretFile = path.join(tmp.dir, 'pw');
    writeFileSync(secretFile, 'Seeded-Password-123\n', { mode: 0o600 });
    const seed = await baton(
      'mesh',
      'seed',
      '--pair',
      'pg-main:web2-app',
      '--from-file',
      secretFile,
      '--inventory',
      inventory,
    );
    expect(seed.code).toBe(3);
    expect(seed.stderr).toContain('mesh seed refused');
    expect(snapshotDir(machines)).toEqual(before);
    expect(readFileSync(path.join(journalDir, JOURNAL_FILE), 'utf8')).toBe(journalBefore);
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const r = await baton('mesh', 'resume', 'rot-int', '--inventory', inventory, '--wait', '5');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(
        'Resumed rotation rot-int: all 2 credentials applied; 2 files renamed now, 2 already live. No secret was generated.',
      );
      const prepared = (await readJournal(journalDir, 'rot-int')).find((x) => x.phase === 'prepared')!;
      for (const p of prepared.pairs)
        expect(secretDigest(readFileSync(live(p.consumer_machine, `consumes/pg-main/${p.role}`)))).toBe(
          p.digest,
        );
      expect(readdirSync(live('db1', 'provides/pg-main')).filter((n) => n.endsWith('.prev'))).toEqual([]);
      const after = await baton('mesh', 'status', '--inventory', inventory);
      expect(after.code).toBe(0);
    } finally {
      provisioner.stop();
    }
  });

  it('the same leftover taken back with mesh rollback: both ends as before the rotation, exit 0, and status is clean', async () => {
    for (const m of ['web1', 'web2']) {
      for (const file of [live(m, `consumes/pg-main/${m}_app`), live('db1', `provides/pg-main/${m}_app`)]) {
        mkdirSync(path.dirname(file), { recursive: true });
        writeFileSync(file, `old-${m}`, { mode: 0o600 });
      }
    }
    // The provisioner ran (old receipts), then stopped; baton is killed between the commits.
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    await waitUntil(async () => existsSync(live('db1', 'provides/pg-main/.applied/web2_app')));
    provisioner.stop();
    const files = (snap: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(withoutRotationRecords(withoutRolledBack(snap))).filter(
          ([k]) => !k.includes('.applied'),
        ),
      );
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const inv = loadInventory(inventory);
    const journalDir = path.join(tmp.dir, 'state');
    const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(dying, {
      id: 'rot-kill',
      plan: planRotation(inv, { by: 'provider', name: 'pg-main' }),
      inventory: inv,
      journalDir: journalDir,
    });
    await dying.dead;
    await waitUntil(async () =>
      (await readJournal(journalDir, 'rot-kill')).some((x) => x.phase === 'committed'),
    );
    const r = await baton('mesh', 'rollback', 'rot-kill', '--inventory', inventory, '--wait', '0.2');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      'Rotation rot-kill rolled back (mesh rollback): 0 of 2 credentials finished, 2 rolled back.',
    );
    expect(r.stdout).toContain(
      'no receipt confirms the old password yet: the provisioner sets it again on its next cycle',
    );
    expect(r.stdout).toContain('Nothing is left to do');
    // Every file as before (the receipts were removed, so the provisioner confirms the old passwords again).
    expect(files(snapshotDir(path.join(tmp.dir, 'machines')))).toEqual(files(before));
    expect(intentPhases(path.join(tmp.dir, 'machines'))).toEqual({
      'pg-main:web1-app': 'rolled-back',
      'pg-main:web2-app': 'rolled-back',
    });
    const restarted = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      await waitUntil(async () => existsSync(live('db1', 'provides/pg-main/.applied/web2_app')));
      const status = await baton('mesh', 'status', '--inventory', inventory);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain('last rotation rot-kill rolled-back');
    } finally {
      restarted.stop();
    }
  });

  it('two rotations of the same mesh at once: the second exits 5 naming the holder, and changes nothing', async () => {
    const inv = loadInventory(inventory);
    const journalDir = path.join(tmp.dir, 'state');
    const { withMeshLock } = await import('../../src/mesh/mesh-lock.js');
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let locked: () => void = () => undefined;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = withMeshLock(
      journalDir,
      meshIdentity(inv),
      'mesh rotate --pair pg-main:web1-app',
      async () => {
        locked();
        await held;
      },
    );
    await isLocked;
    const before = snapshotDir(tmp.dir);
    const r = await baton('mesh', 'rotate', '--pair', 'pg-main:web1-app', '--inventory', inventory, '--yes');
    expect(r.code).toBe(5);
    expect(r.stderr).toContain(
      `Another baton is working on this mesh: mesh rotate --pair pg-main:web1-app, pid ${process.pid} on ${os.hostname()} since`,
    );
    expect(snapshotDir(tmp.dir)).toEqual(before);
    release();
    await holder;
  });

  it('two inventories sharing one journal directory: each status shows only its own history, and prints where the journal is', async () => {
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const r = await baton(
        'mesh',
        'rotate',
        '--provider',
        'pg-main',
        '--inventory',
        inventory,
        '--yes',
        '--wait',
        '10',
      );
      expect(r.code).toBe(0);
    } finally {
      provisioner.stop();
    }
    const other = makeTempDir('baton-mesh-other-');
    try {
      const otherInventory = writeLocalMesh(other.dir);
      const mine = await baton('mesh', 'status', '--inventory', inventory);
      const theirs = await baton('mesh', 'status', '--inventory', otherInventory);
      expect(mine.stdout).toMatch(/last rotation \S+ applied/);
      expect(theirs.stdout).not.toContain('last rotation');
      expect(theirs.stdout).toContain(
        `Journal: ${path.join(tmp.dir, 'state', JOURNAL_FILE)} (mesh ${meshIdentity(loadInventory(otherInventory))}; only its records are read).`,
      );
      // Never delivered: status suggests seeding a role that exists, and how to create one that does not.
      expect(theirs.stdout.replace(/\s+/g, ' ')).toMatch(
        /next: if the role exists in the database, seed it with the password it has: baton (?:--\S+ \S+ )*mesh seed --pair pg-main:web1-app --from-file <FILE>(?: --inventory \S+)?; if it does not exist yet, create it: baton (?:--\S+ \S+ )*mesh rotate --pair pg-main:web1-app(?: --inventory \S+)? \(the provisioner on db1 creates the role it is delivered\)/,
      );
      // As data: FILE is a placeholder the operator fills in, and the args carry the inventory.
      const json = JSON.parse(
        (await baton('mesh', 'status', '--inventory', otherInventory, '--json')).stdout,
      ) as { pairs: { next_steps?: { args: string[]; placeholders: { name: string }[] }[] }[] };
      const seed = json.pairs.flatMap((p) => p.next_steps ?? []).find((n) => n.args.includes('seed'))!;
      expect(seed.args).toEqual([
        '--state-dir',
        path.join(tmp.dir, 'state'),
        'mesh',
        'seed',
        '--pair',
        'pg-main:web1-app',
        '--from-file',
        '<FILE>',
        '--inventory',
        otherInventory,
      ]);
      expect(seed.placeholders.map((p) => p.name)).toEqual(['FILE']);
    } finally {
      other.cleanup();
    }
  });
});

async function waitUntil(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}
