/**
 * The inventory is edited while a rotation is unfinished: baton is killed between the provider
 * commit and the consumer commit, then a machine and a consumer are added to the inventory.
 * Before, the mesh id hashed the machine list, so the edit made the rotation's records a
 * stranger's: status called the staged file "no rotation prepared it: remove it by hand" — the
 * only copy of the new secret. Now the id does not depend on the machines: status still names
 * `mesh resume <id>` (its JSON args the very words it prints, global flags included), and
 * resume finishes it. The built CLI on the local transport.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readJournal } from '../../src/mesh/journal.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { shellWord } from '../../src/suggest-command.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { dyingAfterProviderCommit, rotationDyingIn } from './dying-baton.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { startReceiptWriter } from './receipt-writer.js';

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
const state = () => path.join(tmp.dir, 'state');
const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, 'var/lib/baton/mesh', file);

beforeEach(() => {
  assertBuilt();
  tmp = makeTempDir('baton-inventory-edit-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => tmp.cleanup());

function baton(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, '--state-dir', state(), ...args], {
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

interface StatusJson {
  mesh: string;
  pairs: {
    consumer: string;
    state: string;
    resume_id: string | null;
    next: string | null;
    next_steps: { command: string; args: string[] }[];
  }[];
}

describe('an inventory edited while a rotation is unfinished', () => {
  it('machine and consumer added after baton died between the commits: status still names mesh resume <id>, and resume finishes it', async () => {
    const before = loadInventory(inventory);
    const dying = dyingAfterProviderCommit(transportsFor(before.machines, TEST_BOUNDS));
    rotationDyingIn(dying, {
      id: 'rot-edit',
      plan: planRotation(before, { by: 'provider', name: 'pg-main' }),
      inventory: before,
      journalDir: state(),
    });
    await dying.dead;
    await vi.waitFor(
      async () =>
        expect((await readJournal(state(), 'rot-edit')).some((x) => x.phase === 'committed')).toBe(true),
      { timeout: 10_000, interval: 20 },
    );
    expect(existsSync(`${live('web2', 'consumes/pg-main/web2_app')}.next`)).toBe(true);

    // The operator adds a machine and a consumer on it.
    mkdirSync(path.join(tmp.dir, 'machines', 'web3'), { recursive: true });
    const text = readFileSync(inventory, 'utf8')
      .replace('providers:', '  - { name: web3, address: machines/web3, transport: local }\nproviders:')
      .replace(/\n$/, '\n  - { name: web3-app, machine: web3, uses: [pg-main] }\n');
    writeFileSync(inventory, text);
    const after = loadInventory(inventory);
    expect(after.machines.map((m) => m.name)).toContain('web3');
    expect(after.consumers.map((c) => c.name)).toContain('web3-app');
    expect(meshIdentity(after)).toBe(meshIdentity(before));

    const status = await baton('mesh', 'status', '--inventory', inventory, '--json');
    expect(status.code).toBe(3);
    const doc = JSON.parse(status.stdout) as StatusJson;
    expect(doc.mesh).toBe(meshIdentity(before));
    const web2 = doc.pairs.find((p) => p.consumer === 'web2-app')!;
    expect([web2.state, web2.resume_id]).toEqual(['staged', 'rot-edit']);
    expect(web2.next).not.toContain('remove the staged file by hand');
    const resume = web2.next_steps.find((s) => s.args.includes('resume'))!;
    expect(resume.args).toEqual([
      '--state-dir',
      state(),
      'mesh',
      'resume',
      'rot-edit',
      '--inventory',
      inventory,
    ]);
    // The args ARE the printed command's words: a script running `baton ...args` runs what a person would paste.
    expect(resume.command).toBe(['baton', ...resume.args.map(shellWord)].join(' '));
    expect(web2.next).toContain(resume.command);

    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const r = await baton(...resume.args.slice(2), '--wait', '5');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const prepared = (await readJournal(state(), 'rot-edit')).find((x) => x.phase === 'prepared')!;
      for (const p of prepared.pairs)
        expect(secretDigest(readFileSync(live(p.consumer_machine, `consumes/pg-main/${p.role}`)))).toBe(
          p.digest,
        );
    } finally {
      provisioner.stop();
    }
    const clean = JSON.parse(
      (await baton('mesh', 'status', '--inventory', inventory, '--json')).stdout,
    ) as StatusJson;
    expect(clean.pairs.find((p) => p.consumer === 'web2-app')!.state).toBe('applied');
  });
});
