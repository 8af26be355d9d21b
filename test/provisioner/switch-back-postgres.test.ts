/**
 * Switching a pair single → alternating → single leaves no login behind, against Debian's
 * PostgreSQL 15, the BUILT CLI and the real provisioner (`provision postgres --watch`). Before,
 * `web1_app_b` — created at the switch with the single role's verifier and never given a file of
 * its own — stayed LOGIN, a member of the group, accepting the pre-switch password (a back
 * door), while status said ✓ applied. Now both logins are NOLOGIN once the pair is single
 * again, also when the provisioner that saw the switch is killed and a new one starts.
 * Run `npm run build` before running this file alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect, it, vi } from 'vitest';
import { loginRole } from '../../src/mesh/alternating.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { consumerLogin } from '../helpers/password-app.js';
import { asSuperuser, canLogin, DEBIAN_POSTGRES_BIN, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';
import { writeLocalMesh } from '../mesh/mesh-fixture.js';

const PROVIDER = 'pg-main';
const MESH = '/var/lib/baton/mesh';
const [A, B] = [loginRole('web1_app', 'a'), loginRole('web1_app', 'b')];

describeWithPart(
  debianPostgresMissing(),
  "switching back to a single role leaves no login (Debian's PostgreSQL)",
  () => {
    let sandbox: PostgresSandbox;
    let tmp: { dir: string; cleanup: () => void };
    let superuser: string;
    const children: ChildProcess[] = [];
    /** What the provisioners logged, for a failure's message. */
    const logs: string[] = [];
    const inventory = () => path.join(tmp.dir, 'mesh.yaml');
    const consumerFile = () => path.join(tmp.dir, 'machines', 'web1', MESH, 'consumes', PROVIDER, 'web1_app');
    const baton = (...args: string[]) =>
      runBaton(['--state-dir', path.join(tmp.dir, 'state'), ...args, '--inventory', inventory()], {
        cwd: tmp.dir,
        env: { NO_COLOR: '1' },
        timeoutMs: 60_000,
      });
    const rotate = () => baton('mesh', 'rotate', '--pair', `${PROVIDER}:web1-app`, '--yes', '--wait', '20');

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

    function startProvisioner(): { kill(): Promise<void> } {
      const meshDir = path.join(tmp.dir, 'machines', 'db1', MESH);
      const child = spawn(
        process.execPath,
        [
          BIN,
          'provision',
          'postgres',
          '--mesh-dir',
          meshDir,
          '--provider',
          PROVIDER,
          '--pg-host',
          sandbox.host,
          '--pg-port',
          String(sandbox.port),
          '--superuser',
          superuser,
          '--watch',
          '--interval',
          '1',
        ],
        { cwd: REPO, stdio: 'ignore', env: { ...process.env, NO_COLOR: '1' } },
      );
      children.push(child);
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      return {
        async kill() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
          await exited;
        },
      };
    }

    /** What the database says of a role: whether it may log in, and whether it is in the group. */
    const stored = (role: string) =>
      asSuperuser(sandbox, async (c) => {
        const r = await c.query<{ rolcanlogin: boolean; member: boolean }>(
          `SELECT rolcanlogin, pg_has_role(oid, 'web1_app', 'MEMBER') AS member FROM pg_roles WHERE rolname = $1`,
          [role],
        );
        return r.rows[0];
      });

    beforeAll(async () => {
      assertBuilt();
      sandbox = await startPostgres({ binDir: DEBIAN_POSTGRES_BIN });
    }, 120_000);
    afterAll(async () => {
      for (const child of children)
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await (async () => sandbox.destroy())().catch(() => undefined);
    });
    beforeEach(async () => {
      tmp = makeTempDir('baton-switch-back-');
      superuser = `su_${randomBytes(3).toString('hex')}`;
      writeLocalMesh(tmp.dir, { provisionerRole: superuser });
      const first = randomBytes(24).toString('base64url');
      await asSuperuser(sandbox, async (c) => {
        await c.query(
          `CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(first))}'`,
        );
        // One database for the file: each test starts from a pair that never existed.
        for (const role of [A, B, 'web1_app']) await c.query(`DROP ROLE IF EXISTS ${role}`);
      });
      const file = path.join(tmp.dir, 'su.password');
      writeFileSync(file, first, { mode: 0o600 });
      expect(
        (await baton('mesh', 'seed', '--pair', `${PROVIDER}:provisioner`, '--from-file', file)).exitCode,
      ).toBe(0);
    }, 60_000);
    afterEach(() => {
      for (const child of children.splice(0))
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      tmp.cleanup();
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
      expect(await canLogin(sandbox, B, preSwitch)).toBe(true);
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
          expect(await stored(A), logs.join('')).toEqual({ rolcanlogin: false, member: true });
          expect(await stored(B), logs.join('')).toEqual({ rolcanlogin: false, member: true });
        },
        { timeout: 10_000, interval: 100 },
      );
      expect(await canLogin(sandbox, A, passwords.a)).toBe(false);
      expect(await canLogin(sandbox, B, passwords.preSwitch)).toBe(false);
      expect(await canLogin(sandbox, 'web1_app', passwords.single)).toBe(true);
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
