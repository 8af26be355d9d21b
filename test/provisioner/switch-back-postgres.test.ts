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
import { expect, it, vi } from 'vitest';
import { loginRole } from '../../src/mesh/alternating.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { consumerLogin } from '../helpers/password-app.js';
import { asSuperuser, canLogin, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';

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
      const started = suite.mesh.startProvisioner(1);
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
  },
);
