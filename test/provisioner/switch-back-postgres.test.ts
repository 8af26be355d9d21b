/**
 * Switching a pair single → alternating → single leaves no login behind, against Debian's
 * PostgreSQL 15, the BUILT CLI and the real provisioner (`provision postgres --watch`). Before,
 * `web1_app_b` — created at the switch with the single role's verifier and never given a file of
 * its own — stayed LOGIN, a member of the group, accepting the pre-switch password (a back
 * door), while status said ✓ applied. Now both logins are NOLOGIN once the pair is single
 * again, also when the provisioner that saw the switch is killed and a new one starts.
 * Run `npm run build` before running this file alone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it, vi } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { loginRole } from '../../src/mesh/alternating.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readPlanEnds } from '../../src/mesh/leftovers.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation, settleLogins } from '../../src/mesh/rotation-plan.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { rotationRecords } from '../helpers/fs-snapshot.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { consumerLogin } from '../helpers/password-app.js';
import { asSuperuser, canLogin, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';
import { runBaton } from '../helpers/run-baton.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { dyingAfterConsumerCommit, type AfterConsumerCommit } from '../mesh/dying-baton.js';

const PROVIDER = 'pg-main';
const [A, B] = [loginRole('web1_app', 'a'), loginRole('web1_app', 'b')];

describeWithPart(
  debianPostgresMissing(),
  "switching back to a single role leaves no login (Debian's PostgreSQL)",
  () => {
    const suite = usePostgresMesh({
      server: 'debian',
      prefix: 'baton-switch-back-',
      // One database for the file: each test starts from a pair that never existed.
      beforeSeed: ({ sandbox }) =>
        asSuperuser(sandbox, async (c) => {
          for (const role of [A, B, 'web1_app']) await c.query(`DROP ROLE IF EXISTS ${role}`);
        }),
    });
    /** The provisioners started: what they logged goes into a failure's message. */
    const provisioners: MeshProvisioner[] = [];
    const logs = () => provisioners.map((p) => p.output()).join('');
    const inventory = () => suite.mesh.inventory;
    const consumerFile = () => suite.mesh.consumerFile('web1', 'web1_app');
    const baton = (...args: string[]) => suite.mesh.baton(...args, '--inventory', inventory());
    const rotate = () => baton('mesh', 'rotate', '--pair', `${PROVIDER}:web1-app`, '--yes', '--wait', '20');
    const canLoginHere = (role: string, password: string) => canLogin(suite.sandbox, role, password);

    function setAlternating(on: boolean): void {
      const lines = readFileSync(inventory(), 'utf8')
        .split('\n')
        .map((line) => {
          if (!line.includes('name: web1-app,')) return line;
          const bare = line.replace(/, credential: \w+/, '');
          return on ? bare.replace(/ }$/, ', credential: alternating }') : bare;
        });
      writeFileSync(inventory(), lines.join('\n'));
    }

    function startProvisioner(): MeshProvisioner {
      // Every 250 ms: each rotation waits up to one interval for its receipt (docs/testing.md).
      const started = suite.mesh.startProvisioner(0.25);
      provisioners.push(started);
      return started;
    }

    /** What the database says of a role: whether it may log in, and whether it is in the group. */
    const stored = (role: string) =>
      asSuperuser(suite.sandbox, async (c) => {
        const r = await c.query<{ rolcanlogin: boolean; member: boolean }>(
          `SELECT rolcanlogin, pg_has_role(oid, 'web1_app', 'MEMBER') AS member FROM pg_roles WHERE rolname = $1`,
          [role],
        );
        return r.rows[0];
      });

    const providerDir = () => path.dirname(suite.mesh.providerFile('web1_app'));

    /**
     * The switch back to single (the inventory already says single), run in this process
     * under a transport that "dies" at `point`, after the consumer's commit: what a baton
     * SIGKILLed there leaves on the machines. Resolves with the rotation's id once it is dead.
     */
    async function switchBackDying(point: AfterConsumerCommit): Promise<string> {
      const id = `rot-off-${point}`;
      const inv = loadInventory(inventory());
      const machineOf = (name: string) => inv.machines.find((m) => m.name === name)!;
      const dying = dyingAfterConsumerCommit(transportsFor(inv.machines, TEST_BOUNDS), point);
      const planned = planRotation(inv, { by: 'pair', provider: PROVIDER, consumer: 'web1-app' });
      const ends = await readPlanEnds(planned, dying.transportFor, 2);
      void runRotationPlain({
        id,
        plan: settleLogins(planned, ends, machineOf),
        yes: true,
        write: () => undefined,
        deps: {
          transportFor: dying.transportFor,
          journalDir: suite.mesh.stateDir,
          operator: 't',
          resolve: { concurrency: 2 },
          concurrency: 2,
          waitMs: 20_000,
          pollMs: 20,
          mesh: meshIdentity(inv),
        },
      });
      await dying.dead;
      return id;
    }

    /** single → alternating → single; returns the passwords each login last accepted. */
    async function switchAndBack(): Promise<{ preSwitch: string; a: string; single: string }> {
      expect((await rotate()).exitCode).toBe(0);
      const preSwitch = readFileSync(consumerFile(), 'utf8');
      setAlternating(true);
      const on = await rotate();
      expect(on.exitCode, on.all).toBe(0);
      const a = consumerLogin(readFileSync(consumerFile(), 'utf8'), 'web1_app');
      expect(a.user).toBe(A);
      // The other login, made at the switch with the single role's verifier: the pre-switch password works there.
      expect(await canLoginHere(B, preSwitch)).toBe(true);
      setAlternating(false);
      const off = await rotate();
      expect(off.exitCode, off.all).toBe(0);
      const single = readFileSync(consumerFile(), 'utf8');
      expect(consumerLogin(single, 'web1_app').format).toBe('bare');
      return { preSwitch, a: a.password, single };
    }

    async function noLoginLeft(passwords: { preSwitch: string; a: string; single: string }): Promise<void> {
      await vi.waitFor(
        async () => {
          expect(await stored(A), logs()).toEqual({ rolcanlogin: false, member: true });
          expect(await stored(B), logs()).toEqual({ rolcanlogin: false, member: true });
        },
        { timeout: 10_000, interval: 100 },
      );
      expect(await canLoginHere(A, passwords.a)).toBe(false);
      expect(await canLoginHere(B, passwords.preSwitch)).toBe(false);
      expect(await canLoginHere('web1_app', passwords.single)).toBe(true);
      const status = await baton('mesh', 'status', '--pair', `${PROVIDER}:web1-app`);
      expect(status.exitCode, status.all).toBe(0);
    }

    it('single → alternating → single: neither _a nor _b can log in; the single role does', async () => {
      const provisioner = startProvisioner();
      try {
        await noLoginLeft(await switchAndBack());
      } finally {
        await provisioner.kill();
      }
    }, 120_000);

    it('the provisioner killed right after the switch back: the next one closes both logins', async () => {
      const first = startProvisioner();
      const passwords = await switchAndBack();
      await first.kill();
      const next = startProvisioner();
      try {
        await noLoginLeft(passwords);
      } finally {
        await next.kill();
      }
    }, 120_000);

    it.each(['after-consumer-commit', 'at-retire'] as const)(
      'baton killed %s of the switch back: status is not ✓ and names mesh resume; following it, neither _a nor _b can log in',
      async (point) => {
        const provisioner = startProvisioner();
        try {
          expect((await rotate()).exitCode).toBe(0);
          const preSwitch = readFileSync(consumerFile(), 'utf8');
          setAlternating(true);
          const on = await rotate();
          expect(on.exitCode, on.all).toBe(0);
          const a = consumerLogin(readFileSync(consumerFile(), 'utf8'), 'web1_app');
          setAlternating(false);
          const id = await switchBackDying(point);
          const single = readFileSync(consumerFile(), 'utf8');
          expect(consumerLogin(single, 'web1_app').format).toBe('bare');
          // What the crash leaves: a's file beside the plain one (b, copied at the switch, never had one), and its intent.
          for (const file of ['web1_app', 'web1_app+a'])
            expect(readFileSync(path.join(providerDir(), file), 'utf8').length).toBeGreaterThan(0);
          const intent = Object.values(rotationRecords(providerDir())).find((r) => r.end === 'provides')!;
          expect([intent.rotation, intent.phase]).toEqual([
            id,
            point === 'at-retire' ? 'finished' : 'committing',
          ]);
          // The back door that is left: the login made at the switch still takes the pre-switch password.
          // Two whole provisioner cycles after the crash (the first heartbeat seen may predate it).
          await suite.mesh.cyclesOf(provisioner, 3);
          expect(await canLoginHere(B, preSwitch)).toBe(true);

          const status = await baton('mesh', 'status', '--pair', `${PROVIDER}:web1-app`, '--json');
          expect(status.exitCode, status.all).toBe(3);
          const pair = (
            JSON.parse(status.stdout) as {
              pairs: { state: string; detail: string; next_steps: { command: string }[] }[];
            }
          ).pairs[0]!;
          expect(pair.detail).toContain('still delivers web1_app+a beside web1_app');
          expect(pair.next_steps.map((s) => s.command)).toEqual([expect.stringMatching(`mesh resume ${id}`)]);
          // rotate agrees with status: refused, naming the same way out, nothing changed.
          const before = readFileSync(path.join(providerDir(), 'web1_app'), 'utf8');
          const refused = await rotate();
          expect(refused.exitCode, refused.all).toBe(3);
          expect(refused.stderr).toContain(`mesh resume ${id}`);
          expect(readFileSync(path.join(providerDir(), 'web1_app'), 'utf8')).toBe(before);

          // Pasted as printed.
          const resumed = await runBaton(pair.next_steps[0]!.command.split(' ').slice(1), {
            cwd: suite.mesh.dir,
            env: { NO_COLOR: '1' },
            timeoutMs: 60_000,
          });
          expect(resumed.exitCode, resumed.all).toBe(0);
          expect(resumed.stdout).toContain('web1_app_a and web1_app_b NOLOGIN');
          await noLoginLeft({ preSwitch, a: a.password, single });
        } finally {
          await provisioner.kill();
        }
      },
      120_000,
    );
  },
);
