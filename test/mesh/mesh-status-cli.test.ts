import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { dyingAfterProviderCommit, rotationDyingIn } from './dying-baton.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { scanForSecrets } from '../helpers/secret-scan.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { startReceiptWriter, withLiveProvisioner } from './receipt-writer.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');
const MESH = '/var/lib/baton/mesh';

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-mesh-status-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => tmp.cleanup());

function baton(stateDir: string, ...args: string[]) {
  const result = spawnSync(process.execPath, [BATON, '--state-dir', stateDir, ...args], {
    encoding: 'utf8',
    cwd: tmp.dir,
    env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}
const state = () => path.join(tmp.dir, 'state');
const status = (...args: string[]) => baton(state(), 'mesh', 'status', '--inventory', inventory, ...args);
const file = (machine: string, rel: string) => path.join(tmp.dir, 'machines', machine, MESH, rel);
const receipt = (role: string) => {
  const provider = readFileSync(file('db1', `provides/pg-main/${role}`), 'utf8');
  mkdirSync(file('db1', 'provides/pg-main/.applied'), { recursive: true });
  writeFileSync(
    file('db1', `provides/pg-main/.applied/${role}`),
    formatReceipt({ role, digest: secretDigest(provider), applied_at: new Date().toISOString() }),
    { mode: 0o600 },
  );
};
const pairsOf = (stdout: string) =>
  Object.fromEntries(
    (JSON.parse(stdout).pairs as { consumer: string; state: string }[]).map((p) => [p.consumer, p.state]),
  );

/** A whole rotation (a stand-in provisioner applies it), then its receipts removed: both pairs delivered, not applied. */
async function rotate(): Promise<void> {
  const inv = loadInventory(inventory);
  const { code } = await runRotationPlain({
    id: `rot-${Date.now()}`,
    plan: planRotation(inv, { by: 'provider', name: 'pg-main' }),
    yes: true,
    write: () => undefined,
    deps: {
      transportFor: withLiveProvisioner(transportsFor(inv.machines, TEST_BOUNDS), (m) =>
        path.join(tmp.dir, 'machines', m),
      ),
      journalDir: state(),
      operator: 't',
      resolve: { concurrency: 2 },
      concurrency: 2,
      waitMs: 5_000,
      pollMs: 10,
      mesh: meshIdentity(inv),
    },
  });
  expect(code).toBe(0);
  rmSync(file('db1', 'provides/pg-main/.applied'), { recursive: true, force: true });
}

/** The CLI spawned asynchronously, so a stand-in provisioner in this process writes receipts meanwhile. */
function batonAsync(
  stateDir: string,
  ...args: string[]
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BATON, '--state-dir', stateDir, ...args], {
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

/** Every secret any holder holds now (live or staged), for the scan. */
function secretsOnDisk(): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const [machine, rel] of [
    ['db1', 'provides/pg-main/web1_app'],
    ['db1', 'provides/pg-main/web2_app'],
    ['web1', 'consumes/pg-main/web1_app'],
    ['web2', 'consumes/pg-main/web2_app'],
  ] as const) {
    for (const suffix of ['', '.next']) {
      const p = file(machine, rel + suffix);
      if (existsSync(p)) out.push({ name: `${machine}:${rel}${suffix}`, value: readFileSync(p, 'utf8') });
    }
  }
  return out;
}

describe('baton mesh status (the built CLI, local transport)', () => {
  it('reports pending until the provider applies, then applied (exit 3, then 0), reading nothing but digests and changing nothing', async () => {
    await rotate();
    const before = snapshotDir(tmp.dir);
    const pending = status('--json');
    expect(pending.code).toBe(3);
    expect(pairsOf(pending.stdout)).toEqual({ 'web1-app': 'pending', 'web2-app': 'pending' });
    receipt('web1_app');
    const half = status('--json');
    expect(half.code).toBe(3);
    expect(pairsOf(half.stdout)).toEqual({ 'web1-app': 'applied', 'web2-app': 'pending' });
    receipt('web2_app');
    const plain = status();
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('✓ applied       pg-main:web1-app (role web1_app, db1 → web1) rotated ');
    expect(plain.stdout).toMatch(/rotated \d+s ago; last rotation \S+ \S+$/m);
    expect(plain.stdout).toContain('2 pairs: 2 applied.');
    const json = JSON.parse(status('--json').stdout);
    // The last rotation and its outcome are the journal's own: its last record.
    const last = JSON.parse(readFileSync(path.join(state(), JOURNAL_FILE), 'utf8').trim().split('\n').pop()!);
    expect(
      json.pairs.map((p: { last_rotation: unknown; last_rotated_source: string }) => [
        p.last_rotation,
        p.last_rotated_source,
      ]),
    ).toEqual([
      [{ id: last.id, outcome: last.phase }, 'journal'],
      [{ id: last.id, outcome: last.phase }, 'journal'],
    ]);
    const after = snapshotDir(tmp.dir);
    for (const k of Object.keys(after)) if (k.includes('.applied')) delete after[k];
    for (const k of Object.keys(before)) if (k.includes('.applied')) delete before[k];
    expect(after).toEqual(before);
    const haystacks = [pending, half, plain].flatMap((r, i) => [
      { name: `stdout ${i}`, data: r.stdout },
      { name: `stderr ${i}`, data: r.stderr },
    ]);
    haystacks.push(
      { name: 'journal', data: readFileSync(path.join(state(), JOURNAL_FILE), 'utf8') },
      { name: 'snapshot', data: JSON.stringify(after) },
    );
    expect(scanForSecrets(haystacks, secretsOnDisk())).toEqual([]);
  });

  it('a consumer end edited by hand is drifted, and neither secret appears in the output, the journal or a snapshot', async () => {
    await rotate();
    receipt('web1_app');
    receipt('web2_app');
    const original = readFileSync(file('web2', 'consumes/pg-main/web2_app'), 'utf8');
    writeFileSync(file('web2', 'consumes/pg-main/web2_app'), 'typed-in-by-hand');
    const secrets = [...secretsOnDisk(), { name: 'the replaced consumer end', value: original }];
    const plain = status();
    const json = status('--json');
    expect(plain.code).toBe(3);
    expect(pairsOf(json.stdout)['web2-app']).toBe('drifted');
    expect(plain.stdout).toMatch(/^✗ drifted {7}pg-main:web2-app/m);
    expect(plain.stdout).toContain(
      `the two ends differ: ${MESH}/consumes/pg-main/web2_app on web2 is not what db1 holds`,
    );
    // The suggestion keeps the flags given, so it acts on this journal and inventory.
    expect(plain.stdout).toContain(
      `next: rotate it: baton --state-dir ${state()} mesh rotate --pair pg-main:web2-app --inventory ${inventory}\n`,
    );
    // Worst first: the drifted pair leads.
    expect(JSON.parse(json.stdout).pairs[0].consumer).toBe('web2-app');
    const hits = scanForSecrets(
      [
        { name: 'plain', data: plain.stdout + plain.stderr },
        { name: 'json', data: json.stdout + json.stderr },
        { name: 'journal', data: readFileSync(path.join(state(), JOURNAL_FILE)) },
        { name: 'snapshot', data: JSON.stringify(snapshotDir(tmp.dir)) },
      ],
      secrets,
    );
    expect(hits).toEqual([]);
  });

  it('staged leftovers name the mesh resume id the journal knows; a .next nobody prepared has none', async () => {
    await rotate();
    receipt('web1_app');
    receipt('web2_app');
    // A rotation of web2-app whose baton died right after the provider commit (no provisioner running).
    const inv = loadInventory(inventory);
    const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(dying, {
      id: 'rot-int',
      plan: planRotation(inv, { by: 'consumer', name: 'web2-app' }),
      inventory: inv,
      journalDir: state(),
    });
    await dying.dead;
    const committed = () =>
      readFileSync(path.join(state(), JOURNAL_FILE), 'utf8').includes('"id":"rot-int","at"') &&
      readFileSync(path.join(state(), JOURNAL_FILE), 'utf8')
        .split('\n')
        .some((l) => l.includes('"id":"rot-int"') && l.includes('"phase":"committed"'));
    for (let i = 0; i < 500 && !committed(); i++) await new Promise((r) => setTimeout(r, 10));
    // The provider end is live with its previous file kept, the consumer's new end staged: a leftover with both ways out.
    const resume = `baton --state-dir ${state()} mesh resume rot-int --inventory ${inventory}`;
    const rollback = `baton --state-dir ${state()} mesh rollback rot-int --inventory ${inventory}`;
    let json = JSON.parse(status('--json').stdout);
    let web2 = json.pairs.find((p: { consumer: string }) => p.consumer === 'web2-app');
    expect([web2.state, web2.resume_id, web2.last_rotation]).toEqual([
      'staged',
      'rot-int',
      { id: 'rot-int', outcome: 'committed' },
    ]);
    expect(web2.detail).toContain("if pg-main applies the new password, web2-app's live password is refused");
    // Once the provider applied it, the consumer's live password IS refused: the words say so.
    receipt('web2_app');
    const plain = status();
    expect(plain.code).toBe(3);
    expect(plain.stdout).toContain(
      "pg-main applied the new password, so web2-app's live password is refused",
    );
    expect(plain.stdout).toContain(`next: finish it: ${resume}, or roll it back: ${rollback}\n`);
    json = JSON.parse(status('--json').stdout);
    web2 = json.pairs.find((p: { consumer: string }) => p.consumer === 'web2-app');
    expect([web2.state, web2.resume_id, web2.next]).toEqual([
      'staged',
      'rot-int',
      `finish it: ${resume}, or roll it back: ${rollback}`,
    ]);
    // The same two commands as objects: argv after `baton`, the global flags and the inventory given, as rendered.
    expect(web2.next_steps).toEqual([
      {
        command: resume,
        args: ['--state-dir', state(), 'mesh', 'resume', 'rot-int', '--inventory', inventory],
        placeholders: [],
        host: null,
      },
      {
        command: rollback,
        args: ['--state-dir', state(), 'mesh', 'rollback', 'rot-int', '--inventory', inventory],
        placeholders: [],
        host: null,
      },
    ]);
    // With web2 away, resume refuses and its Next is the same pasteable command; nothing renamed.
    const web2Root = path.join(tmp.dir, 'machines', 'web2');
    renameSync(web2Root, `${web2Root}.away`);
    const machinesBefore = snapshotDir(path.join(tmp.dir, 'machines'));
    const refused = spawnSync(process.execPath, [BATON, ...resume.split(' ').slice(1)], {
      encoding: 'utf8',
      cwd: '/',
      env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
    });
    expect(refused.status, refused.stderr).toBe(4);
    expect(refused.stderr).toContain('Rotation rot-int cannot be resumed: 1 machine could not be read.');
    expect(refused.stderr).toContain(`Make them reachable, then run \`${resume}\` again.`);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(machinesBefore);
    renameSync(`${web2Root}.away`, web2Root);
    // Pasted as it stands (from another directory), the suggestion finishes the rotation.
    const pasted = spawnSync(process.execPath, [BATON, ...resume.split(' ').slice(1)], {
      encoding: 'utf8',
      cwd: '/',
      env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
    });
    expect(pasted.status, pasted.stderr).toBe(0);
    expect(pairsOf(status('--json').stdout)['web2-app']).toBe('applied');
    // A .next no rotation prepared: staged, no id.
    writeFileSync(`${file('db1', 'provides/pg-main/web1_app')}.next`, 'left-over');
    json = JSON.parse(status('--json').stdout);
    const web1 = json.pairs.find((p: { consumer: string }) => p.consumer === 'web1-app');
    expect([web1.state, web1.resume_id]).toEqual(['staged', null]);
  });

  it('an unreadable holder is unreachable and exits 1; no journal means ages from the file mtime, labelled, and --max-age decides 0 or 3', async () => {
    await rotate();
    receipt('web1_app');
    receipt('web2_app');
    const fresh = path.join(tmp.dir, 'no-journal');
    const old = Date.now() / 1000 - 100 * 86_400;
    utimesSync(file('db1', 'provides/pg-main/web1_app'), old, old);
    const aged = baton(fresh, 'mesh', 'status', '--inventory', inventory, '--json', '--max-age', '90d');
    expect(aged.code).toBe(3);
    const pairs = JSON.parse(aged.stdout).pairs as {
      consumer: string;
      last_rotated_source: string;
      age_seconds: number;
      older_than_max_age: boolean;
      state: string;
    }[];
    const web1 = pairs.find((p) => p.consumer === 'web1-app')!;
    expect([web1.state, web1.last_rotated_source, web1.older_than_max_age]).toEqual([
      'applied',
      'file-mtime',
      true,
    ]);
    expect(web1.age_seconds).toBeGreaterThanOrEqual(100 * 86_400);
    expect(baton(fresh, 'mesh', 'status', '--inventory', inventory, '--max-age', '101d').code).toBe(0);
    expect(baton(fresh, 'mesh', 'status', '--inventory', inventory).stdout).toContain('(file mtime)');

    renameSync(path.join(tmp.dir, 'machines/web2'), path.join(tmp.dir, 'web2-away'));
    const r = status();
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^✗ unreachable {3}pg-main:web2-app/m);
    expect(r.stdout).toContain(
      `could not read web2 (its directory ${path.join(tmp.dir, 'machines/web2')} does not exist)`,
    );
    const bad = status('--max-age', 'soon');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-age "soon" is not an age.');
  });

  it('the JSON document has exactly the documented shape', async () => {
    await rotate();
    const doc = JSON.parse(status('--json', '--max-age', '30d').stdout);
    expect(Object.keys(doc)).toEqual([
      'selector',
      'read_at',
      'max_age_seconds',
      'exit_code',
      'summary',
      'pairs',
      'provisioners',
      'journal',
      'mesh',
    ]);
    // No provisioner ran here: no heartbeat, nothing claimed (src/mesh/provisioner-heartbeat.ts).
    expect(doc.provisioners).toEqual([
      {
        provider: 'pg-main',
        machine: 'db1',
        state: 'none',
        healthy: true,
        detail: null,
        next: null,
        next_steps: [],
      },
    ]);
    expect(doc.journal).toBe(path.join(state(), JOURNAL_FILE));
    expect(doc.mesh).toMatch(/^mesh-[0-9a-f]{12}$/);
    expect(doc.selector).toBe('every pair');
    expect(doc.max_age_seconds).toBe(30 * 86_400);
    expect(doc.exit_code).toBe(3);
    expect(doc.summary).toEqual({
      unreachable: 0,
      drifted: 0,
      'changed-in-db': 0,
      'app-behind': 0,
      staged: 0,
      pending: 2,
      applied: 0,
      older_than_max_age: 0,
    });
    expect(Object.keys(doc.pairs[0])).toEqual([
      'provider',
      'consumer',
      'role',
      'provider_machine',
      'consumer_machine',
      'state',
      'detail',
      'last_rotated',
      'last_rotated_source',
      'age_seconds',
      'older_than_max_age',
      'last_rotation',
      'resume_id',
      'unreadable',
      'database',
      'app',
      'confirmed',
      'armed_revoke',
      'not_revoked',
      'next',
      'next_steps',
    ]);
    expect(doc.pairs[0]).toMatchObject({
      provider: 'pg-main',
      consumer: 'web1-app',
      role: 'web1_app',
      provider_machine: 'db1',
      consumer_machine: 'web1',
      state: 'pending',
      last_rotated_source: 'journal',
      resume_id: null,
      unreadable: [],
      database: null,
      // Nothing known of its app: no reload: and no session seen since the move.
      app: { takes: 'not-known', behind: null, reload: null },
    });
    expect(typeof doc.pairs[0].age_seconds).toBe('number');
    expect(Date.parse(doc.pairs[0].last_rotated)).not.toBeNaN();
  });

  it('rotate --older-than selects exactly the pairs older than the limit, combines with a selector, and shows each age in the preview', async () => {
    await rotate();
    // No journal in this state dir: ages come from the provider ends' mtimes.
    const fresh = path.join(tmp.dir, 'by-age');
    const daysAgo = (d: number) => Date.now() / 1000 - d * 86_400;
    utimesSync(file('db1', 'provides/pg-main/web1_app'), daysAgo(100), daysAgo(100));
    utimesSync(file('db1', 'provides/pg-main/web2_app'), daysAgo(10), daysAgo(10));
    const web2Before = snapshotDir(path.join(tmp.dir, 'machines/web2'));
    const web1Secret = readFileSync(file('web1', 'consumes/pg-main/web1_app'), 'utf8');

    const none = baton(
      fresh,
      'mesh',
      'rotate',
      '--consumer',
      'web2-app',
      '--older-than',
      '90d',
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '0',
    );
    expect(none.code).toBe(0);
    expect(none.stdout).toContain(
      'None of the 1 pair(s) of --consumer web2-app was rotated longer ago than 90d. Nothing was generated and nothing was sent.',
    );

    const writer = startReceiptWriter(file('db1', 'provides/pg-main'));
    const r = await batonAsync(
      fresh,
      'mesh',
      'rotate',
      '--older-than',
      '90d',
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '10',
    ).finally(() => writer.stop());
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/age pg-main:web1-app: 100d 0h \(file mtime\)/);
    expect(r.stdout).not.toContain('pg-main:web2-app');
    expect(readFileSync(file('web1', 'consumes/pg-main/web1_app'), 'utf8')).not.toBe(web1Secret);
    expect(snapshotDir(path.join(tmp.dir, 'machines/web2'))).toEqual(web2Before);
    const journal = readFileSync(path.join(fresh, JOURNAL_FILE), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(new Set(journal.map((rec: { selector: string }) => rec.selector))).toEqual(
      new Set(['--older-than 90d']),
    );
    expect(
      new Set(journal.flatMap((rec: { pairs: { key: string }[] }) => rec.pairs.map((p) => p.key))),
    ).toEqual(new Set(['pg-main:web1-app']));

    // 5d: web2 (10 days) is older now; web1 was just rotated (the journal says so) and is not.
    const writer2 = startReceiptWriter(file('db1', 'provides/pg-main'));
    const again = await batonAsync(
      fresh,
      'mesh',
      'rotate',
      '--provider',
      'pg-main',
      '--older-than',
      '5d',
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '10',
    ).finally(() => writer2.stop());
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/age pg-main:web2-app: 10d 0h \(file mtime\)/);
    expect(again.stdout).not.toContain('age pg-main:web1-app');
  });
});
