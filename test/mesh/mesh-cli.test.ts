import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
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

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-mesh-cli-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => tmp.cleanup());

function baton(...args: string[]) {
  const result = spawnSync(process.execPath, [BATON, '--state-dir', path.join(tmp.dir, 'state'), ...args], {
    encoding: 'utf8',
    cwd: tmp.dir,
    env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const live = (machine: string, file: string) => path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);

describe('baton mesh (the built CLI, local transport)', () => {
  it('plan lists every holder, what it receives and each window, and changes nothing', () => {
    const before = snapshotDir(tmp.dir);
    const r = baton('mesh', 'plan', '--provider', 'pg-main', '--inventory', inventory, '--json');
    expect(r.code).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan.gate).toBe('open');
    expect(plan.holders.map((h: { machine: string; receives: { path: string }[] }) => [h.machine, h.receives.map((d) => d.path)])).toEqual([
      ['db1', ['/var/lib/baton/mesh/provides/pg-main/web1_app', '/var/lib/baton/mesh/provides/pg-main/web2_app']],
      ['web1', ['/var/lib/baton/mesh/consumes/pg-main/web1_app']],
      ['web2', ['/var/lib/baton/mesh/consumes/pg-main/web2_app']],
    ]);
    expect(plan.pairs[1].window).toBe('between pg-main applying the new password for web2_app and web2-app reading its file, new connections from web2-app with the old password fail');
    expect(snapshotDir(tmp.dir)).toEqual(before);
    const text = baton('mesh', 'plan', '--consumer', 'web1-app', '--inventory', inventory);
    expect(text.stdout).toContain('✓ web1 (local machines/web1) receives consumes/pg-main/web1_app');
    expect(text.stdout).toContain('Nothing was changed.');
  });

  it('rotate --yes delivers one secret per pair to both ends, journals digests, and prints no secret', () => {
    const r = baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes', '--wait', '0');
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
  });

  it('rotate stops at the gate with exit 4 when one machine is unreachable, naming it, and nothing changes on disk', () => {
    // web2's directory is gone: the local transport's "machine off the network".
    renameSync(path.join(tmp.dir, 'machines/web2'), path.join(tmp.dir, 'web2-unplugged'));
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    const r = baton('mesh', 'rotate', '--provider', 'pg-main', '--inventory', inventory, '--yes', '--wait', '0');
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('Gate closed: 1 of 3 machines could not be resolved.');
    expect(r.stdout).toContain(`web2: its directory ${path.join(tmp.dir, 'machines/web2')} does not exist`);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it('rotate without a terminal and without --yes refuses before resolving anything (exit 2)', () => {
    const before = snapshotDir(tmp.dir);
    const r = baton('mesh', 'rotate', '--consumer', 'web1-app', '--inventory', inventory);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('add --yes');
    expect(r.stderr).toContain('Nothing was generated and nothing was sent.');
    expect(snapshotDir(tmp.dir)).toEqual(before);
  });

  it('two selectors, or an unknown consumer, are usage errors (exit 2)', () => {
    expect(baton('mesh', 'plan', '--consumer', 'web1-app', '--machine', 'db1', '--inventory', inventory).code).toBe(2);
    const r = baton('mesh', 'plan', '--consumer', 'web9-app', '--inventory', inventory);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('The inventory has no consumer named "web9-app".');
  });

  it('resume finishes a commit that was interrupted, with the digests prepared, and refuses a second time', async () => {
    const inv = loadInventory(inventory);
    const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
    const real = transportsFor(inv.machines, TEST_BOUNDS);
    // web2's commit fails once (the machine went away between prepare and commit).
    const interrupted = (name: string) => (name === 'web2' ? { ...real(name), commit: async () => { throw new TransportError('web2', 'connection lost'); } } : real(name));
    const journalDir = path.join(tmp.dir, 'state');
    const first = await runRotationPlain({
      id: 'rot-int', plan, yes: true, write: () => undefined,
      deps: { transportFor: interrupted, journalDir, operator: 't', resolve: { concurrency: 2 }, concurrency: 2, waitMs: 0, pollMs: 10 },
    });
    expect(first.code).toBe(1);
    expect(existsSync(`${live('web2', 'consumes/pg-main/web2_app')}.next`)).toBe(true);
    const r = baton('mesh', 'resume', 'rot-int', '--inventory', inventory, '--wait', '0');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Resumed rotation rot-int: 1 file(s) renamed now, 3 already live.');
    const prepared = (await readJournal(journalDir, 'rot-int')).find((x) => x.phase === 'prepared')!;
    for (const p of prepared.pairs) {
      expect(secretDigest(readFileSync(live(p.consumer_machine, `consumes/pg-main/${p.role}`)))).toBe(p.digest);
      expect(secretDigest(readFileSync(live('db1', `provides/pg-main/${p.role}`)))).toBe(p.digest);
    }
    const again = baton('mesh', 'resume', 'rot-int', '--inventory', inventory, '--wait', '0');
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('already finished its commit');
  });
});
