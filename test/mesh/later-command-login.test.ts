/**
 * The test login is never skipped, by the commands run after a rotation ended either (issue 45):
 * `mesh resume <id>` renaming a consumer end after its receipt, and `mesh rollback <id>` finishing
 * a pair whose receipt shows the new password, both move the consumer only after a login with
 * the new credential from its machine passed, when the provider names `connect:`. The rotation's
 * memory is gone by then: the credential is read back from the provider end on its machine.
 *
 * Against Debian's PostgreSQL 15 with real SCRAM logins. baton dies right after the provider
 * commit (dying-baton.ts), then the provisioner's part is played by hand: the role is given the
 * new password (its SCRAM verifier, never the text) and the receipt written. A role with
 * CONNECTION LIMIT 0 refuses every login after authentication, as a consumer's app would be.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runMeshResume, runMeshRollback } from '../../src/commands/rotation-cli.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readJournal } from '../../src/mesh/journal.js';
import { appHooks } from '../../src/mesh/reload.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { capturingContext } from '../helpers/cli-context.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { asSuperuser, canLogin, DEBIAN_POSTGRES_BIN, debianPostgresMissing } from '../helpers/postgres.js';
import { ifSet } from '../helpers/if-set.js';
import { partPresent } from '../helpers/real-part.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { dyingAfterProviderCommit, rotationDyingIn } from './dying-baton.js';

const present = partPresent('Debian PostgreSQL 15', debianPostgresMissing());

let sandbox: PostgresSandbox;
beforeAll(async () => {
  if (present) sandbox = await startPostgres({ binDir: DEBIAN_POSTGRES_BIN });
}, 120_000);
afterAll(async () => {
  await ifSet(sandbox)
    ?.destroy()
    .catch(() => undefined);
});

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-later-login-');
});
afterEach(() => tmp.cleanup());

const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);
const stateDir = () => path.join(tmp.dir, 'state');

/** A mesh of one pair, pg-main → `consumer` on web1, whose provider names the sandbox as `connect:`. */
async function leftover(consumer: string): Promise<{ inventory: string; role: string; id: string }> {
  const role = consumer.replace(/-/g, '_');
  const old = `old-${role}`;
  await asSuperuser(sandbox, async (c) => {
    await c.query(`DROP ROLE IF EXISTS ${role}`);
    await c.query(`CREATE ROLE ${role} LOGIN PASSWORD '${await scramVerifier(Buffer.from(old))}'`);
  });
  for (const m of ['db1', 'web1']) mkdirSync(path.join(tmp.dir, 'machines', m), { recursive: true });
  const inventory = path.join(tmp.dir, 'mesh.yaml');
  writeFileSync(
    inventory,
    [
      'machines:',
      '  - { name: db1, address: machines/db1, transport: local }',
      '  - { name: web1, address: machines/web1, transport: local }',
      'providers:',
      `  - { name: pg-main, machine: db1, kind: postgres, connect: { host: ${sandbox.host}, port: ${sandbox.port}, database: postgres } }`,
      'consumers:',
      `  - { name: ${consumer}, machine: web1, uses: [pg-main], reads: each-connection }`,
      '',
    ].join('\n'),
  );
  for (const f of [live('web1', `consumes/pg-main/${role}`), live('db1', `provides/pg-main/${role}`)]) {
    mkdirSync(path.dirname(f), { recursive: true });
    writeFileSync(f, old, { mode: 0o600 });
  }
  // baton dies right after the provider commit: provider end live, consumer end staged.
  const inv = loadInventory(inventory);
  const id = `rot-${role.replace(/_/g, '-')}`;
  const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
  rotationDyingIn(
    dying,
    {
      id,
      plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer }),
      inventory: inv,
      journalDir: stateDir(),
    },
    { app: appHooks(inv) },
  );
  await dying.dead;
  // The provisioner's part, by hand: the database takes the new password, the receipt says so.
  const fresh = readFileSync(live('db1', `provides/pg-main/${role}`), 'utf8');
  expect(fresh).not.toBe(old);
  await asSuperuser(sandbox, async (c) =>
    c.query(`ALTER ROLE ${role} PASSWORD '${await scramVerifier(Buffer.from(fresh))}'`),
  );
  const receipt = live('db1', `provides/pg-main/${RECEIPTS_DIR}/${role}`);
  mkdirSync(path.dirname(receipt), { recursive: true });
  writeFileSync(
    receipt,
    formatReceipt({ role, digest: secretDigest(fresh), applied_at: new Date().toISOString() }),
  );
  expect(existsSync(live('web1', `consumes/pg-main/${role}.next`))).toBe(true);
  return { inventory, role, id };
}

