/**
 * The provisioner's own health as `mesh status` reads it, against Debian's PostgreSQL 15 and
 * the BUILT CLI (`baton provision postgres --watch` and `baton mesh status`, local transport).
 * Its superuser's password changed by hand locks it out: status exits 3 naming the
 * provisioner and the way out, and no pair keeps its ✓. Stopped, it says so. The heartbeat's
 * parsing and judgement (hostile text, a silent provisioner) are unit-tested below.
 * Run `npm run build` before running this file alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  formatHeartbeat,
  HEARTBEAT_FORMAT,
  parseHeartbeat,
  provisionerHealth,
  type Heartbeat,
} from '../../src/mesh/provisioner-heartbeat.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { asSuperuser, canLogin, DEBIAN_POSTGRES_BIN, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { REPO } from '../helpers/bundle-script.js';
import { writeLocalMesh } from '../mesh/mesh-fixture.js';

const PROVIDER = 'pg-main';
const MESH = '/var/lib/baton/mesh';
const NOW = Date.parse('2026-12-01T12:00:00Z');

const beat = (over: Partial<Heartbeat> = {}): Heartbeat => ({
  format: HEARTBEAT_FORMAT,
  provider: PROVIDER,
  at: new Date(NOW - 2_000).toISOString(),
  interval_ms: 2_000,
  login: 'ok',
  superuser: 'su_x',
  host: 'db1',
  pid: 42,
  ...over,
});

describe('the heartbeat as status judges it', () => {
  const judge = (text: string | undefined) =>
    provisionerHealth(PROVIDER, 'db1', '/m/provides/pg-main/.heartbeat', text, NOW, (role) =>
      role === 'su_x' ? 'pg-main:provisioner' : undefined,
    );

  it('a fresh ok beat is healthy; no beat claims nothing', () => {
    expect(judge(formatHeartbeat(beat())).state).toBe('ok');
    expect(judge(undefined).state).toBe('none');
  });

  it('a refused login is a lock-out naming the role, PostgreSQL words shown safely, and the seed that mends it', () => {
    const h = judge(
      formatHeartbeat(
        beat({
          login: 'refused',
          reason: 'password authentication failed\u001b[2J',
          last_ok_at: new Date(NOW - 60_000).toISOString(),
        }),
      ),
    );
    expect(h.state).toBe('locked-out');
    if (!('detail' in h)) throw new Error('no detail');
    expect(h.detail).toContain('the provisioner of pg-main on db1 cannot log in');
    expect(h.detail).toContain('su_x');
    expect(h.detail).not.toContain('\u001b');
    expect(
      h.next.some(
        (part) =>
          typeof part !== 'string' &&
          part.args
            .filter((w) => typeof w === 'string')
            .join(' ')
            .startsWith('mesh seed --pair pg-main:provisioner'),
      ),
    ).toBe(true);
  });

  it('an unreachable database, a stopped and a silent provisioner are each their own state', () => {
    expect(judge(formatHeartbeat(beat({ login: 'unreachable', reason: 'connect ECONNREFUSED' }))).state).toBe(
      'database-down',
    );
    expect(judge(formatHeartbeat(beat({ login: 'stopped' }))).state).toBe('stopped');
    expect(judge(formatHeartbeat(beat({ at: new Date(NOW - 61_000).toISOString() }))).state).toBe('silent');
    // Five intervals at a long --interval: not silent yet.
    expect(
      judge(formatHeartbeat(beat({ interval_ms: 30_000, at: new Date(NOW - 120_000).toISOString() }))).state,
    ).toBe('ok');
  });

  it('anything that is not a heartbeat is unreadable, never healthy', () => {
    for (const text of [
      '',
      'garbage',
      '{}',
      JSON.stringify({ ...beat(), login: 'fine' }),
      JSON.stringify({ ...beat(), at: 'yesterday' }),
      'x'.repeat(5000),
    ]) {
      expect(parseHeartbeat(text)).toBeUndefined();
      expect(judge(text).state).toBe('unreadable');
    }
  });
});

describeWithPart(
  debianPostgresMissing(),
  "the provisioner's health in mesh status (Debian's PostgreSQL)",
  () => {
    let sandbox: PostgresSandbox;
    let tmp: { dir: string; cleanup: () => void };
    let superuser: string;
    const children: ChildProcess[] = [];
    const meshDirOn = (m: string) => path.join(tmp.dir, 'machines', m, MESH);
    const heartbeatFile = () => path.join(meshDirOn('db1'), 'provides', PROVIDER, '.heartbeat');
    const baton = (...args: string[]) =>
      runBaton(
        ['--state-dir', path.join(tmp.dir, 'state'), ...args, '--inventory', path.join(tmp.dir, 'mesh.yaml')],
        {
          cwd: tmp.dir,
          env: { NO_COLOR: '1' },
          timeoutMs: 60_000,
        },
      );

    function startProvisioner(): { stop(): Promise<void> } {
      const child = spawn(
        process.execPath,
        [
          BIN,
          'provision',
          'postgres',
          '--mesh-dir',
          meshDirOn('db1'),
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
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      };
    }

    const heartbeat = () =>
      existsSync(heartbeatFile()) ? parseHeartbeat(readFileSync(heartbeatFile(), 'utf8')) : undefined;

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
      tmp = makeTempDir('baton-heartbeat-');
      superuser = `su_${randomBytes(3).toString('hex')}`;
      writeLocalMesh(tmp.dir, { provisionerRole: superuser });
      const first = randomBytes(24).toString('base64url');
      await asSuperuser(sandbox, async (c) =>
        c.query(
          `CREATE ROLE ${superuser} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(first))}'`,
        ),
      );
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

    it("its superuser's password changed by hand: status exits 3 naming the provisioner, and no pair keeps its ✓", async () => {
      const provisioner = startProvisioner();
      try {
        expect(
          (await baton('mesh', 'rotate', '--provider', PROVIDER, '--yes', '--wait', '20')).exitCode,
        ).toBe(0);
        await vi.waitFor(() => expect(heartbeat()?.login).toBe('ok'), { timeout: 10_000, interval: 100 });
        expect(statSync(heartbeatFile()).mode & 0o777).toBe(0o600);
        const healthy = await baton('mesh', 'status', '--json');
        expect(healthy.exitCode, healthy.stdout).toBe(0);
        expect((JSON.parse(healthy.stdout) as { provisioners: { state: string }[] }).provisioners).toEqual([
          expect.objectContaining({ provider: PROVIDER, machine: 'db1', state: 'ok', healthy: true }),
        ]);

        // Someone changes the provisioner's superuser password in the database by hand and ends its
        // session, as a DBA would. (While its session lives, the provisioner's check finds its own
        // role changed and puts the delivered password back: no lock-out then, and `ok` is true.)
        const other = randomBytes(24).toString('base64url');
        await asSuperuser(sandbox, async (c) => {
          await c.query(`ALTER ROLE ${superuser} PASSWORD '${await scramVerifier(Buffer.from(other))}'`);
          await c.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1 AND application_name = 'baton-provision'`,
            [superuser],
          );
        });
        expect(
          await canLogin(
            sandbox,
            superuser,
            readFileSync(path.join(meshDirOn('db1'), 'consumes', PROVIDER, superuser), 'utf8'),
          ),
        ).toBe(false);
        await vi.waitFor(() => expect(heartbeat()?.login).toBe('refused'), {
          timeout: 15_000,
          interval: 100,
        });

        const plain = await baton('mesh', 'status');
        expect(plain.exitCode, plain.all).toBe(3);
        expect(plain.stdout).toContain(
          'provisioner locked-out: the provisioner of pg-main on db1 cannot log in',
        );
        expect(plain.stdout).toContain(superuser);
        expect(plain.stdout).toContain(`mesh seed --pair ${PROVIDER}:provisioner --from-file <FILE>`);
        expect(plain.stdout).not.toMatch(/✓ applied/);
        expect(plain.stdout).not.toContain(other);
        const json = JSON.parse((await baton('mesh', 'status', '--json')).stdout) as {
          exit_code: number;
          pairs: { state: string; detail: string }[];
          provisioners: { state: string; next_steps: { args: string[] }[] }[];
        };
        expect(json.exit_code).toBe(3);
        expect(json.provisioners[0]!.state).toBe('locked-out');
        expect(json.pairs.map((p) => p.state)).toEqual(['pending', 'pending', 'pending']);
        for (const p of json.pairs)
          expect(p.detail).toContain('the provisioner of pg-main on db1 cannot log in');
      } finally {
        await provisioner.stop();
      }
      // Stopped, it says so rather than going silent.
      expect(heartbeat()?.login).toBe('stopped');
      const stopped = await baton('mesh', 'status');
      expect(stopped.exitCode).toBe(3);
      expect(stopped.stdout).toContain(
        'provisioner stopped: the provisioner of pg-main on db1 was stopped at',
      );
    }, 90_000);
  },
);
