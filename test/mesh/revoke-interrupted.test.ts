/**
 * `mesh rotate --revoke-previous` of an alternating pair killed AT its revoke (docs/mesh-rotation.md
 * "Revoking the previous login"): every consumer end committed, the left login's fresh secret
 * staged on the provider machine, and baton dies (a) just before the commit that makes it live or
 * (b) just after it (never heard back). Then `mesh status` must say the truth about the left login
 * and change nothing; the provisioner comes back, and what status prints (`next_steps[].args`) is
 * run as printed until it exits 0. Round 12 found both cases wrong (the revoke's target reached the
 * journal only after the revoke): (a) a refusal loop, (b) an armed request shown as nothing. The
 * revoke's other steps (before its stage, before its kept file, after its receipt, before its last
 * record) are each killed too. The stand-in provisioner writes receipts (receipt-writer.ts). Run
 * `npm run build` first.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { conninfoLogin } from '../../src/mesh/alternating.js';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readPlanEnds } from '../../src/mesh/leftovers.js';
import { planRotation, settleLogins } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { interruptedAt, pathsUnder, rotationDyingIn, type CallPoint } from './dying-baton.js';
import { followStatus } from './follow-status.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { standInProvisioner } from './receipt-writer.js';

const ID = 'rot-revoke';
const MESH = '/var/lib/baton/mesh';
let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeAll(() => assertBuilt());
beforeEach(() => {
  tmp = makeTempDir('baton-revoke-cut-');
  inventory = writeLocalMesh(tmp.dir, { webs: 1 });
  writeFileSync(
    inventory,
    readFileSync(inventory, 'utf8').replace(
      'uses: [pg-main] }',
      'uses: [pg-main], credential: alternating }',
    ),
  );
});
afterEach(() => {
  provisionerGone();
  tmp.cleanup();
});

const stateDir = () => path.join(tmp.dir, 'state');
const machines = () => path.join(tmp.dir, 'machines');
const live = (machine: string, file: string) => path.join(machines(), machine, MESH, file);
const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);
const consumerEnd = () => live('web1', 'consumes/pg-main/web1_app');
const loginFile = (slot: 'a' | 'b') => live('db1', `provides/pg-main/web1_app+${slot}`);
const receiptDigest = (slot: 'a' | 'b') =>
  parseReceipt(read(live('db1', `provides/pg-main/.applied/web1_app+${slot}`)) ?? '')?.digest;
/** A login "works" per the stand-in when its receipt is for the password its file holds. */
const works = (slot: 'a' | 'b') => receiptDigest(slot) === secretDigest(read(loginFile(slot))!);

/** The provisioner, as the stand-in that writes a receipt for every live provider end. */
const { back: provisionerBack, gone: provisionerGone } = standInProvisioner(() =>
  live('db1', 'provides/pg-main'),
);
const baton = (args: readonly string[]) =>
  runBaton(args, { cwd: tmp.dir, env: { NO_COLOR: '1', BATON_CONFIG: '' }, timeoutMs: 60_000 });
const statusArgs = () => ['--state-dir', stateDir(), 'mesh', 'status', '--json', '--inventory', inventory];

type PairJson = {
  state: string;
  logins: { live: string; other: { login: string; state: string } | null };
  armed_revoke: { login: string } | null;
  not_revoked: { login: string; fresh_password_staged: boolean; end_sessions: boolean } | null;
  next_steps: { args: string[] }[];
};

/** A revoke's call on web1_app_a's files (a stage is given files, the rest paths). */
const onLoginA = (args: readonly unknown[]): boolean =>
  pathsUnder('/web1_app+a')(args) ||
  (Array.isArray(args[0]) &&
    (args[0] as unknown[]).some((f) => (f as { path?: unknown }).path?.toString().includes('/web1_app+a')));

/**
 * web1-app put on login a by a first rotation, then `rot-revoke` (a → b, --revoke-previous)
 * killed at `at`, a call of the revoke on web1_app_a's files. The provisioner applies everything
 * but that login until baton is dead (or that login too, `appliesA`), then is gone.
 */
async function killedAtTheRevoke(
  at: CallPoint,
  appliesA = false,
  endSessions = false,
): Promise<{ oldA: string }> {
  provisionerBack();
  const first = await baton([
    ...['--state-dir', stateDir(), 'mesh', 'rotate', '--consumer', 'web1-app'],
    ...['--inventory', inventory, '--yes', '--wait', '10'],
  ]);
  expect(first.exitCode, first.all).toBe(0);
  expect(conninfoLogin(read(consumerEnd())!)).toBe('web1_app_a');
  const oldA = read(loginFile('a'))!;
  provisionerBack(appliesA ? undefined : (role) => role !== 'web1_app+a');
  const inv = loadInventory(inventory);
  const dying = interruptedAt(transportsFor(inv.machines, TEST_BOUNDS), at, 'killed');
  const planned = planRotation(inv, { by: 'consumer', name: 'web1-app' });
  const ends = await readPlanEnds(planned, dying.transportFor, 2);
  const plan = settleLogins(planned, ends, (n) => inv.machines.find((m) => m.name === n)!);
  rotationDyingIn(
    dying,
    { id: ID, plan, inventory: inv, journalDir: stateDir() },
    { revoke: { endSessions } },
  );
  await dying.dead;
  provisionerGone();
  // Every consumer end committed: web1-app is on b, and b works.
  expect(conninfoLogin(read(consumerEnd())!)).toBe('web1_app_b');
  expect(works('b')).toBe(true);
  return { oldA };
}