const flags = (inventory: string) => ({ inventory, concurrency: '2', wait: '0.3', timeout: '10' });
const connectionLimit = (role: string, limit: number) =>
  asSuperuser(sandbox, (c) => c.query(`ALTER ROLE ${role} CONNECTION LIMIT ${limit}`));

describe('a later command that moves a consumer tries its login first', () => {
  it('mesh resume: a refused login leaves the consumer where it is (exit 3, words, journal); once the login works, the same resume moves it', async () => {
    const { inventory, role, id } = await leftover('web1-app');
    await connectionLimit(role, 0);
    const first = capturingContext(stateDir());
    const refused = await runMeshResume(first.ctx, id, flags(inventory));
    const said = first.output();
    expect(refused, said).toBe(3);
    expect(said).toContain(
      `test login pg-main:web1-app: the new credential for ${role} was REFUSED from web1`,
    );
    expect(said).toContain('web1-app was NOT moved');
    expect(said).toContain(`mesh rollback ${id}`);
    expect(readFileSync(live('web1', `consumes/pg-main/${role}`), 'utf8')).toBe(`old-${role}`);
    expect(existsSync(live('web1', `consumes/pg-main/${role}.next`))).toBe(true);
    const journaled = (await readJournal(stateDir(), id)).at(-1)!;
    expect(journaled.test_logins).toEqual([
      expect.objectContaining({ pair: 'pg-main:web1-app', machine: 'web1', login: role, ok: false }),
    ]);
    expect(journaled.applied ?? []).toEqual([]);

    await connectionLimit(role, -1);
    const second = capturingContext(stateDir());
    const moved = await runMeshResume(second.ctx, id, flags(inventory));
    expect(moved, second.output()).toBe(0);
    expect(second.output()).toContain(`test login pg-main:web1-app: ${role} accepted from web1`);
    const now = readFileSync(live('web1', `consumes/pg-main/${role}`), 'utf8');
    expect(now).toBe(readFileSync(live('db1', `provides/pg-main/${role}`), 'utf8'));
    expect(await canLogin(sandbox, role, now)).toBe(true);
    expect((await readJournal(stateDir(), id)).at(-1)!.test_logins).toEqual([
      expect.objectContaining({ pair: 'pg-main:web1-app', ok: true }),
    ]);
  }, 90_000);

  it('mesh rollback: a pair whose receipt shows the new password is finished only after its login passed; refused, it is rolled back and the consumer keeps its password', async () => {
    const { inventory, role, id } = await leftover('web2-app');
    await connectionLimit(role, 0);
    const { ctx, output } = capturingContext(stateDir());
    const code = await runMeshRollback(ctx, id, flags(inventory));
    const said = output();
    expect(said).toContain(
      `test login pg-main:web2-app: the new credential for ${role} was REFUSED from web1`,
    );
    expect(said).toContain('web2-app was NOT moved');
    expect(code, said).toBe(3);
    const last = (await readJournal(stateDir(), id)).at(-1)!;
    expect(last.phase).toBe('rolled-back');
    expect(last.rolled_back).toEqual([
      expect.objectContaining({ pair: 'pg-main:web2-app', result: 'rolled-back' }),
    ]);
    expect(last.test_logins).toEqual([expect.objectContaining({ login: role, ok: false })]);
    // Never moved: the consumer keeps its password, nothing is left staged, the provider has its old file back.
    expect(readFileSync(live('web1', `consumes/pg-main/${role}`), 'utf8')).toBe(`old-${role}`);
    expect(existsSync(live('web1', `consumes/pg-main/${role}.next`))).toBe(false);
    expect(readFileSync(live('db1', `provides/pg-main/${role}`), 'utf8')).toBe(`old-${role}`);
  }, 90_000);

  it('mesh rollback: with the login passing, the pair is finished and its consumer moved onto a password the database accepts', async () => {
    const { inventory, role, id } = await leftover('web3-app');
    const { ctx, output } = capturingContext(stateDir());
    const code = await runMeshRollback(ctx, id, flags(inventory));
    expect(code, output()).toBe(0);
    expect(output()).toContain(`test login pg-main:web3-app: ${role} accepted from web1`);
    const last = (await readJournal(stateDir(), id)).at(-1)!;
    expect(last.phase).toBe('finished');
    expect(last.test_logins).toEqual([expect.objectContaining({ login: role, ok: true })]);
    const now = readFileSync(live('web1', `consumes/pg-main/${role}`), 'utf8');
    expect(now).not.toBe(`old-${role}`);
    expect(await canLogin(sandbox, role, now)).toBe(true);
  }, 90_000);
});
