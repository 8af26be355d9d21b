/**
 * `mesh rotate --revoke-previous` killed AT its revoke, against a REAL PostgreSQL with the real
 * provisioner (`baton provision postgres --watch`): what status says of the left login is checked
 * against what the database does with its old password. Killed before the revoke's commit, the
 * old password still logs in (status: NOT revoked, exit 3); status's next step, run as printed,
 * ends with it refused (28P01). Killed after the commit, the provisioner applies the fresh
 * password by itself: the old one is refused and status says `revoked`. The stand-in version,
 * with the exact words, is revoke-interrupted.test.ts. Run `npm run build` first.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import { conninfoLogin } from '../../src/mesh/alternating.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readPlanEnds } from '../../src/mesh/leftovers.js';
import { appHooks } from '../../src/mesh/reload.js';
import { planRotation, settleLogins } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { consumerLogin } from '../helpers/password-app.js';
import { canLogin, loginRefusal } from '../helpers/postgres.js';
import { usePostgresMesh } from '../helpers/postgres-mesh.js';
import { runBaton } from '../helpers/run-baton.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { interruptedAt, pathsUnder, rotationDyingIn } from './dying-baton.js';
import { followStatus } from './follow-status.js';

const ID = 'rot-revoke-pg';
const PAIR = 'pg-main:web1-app';

const suite = usePostgresMesh({
  prefix: 'baton-revoke-pg-',
  // web1-app alternates; pg-main names where a test login goes, so the rotation makes one.
  beforeSeed: (mesh) =>
    writeFileSync(
      mesh.inventory,
      readFileSync(mesh.inventory, 'utf8')
        .replace(/(\{ name: web1-app, [^}]*uses: \[pg-main\])( \})/, '$1, credential: alternating$2')
        .replace(
          /(\{ name: pg-main, machine: db1, kind: postgres)( \})/,
          `$1, connect: { host: 127.0.0.1, port: ${mesh.sandbox.port}, database: postgres }$2`,
        ),
    ),
});
const mesh = () => suite.mesh;
const consumerEnd = () => mesh().consumerFile('web1', 'web1_app');
const loginFile = (slot: 'a' | 'b') => mesh().providerFile(`web1_app+${slot}`);
const baton = (args: readonly string[]) =>
  runBaton(args, { cwd: mesh().dir, env: { NO_COLOR: '1' }, timeoutMs: 60_000 });
// Only this pair: the mesh's others (web2-app, never delivered here) are not this test's.
const statusArgs = () => [
  ...['--state-dir', mesh().stateDir, 'mesh', 'status', '--json'],
  ...['--pair', PAIR, '--inventory', mesh().inventory],
];

type PairJson = {
  logins: { other: { login: string; state: string } | null };
  armed_revoke: { login: string } | null;
  not_revoked: { login: string; fresh_password_staged: boolean; end_sessions: boolean } | null;
  confirmed: Record<string, string> | null;
};
const pairNow = async () => {
  const status = await baton(statusArgs());
  const pair = (JSON.parse(status.stdout) as { pairs: (PairJson & { consumer: string })[] }).pairs.find(
    (p) => p.consumer === 'web1-app',
  )!;
  return { exit: status.exitCode, pair, text: status.stdout };
};

/**
 * web1-app put on login a, then `ID` (a → b, --revoke-previous) killed at the commit of
 * web1_app_a's fresh secret, `when` the machine did it or not. Returns a's password before.
 */