const commitOfA = (when: 'before' | 'after'): CallPoint => ({ method: 'commit', matches: onLoginA, when });

/** `mesh status --json`, which must change nothing on the machines. */
async function statusNow(): Promise<{ exit: number; pair: PairJson; text: string }> {
  const before = snapshotDir(machines());
  const status = await baton(statusArgs());
  expect(snapshotDir(machines())).toEqual(before);
  const pair = (JSON.parse(status.stdout) as { pairs: PairJson[] }).pairs[0]!;
  return { exit: status.exitCode, pair, text: status.stdout };
}

const prevOf = (slot: 'a' | 'b') => live('db1', `provides/pg-main/.web1_app+${slot}.prev`);
const nextOf = (slot: 'a' | 'b') => `${loginFile(slot)}.next`;

describe('mesh rotate --revoke-previous killed at its revoke', () => {
  it('killed before the fresh secret is committed: status says web1_app_a is NOT revoked (exit 3) and offers the rotate that revokes, which runs; followed as printed it ends at exit 0 with the old password refused', async () => {
    const { oldA } = await killedAtTheRevoke(commitOfA('before'));
    expect(read(loginFile('a'))).toBe(oldA);
    // The revoke's own files: its fresh secret staged (delivered nowhere) and a's password kept.
    expect(existsSync(nextOf('a'))).toBe(true);
    const cut = await statusNow();
    expect([cut.exit, cut.pair.state, cut.pair.logins.other, cut.pair.armed_revoke], cut.text).toEqual([
      3,
      'applied',
      { login: 'web1_app_a', state: 'valid' },
      null,
    ]);
    expect(cut.pair.not_revoked).toEqual({
      login: 'web1_app_a',
      fresh_password_staged: true,
      end_sessions: false,
    });
    expect(cut.pair.next_steps.map((s) => s.args.slice(s.args.indexOf('mesh')))).toEqual([
      ['mesh', 'rotate', '--pair', 'pg-main:web1-app', '--revoke-previous', '--inventory', inventory],
    ]);
    const plain = await baton(statusArgs().filter((a) => a !== '--json'));
    expect(plain.stdout).toContain(
      'not revoked: the --revoke-previous of rotation rot-revoke did not take effect: its fresh password never went live, so web1_app_a keeps its old password, which MAY STILL WORK',
    );
    // The id the journal names, tried by hand: each refuses, sends nothing, and points at status.
    const before = snapshotDir(machines());
    for (const [verb, nothing] of [
      ['resume', 'resume'],
      ['rollback', 'roll back'],
    ] as const) {
      const r = await baton(['--state-dir', stateDir(), 'mesh', verb, ID, '--inventory', inventory]);
      expect(r.exitCode, r.all).toBe(3);
      expect(r.stderr).toContain(
        `Rotation ${ID} already finished its commit: every pair was applied; there is nothing to ${nothing}, but baton stopped during its --revoke-previous.`,
      );
      expect(r.stderr).toContain(
        `Next: See whether the revoke took effect (revoked, armed, or not revoked) and what to do: \`baton --state-dir ${stateDir()} mesh status --inventory ${inventory}\``,
      );
    }
    expect(snapshotDir(machines())).toEqual(before);
    provisionerBack();
    const ran = await followStatus({ baton, statusArgs: statusArgs() });
    expect(ran).toEqual(['(applied) mesh rotate --pair → 0']);
    // The rotation status offered moved web1-app to a with a fresh password and revoked b:
    // web1_app_a's old password (the one asked revoked) is held nowhere and refused.
    expect(conninfoLogin(read(consumerEnd())!)).toBe('web1_app_a');
    expect(works('a')).toBe(true);
    expect(read(loginFile('a'))).not.toBe(oldA);
    for (const f of [nextOf('a'), nextOf('b'), prevOf('a'), prevOf('b')])
      expect(existsSync(f), f).toBe(false);
    const after = await statusNow();
    expect([after.exit, after.pair.logins.other, after.pair.not_revoked], after.text).toEqual([
      0,
      { login: 'web1_app_b', state: 'revoked' },
      null,
    ]);
    console.log(
      `revoke killed before its commit: status exit ${cut.exit}, not_revoked web1_app_a (fresh password staged); followed: ${ran.join('; ')}; then exit ${after.exit}, web1_app_b revoked`,
    );
  }, 90_000);

  it('killed after the fresh secret is committed: status says the revoke is armed (exit 0, nothing suggested), and once the provisioner applies it, revoked', async () => {
    const { oldA } = await killedAtTheRevoke(commitOfA('after'));
    expect(read(loginFile('a'))).not.toBe(oldA);
    const armed = await statusNow();
    // The fresh secret is live beside web1_app_a's receipt of the old one: armed, not applied.
    expect([armed.exit, armed.pair.armed_revoke, armed.pair.not_revoked], armed.text).toEqual([
      0,
      expect.objectContaining({ login: 'web1_app_a' }),
      null,
    ]);
    const plain = await baton(statusArgs().filter((a) => a !== '--json'));
    expect(plain.stdout).toContain(
      "armed: the provisioner on db1 will refuse web1_app_a's old password when it next applies (a --revoke-previous not applied yet); until then the old password may still work",
    );
    provisionerBack();
    const revoked = await vi.waitFor(
      async () => {
        const now = await statusNow();
        expect(now.pair.logins.other, now.text).toEqual({ login: 'web1_app_a', state: 'revoked' });
        return now;
      },
      { timeout: 30_000, interval: 300 },
    );
    expect([revoked.exit, revoked.pair.armed_revoke, revoked.pair.not_revoked]).toEqual([0, null, null]);
    expect(conninfoLogin(read(consumerEnd())!)).toBe('web1_app_b');
    expect(works('b')).toBe(true);
    expect(works('a')).toBe(true);
    expect(read(loginFile('a'))).not.toBe(oldA);
    console.log(
      `revoke killed after its commit: status exit ${armed.exit}, armed_revoke web1_app_a; once the provisioner applied: exit ${revoked.exit}, web1_app_a revoked`,
    );
  }, 90_000);
});

