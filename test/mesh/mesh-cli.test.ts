import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { JOURNAL_FILE, readJournal } from '../../src/mesh/journal.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { TransportError } from '../../src/mesh/transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
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

const live = (machine: string, file: string) => path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);

describe('baton mesh (the built CLI, local transport)', async () => {
  it('plan lists every holder, what it receives and each window, and changes nothing', async () => {
    const before = snapshotDir(tmp.dir);
    const r = await baton('mesh', 'plan', '--provider', 'pg-main', '--inventory', inventory, '--json');
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan.gate).toBe('open');
    expect(plan.holders.map((h: { machine: string; receives: { path: string }[] }) => [h.machine, h.receives.map((d) => d.path)])).toEqual([
      ['db1', ['/var/lib/baton/mesh/provides/pg-main/web1_app', '/var/lib/baton/mesh/provides/pg-main/web2_app']],
      ['web1', ['/var/lib/baton/mesh/consumes/pg-main/web1_app']],
      ['web2', ['/var/lib/baton/mesh/consumes/pg-main/web2_app']],
    ]);
    expect(plan.pairs[1].window).toBe("from pg-main applying the new password for web2_app until web2-app's file is replaced (right after the receipt is read), new connections from web2-app that still use the OLD password fail");
    expect(snapshotDir(tmp.dir)).toEqual(before);
    const text = await baton('mesh', 'plan', '--consumer', 'web1-app', '--inventory', inventory);
    expect(text.stdout).toContain('✓ web1 (local machines/web1) receives consumes/pg-main/web1_app');
    expect(text.stdout).toContain("Order: provider ends first; each consumer end only after its provider's receipt shows the database has the new password.");
    // The suggested command keeps the global flags and the inventory this run was given.
    expect(text.stdout).toMatch(/Gate open: all 2 machines resolved; `baton (?:--\S+ \S+ )*mesh rotate --consumer web1-app --inventory \S+` would rotate 1 credential\./);
    expect(text.stdout).toContain('Nothing was changed.');
  });

  it('rotate --yes delivers one secret per pair to both ends, journals digests and each measured window, and prints no secret', async () => {
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    const r = await baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes', '--wait', '10').finally(() => provisioner.stop());
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
    expect(journalText.trim().split('\n').map((l) => JSON.parse(l).phase)).toEqual(['resolved', 'prepared', 'committed', 'applied']);
    for (const secret of [s1, s2]) {
      expect(r.stdout).not.toContain(secret);
      expect(journalText).not.toContain(secret);
      expect(journalText).toContain(secretDigest(secret));
    }
    expect(r.stdout).toMatch(/Rotated 2 credentials \(rotation \S+\)\./);
    expect(r.stdout).toContain(`db1: /var/lib/baton/mesh/provides/pg-main/web1_app replaced (${secretDigest(s1).slice(0, 19)})`);
    expect(r.stdout).toMatch(/✓ pg-main applied web1_app; web1-app's file replaced \d+ ms later \(the window\)/);
    const applied = JSON.parse(journalText.trim().split('\n').at(-1)!);
    expect(Object.keys(applied.windows_ms).sort()).toEqual(['pg-main:web1-app', 'pg-main:web2-app']);
    for (const ms of Object.values(applied.windows_ms)) expect(ms).toEqual(expect.any(Number));
  });

  it('with no receipt within --wait, the consumer ends stay staged with the old secret live (exit 3, resume printed); resume then finishes with the staged digests', async () => {
    const olds = { web1: 'old-web1-secret', web2: 'old-web2-secret' };
    for (const [m, old] of Object.entries(olds)) {
      const file = live(m, `consumes/pg-main/${m}_app`);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, old, { mode: 0o600 });
    }
    const r = await baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes', '--wait', '1');
    expect(r.code).toBe(3);
    const id = /Rotation (\S+):/.exec(r.stdout)![1]!;
    expect(r.stdout).toContain('Applied 0 of 2 credentials, 2 pending');
    expect(r.stdout).not.toContain('Rotated');
    expect(r.stdout).toMatch(new RegExp(`baton (?:--\\S+ \\S+ )*mesh resume ${id} --inventory \\S+`));
    for (const [m, old] of Object.entries(olds)) {
      expect(readFileSync(live(m, `consumes/pg-main/${m}_app`), 'utf8')).toBe(old);
      expect(readFileSync(`${live(m, `consumes/pg-main/${m}_app`)}.next`, 'utf8')).toBe(readFileSync(live('db1', `provides/pg-main/${m}_app`), 'utf8'));
    }
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    const resumed = await baton('mesh', 'resume', id, '--inventory', inventory, '--wait', '10').finally(() => provisioner.stop());
    expect(resumed.stderr).toBe('');
    expect(resumed.code).toBe(0);
    expect(resumed.stdout).toContain(`Resumed rotation ${id}: all 2 credentials applied; 2 files renamed now, 2 already live. No secret was generated.`);
    const prepared = (await readJournal(path.join(tmp.dir, 'state'), id)).find((x) => x.phase === 'prepared')!;
    for (const p of prepared.pairs) expect(secretDigest(readFileSync(live(p.consumer_machine, `consumes/pg-main/${p.role}`)))).toBe(p.digest);
  });

  it('seed installs one password into both ends of a pair (0600), journals its digest, and never prints it', async () => {
    const secretFile = path.join(tmp.dir, 'superuser.password');
    writeFileSync(secretFile, 'Seeded-Password-123\n', { mode: 0o600 });
    const r = await baton('mesh', 'seed', '--pair', 'pg-main:web1-app', '--from-file', secretFile, '--inventory', inventory);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const file of [live('db1', 'provides/pg-main/web1_app'), live('web1', 'consumes/pg-main/web1_app')]) {
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
    const r = await baton('mesh', 'seed', '--pair', 'pg-main:web1-app', '--from-file', secretFile, '--inventory', inventory);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('The secret file contains a line break');
    expect(r.stderr).toContain(secretFile);
    expect(r.stderr).toContain('Nothing was sent.');
    expect(r.stderr + r.stdout).not.toContain('first-line');
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it.each(['public', 'none', 'current_user', 'session_user', 'current_role', 'pg_monitor'])('an inventory giving a consumer the reserved role %s is refused at load (exit 2, naming consumer and file), and nothing is delivered', async (role) => {
    writeFileSync(inventory, readFileSync(inventory, 'utf8').replace('{ name: web2-app, machine: web2, uses: [pg-main] }', `{ name: web2-app, machine: web2, uses: [pg-main], role: ${role} }`));
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const r = await baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes', '--wait', '0');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`consumer "web2-app": role name "${role}" is reserved by PostgreSQL`);
    expect(r.stderr).toContain(inventory);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it('rotate stops at the gate with exit 4 when one machine is unreachable, naming it, and nothing changes on disk', async () => {
    // web2's directory is gone: the local transport's "machine off the network".
    renameSync(path.join(tmp.dir, 'machines/web2'), path.join(tmp.dir, 'web2-unplugged'));
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const r = await baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes', '--wait', '0');
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('Gate closed: 1 of 3 machines could not be resolved.');
    expect(r.stdout).toContain(`web2: its directory ${path.join(tmp.dir, 'machines/web2')} does not exist`);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it('rotate --yes with a journal that cannot be written stops before anything is staged: exit 1, naming the journal and what to do', async () => {
    const journalFile = path.join(tmp.dir, 'state', JOURNAL_FILE);
    mkdirSync(journalFile, { recursive: true }); // a directory where the journal file goes: every append fails
    const machines = path.join(tmp.dir, 'machines');
    const before = snapshotDir(machines);
    const r = await baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('The rotation journal could not be written (EISDIR).');
    expect(r.stdout).toContain(`Journal: ${journalFile}`);
    expect(r.stdout).toContain('No new credential took effect.');
    expect(r.stdout).toContain('Next: Set journal_dir in baton.yaml to a writable directory, or pass --state-dir. Then run the rotation again.');
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
    expect((await baton('mesh', 'plan', '--consumer', 'web1-app', '--machine', 'db1', '--inventory', inventory)).code).toBe(2);
    const r = await baton('mesh', 'plan', '--consumer', 'web9-app', '--inventory', inventory);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('The inventory has no consumer named "web9-app".');
  });

  it('resume finishes a commit that was interrupted, with the digests prepared, and refuses a second time', async () => {
    const inv = loadInventory(inventory);
    const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
    const real = transportsFor(inv.machines, TEST_BOUNDS);
    // web2's commit fails once (the machine went away between prepare and commit).
    const lost = async () => {
      throw new TransportError('web2', 'connection lost');
    };
    const interrupted = (name: string) => (name === 'web2' ? { ...real(name), commit: lost, openChannel: lost } : real(name));
    const journalDir = path.join(tmp.dir, 'state');
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const first = await runRotationPlain({
        id: 'rot-int', plan, yes: true, write: () => undefined,
        deps: { transportFor: interrupted, journalDir, operator: 't', resolve: { concurrency: 2 }, concurrency: 2, waitMs: 2000, pollMs: 10 },
      });
      expect(first.code).toBe(1);
      expect(existsSync(`${live('web2', 'consumes/pg-main/web2_app')}.next`)).toBe(true);
      const r = await baton('mesh', 'resume', 'rot-int', '--inventory', inventory, '--wait', '5');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('Resumed rotation rot-int: all 2 credentials applied; 1 file renamed now, 3 already live. No secret was generated.');
      const prepared = (await readJournal(journalDir, 'rot-int')).find((x) => x.phase === 'prepared')!;
      for (const p of prepared.pairs) {
        expect(secretDigest(readFileSync(live(p.consumer_machine, `consumes/pg-main/${p.role}`)))).toBe(p.digest);
        expect(secretDigest(readFileSync(live('db1', `provides/pg-main/${p.role}`)))).toBe(p.digest);
      }
      const again = await baton('mesh', 'resume', 'rot-int', '--inventory', inventory, '--wait', '0');
      expect(again.code).toBe(3);
      expect(again.stderr).toContain('already finished its commit');
    } finally {
      provisioner.stop();
    }
  });
});