async function killedAtTheRevoke(when: 'before' | 'after'): Promise<string> {
  const first = await mesh().baton(
    'mesh',
    'rotate',
    '--pair',
    PAIR,
    '--inventory',
    mesh().inventory,
    '--yes',
    '--wait',
    '20',
  );
  expect(first.exitCode, first.all).toBe(0);
  expect(conninfoLogin(readFileSync(consumerEnd(), 'utf8'))).toBe('web1_app_a');
  const oldA = readFileSync(loginFile('a'), 'utf8');
  expect(await canLogin(mesh().sandbox, 'web1_app_a', oldA)).toBe(true);
  const inv = loadInventory(mesh().inventory);
  const dying = interruptedAt(
    transportsFor(inv.machines, TEST_BOUNDS),
    { method: 'commit', matches: pathsUnder('/web1_app+a'), when },
    'killed',
  );
  const planned = planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' });
  const ends = await readPlanEnds(planned, dying.transportFor, 2);
  const plan = settleLogins(planned, ends, (n) => inv.machines.find((m) => m.name === n)!);
  rotationDyingIn(
    dying,
    { id: ID, plan, inventory: inv, journalDir: mesh().stateDir },
    { revoke: { endSessions: false }, waitMs: 30_000, app: appHooks(inv) },
  );
  await dying.dead;
  expect(conninfoLogin(readFileSync(consumerEnd(), 'utf8'))).toBe('web1_app_b');
  return oldA;
}

describe('mesh rotate --revoke-previous killed at its revoke, against PostgreSQL', () => {
  it('killed before its commit: the old password still logs in and status says NOT revoked; its next step, run as printed, ends with that password refused (28P01)', async () => {
    const provisioner = mesh().startProvisioner(0.1);
    try {
      const oldA = await killedAtTheRevoke('before');
      await mesh().cyclesOf(provisioner, 3);
      // What status says, the database does: the old password of web1_app_a still logs in.
      expect(await canLogin(mesh().sandbox, 'web1_app_a', oldA)).toBe(true);
      const cut = await pairNow();
      // The revoke's record says what the rotation confirmed: its last record was never written.
      expect(cut.pair.confirmed, cut.text).toEqual(expect.objectContaining({ test_login: 'confirmed' }));
      expect([cut.exit, cut.pair.not_revoked, cut.pair.armed_revoke], cut.text).toEqual([
        3,
        { login: 'web1_app_a', fresh_password_staged: true, end_sessions: false },
        null,
      ]);
      const ran = await followStatus({ baton, statusArgs: statusArgs() });
      expect(ran).toEqual(['(applied) mesh rotate --pair → 0']);
      // web1-app is on a with a fresh password; a's old one and b's (now revoked) are refused.
      const now = consumerLogin(readFileSync(consumerEnd(), 'utf8'), 'web1_app');
      expect(now.user).toBe('web1_app_a');
      expect(await canLogin(mesh().sandbox, now.user, now.password)).toBe(true);
      expect(await loginRefusal(mesh().sandbox, 'web1_app_a', oldA)).toBe('28P01');
      const after = await pairNow();
      expect([after.exit, after.pair.logins.other, after.pair.not_revoked], after.text).toEqual([
        0,
        { login: 'web1_app_b', state: 'revoked' },
        null,
      ]);
      console.log(
        `revoke killed before its commit (PostgreSQL): old password of web1_app_a logged in; status exit ${cut.exit} not_revoked; followed: ${ran.join('; ')}; then the old password refused 28P01, status exit ${after.exit}`,
      );
    } finally {
      await provisioner.stop();
    }
  }, 180_000);

  it('killed after its commit: the provisioner applies the fresh password by itself, the old one is refused (28P01), and status says revoked', async () => {
    const provisioner = mesh().startProvisioner(0.1);
    try {
      const oldA = await killedAtTheRevoke('after');
      // Armed until the provisioner's next cycle (too short to catch here: the stand-in suite does), then revoked.
      const revoked = await vi.waitFor(
        async () => {
          const now = await pairNow();
          expect(now.pair.logins.other, now.text).toEqual({ login: 'web1_app_a', state: 'revoked' });
          return now;
        },
        { timeout: 30_000, interval: 300 },
      );
      expect([revoked.exit, revoked.pair.not_revoked]).toEqual([0, null]);
      expect(await loginRefusal(mesh().sandbox, 'web1_app_a', oldA)).toBe('28P01');
      const b = consumerLogin(readFileSync(consumerEnd(), 'utf8'), 'web1_app');
      expect(await canLogin(mesh().sandbox, b.user, b.password)).toBe(true);
      console.log(
        `revoke killed after its commit (PostgreSQL): the provisioner applied it; old password refused 28P01; status exit ${revoked.exit}, web1_app_a revoked`,
      );
    } finally {
      await provisioner.stop();
    }
  }, 180_000);
});
