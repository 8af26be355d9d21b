/**
 * The provisioner's own health as `mesh status` reads it, against Debian's PostgreSQL 15 and
 * the BUILT CLI (`baton provision postgres --watch` and `baton mesh status`, local transport).
 * Its superuser's password changed by hand locks it out: status exits 3 naming the
 * provisioner and the way out, and no pair keeps its ✓. Stopped, it says so. The heartbeat's
 * parsing and judgement (hostile text, a silent provisioner) are unit-tested below.
 * Run `npm run build` before running this file alone.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  formatHeartbeat,
  heartbeatPath,
  HEARTBEAT_FORMAT,
  parseHeartbeat,
  provisionerHealth,
  type Heartbeat,
} from '../../src/mesh/provisioner-heartbeat.js';
import { readProvisionerHealth } from '../../src/mesh/read-provisioner-health.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { heartbeatWriter } from '../../src/provisioner/heartbeat.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { usePostgresMesh } from '../helpers/postgres-mesh.js';
import { asSuperuser, canLogin, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';

const PROVIDER = 'pg-main';
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
    const suite = usePostgresMesh({ server: 'debian', prefix: 'baton-heartbeat-' });
    const providerDir = () => path.join(suite.mesh.meshDirOn('db1'), 'provides', PROVIDER);
    const heartbeatFile = () => heartbeatPath(providerDir());
    const baton = (...args: string[]) => suite.mesh.baton(...args, '--inventory', suite.mesh.inventory);
    const heartbeat = () =>
      existsSync(heartbeatFile()) ? parseHeartbeat(readFileSync(heartbeatFile(), 'utf8')) : undefined;

    it("its superuser's password changed by hand: status exits 3 naming the provisioner, and no pair keeps its ✓", async () => {
      const { sandbox, superuser } = suite.mesh;
      const provisioner = suite.mesh.startProvisioner(1);
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
          await canLogin(sandbox, superuser, readFileSync(suite.mesh.consumerFile('db1', superuser), 'utf8')),
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

describe('where the heartbeat lives', () => {
  const plan = {
    pairs: [{ provider: PROVIDER, providerMachine: 'db1', providerPath: '/m/provides/pg-main/app' }],
  } as unknown as RotationPlan;
  const reading = (files: Record<string, string>) =>
    readProvisionerHealth(
      plan,
      { pairs: [] },
      (() => ({
        readTexts: (paths: readonly string[]) => Promise.resolve(paths.map((p) => files[p])),
      })) as unknown as TransportFor,
      { concurrency: 4, nowMs: NOW },
    );

  it('is read from .provisioner/, and an older provisioner beside the delivered files is still read', async () => {
    expect(heartbeatPath('/m/provides/pg-main')).toBe('/m/provides/pg-main/.provisioner/heartbeat');
    const stopped = formatHeartbeat(beat({ login: 'stopped' }));
    expect((await reading({ '/m/provides/pg-main/.heartbeat': stopped }))[0]!.state).toBe('stopped');
    // The new place wins over a copy left in the old one.
    expect(
      (
        await reading({
          '/m/provides/pg-main/.heartbeat': stopped,
          '/m/provides/pg-main/.provisioner/heartbeat': formatHeartbeat(beat()),
        })
      )[0]!.state,
    ).toBe('ok');
    expect((await reading({}))[0]!.state).toBe('none');
  });

  it('the writer renames only inside .provisioner/ (0700) and removes the old-place file once', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'baton-heartbeat-'));
    try {
      writeFileSync(path.join(dir, '.heartbeat'), 'old', { mode: 0o600 });
      const before = statSync(dir);
      const lines: string[] = [];
      const writer = heartbeatWriter({
        deliveredDir: dir,
        provider: PROVIDER,
        superuser: 'su_x',
        intervalMs: 2_000,
        log: (line) => lines.push(line),
      });
      await writer.stopped();
      expect(existsSync(path.join(dir, '.heartbeat'))).toBe(false);
      expect(statSync(path.join(dir, '.provisioner')).mode & 0o777).toBe(0o700);
      const settled = statSync(dir);
      expect(settled.mtimeMs).toBeGreaterThanOrEqual(before.mtimeMs);
      await writer.stopped();
      await writer.stopped();
      // Two more beats: the provider directory's own stat does not move (the idle poll trusts it).
      const after = statSync(dir);
      expect([after.ino, after.mtimeMs, after.ctimeMs]).toEqual([
        settled.ino,
        settled.mtimeMs,
        settled.ctimeMs,
      ]);
      expect(readdirSync(dir).sort()).toEqual(['.provisioner']);
      expect(parseHeartbeat(readFileSync(heartbeatPath(dir), 'utf8'))?.login).toBe('stopped');
      expect(lines).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