/**
 * Every other step of the revoke: its record written but nothing staged, its stage done, its
 * receipt seen but the kept file not removed, everything done but its last record. What status
 * says must be what the machines hold, and following it must end at exit 0 with web1_app_a's
 * old password refused: either the revoke took effect, or the rotation status offers did it.
 */
const STEPS: readonly {
  readonly step: string;
  readonly at: CallPoint;
  readonly appliesA: boolean;
  readonly says: 'not-revoked-unstaged' | 'not-revoked-staged' | 'revoked';
  /** Asked with --end-sessions (its request file is staged and committed with the secret). */
  readonly endSessions?: boolean;
}[] = [
  {
    step: 'after its record, before its stage',
    at: { method: 'stage', matches: onLoginA, when: 'before' },
    appliesA: false,
    says: 'not-revoked-unstaged',
  },
  {
    step: 'after its stage, before its previous file is kept',
    at: { method: 'keepPrevious', matches: onLoginA, when: 'before' },
    appliesA: false,
    says: 'not-revoked-staged',
  },
  {
    step: 'with --end-sessions, after its stage',
    at: { method: 'keepPrevious', matches: onLoginA, when: 'before' },
    appliesA: false,
    says: 'not-revoked-staged',
    endSessions: true,
  },
  {
    step: 'after the receipt confirmed it, before the kept file goes',
    at: { method: 'discardPrevious', matches: onLoginA, when: 'before' },
    appliesA: true,
    says: 'revoked',
  },
  {
    step: 'after the kept file went, before its last record',
    at: { method: 'discardPrevious', matches: onLoginA, when: 'after' },
    appliesA: true,
    says: 'revoked',
  },
];

describe('mesh rotate --revoke-previous killed at each other step of its revoke', () => {
  it.each(STEPS)(
    'killed $step: status says $says, and followed as printed it ends at exit 0 with the old password refused',
    async ({ at, appliesA, says, endSessions }) => {
      const { oldA } = await killedAtTheRevoke(at, appliesA, endSessions);
      const cut = await statusNow();
      if (says === 'revoked') {
        expect(
          [cut.exit, cut.pair.logins.other, cut.pair.not_revoked, cut.pair.armed_revoke],
          cut.text,
        ).toEqual([0, { login: 'web1_app_a', state: 'revoked' }, null, null]);
      } else {
        expect([cut.exit, cut.pair.not_revoked], cut.text).toEqual([
          3,
          {
            login: 'web1_app_a',
            fresh_password_staged: says === 'not-revoked-staged',
            end_sessions: endSessions === true,
          },
        ]);
        expect(read(loginFile('a'))).toBe(oldA);
        // Its way out asks what the revoke asked.
        expect(cut.pair.next_steps.flatMap((n) => n.args).includes('--end-sessions')).toBe(
          endSessions === true,
        );
      }
      provisionerBack();
      const ran = await followStatus({ baton, statusArgs: statusArgs() });
      expect(ran).toEqual(says === 'revoked' ? [] : ['(applied) mesh rotate --pair → 0']);
      // The old password of web1_app_a is refused: its login's file and receipt hold another one.
      expect(read(loginFile('a'))).not.toBe(oldA);
      expect(works('a')).toBe(true);
      expect(existsSync(nextOf('a'))).toBe(false);
      const after = await statusNow();
      expect(after.exit, after.text).toBe(0);
      console.log(
        `revoke killed ${at.method} ${at.when}: status ${says} (exit ${cut.exit}); followed: ${ran.join('; ') || 'nothing'}; then exit ${after.exit}`,
      );
    },
    90_000,
  );
});
