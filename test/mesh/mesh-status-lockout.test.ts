/**
 * The locked-out provisioner is said, with its way out: its superuser's password changed by hand WHILE its
 * session stays open (`ALTER ROLE … PASSWORD`, nothing else). Against Debian's PostgreSQL 15 and
 * the BUILT CLI (`baton provision postgres --watch`, `baton mesh status`, local transport): the
 * provisioner's next cycle says it cannot log in, and `mesh status --json` exits 3 naming the
 * provider, its superuser file and the way out, with no secret in the words and no delivered
 * file changed; the password restored, status exits 0 again. Before, the fresh login that finds
 * this ran only every 10 s, and a status read four seconds after the change exited 0.
 * The health reading itself is unit-tested below. Run `npm run build` before this file alone.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  formatHeartbeat,
  heartbeatPath,
  HEARTBEAT_FORMAT,
  parseHeartbeat,
  type Heartbeat,
} from '../../src/mesh/provisioner-heartbeat.js';
import { readProvisionerHealth } from '../../src/mesh/read-provisioner-health.js';
import type { RotationPlan } from '../../src/mesh/rotation-plan.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { provisionerHealthJson, provisionerHealthLines } from '../../src/app/provisioner-health-text.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { usePostgresMesh } from '../helpers/postgres-mesh.js';
import { asSuperuser, canLogin, debianPostgresMissing } from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';

const PROVIDER = 'pg-main';

interface StatusJson {
  exit_code: number;
  pairs: { role: string; state: string }[];
  provisioners: {
    provider: string;
    machine: string;
    state: string;
    healthy: boolean;
    detail: string | null;
    next: string | null;
    next_steps: { args: string[] }[];
  }[];
}

/** Every credential file of the mesh (path → mode and bytes): the receipts and the heartbeat are the provisioner's to rewrite. */
function credentialFiles(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '.applied' && entry.name !== '.provisioner') walk(full);
      } else if (entry.isFile())
        files.set(full, `${(statSync(full).mode & 0o777).toString(8)} ${readFileSync(full, 'base64')}`);
    }
  };
  walk(root);
  return files;
}

describeWithPart(
  debianPostgresMissing(),
  'a provisioner locked out under its open session (Debian PostgreSQL 15)',
  () => {
    const suite = usePostgresMesh({ server: 'debian', prefix: 'baton-lockout-' });
    const baton = (...args: string[]) => suite.mesh.baton(...args, '--inventory', suite.mesh.inventory);
    const status = async () => {
      const run = await baton('mesh', 'status', '--json');
      return { run, json: JSON.parse(run.stdout) as StatusJson };
    };

    it("its superuser's password changed by hand: the next cycle says so, status exits 3 naming the file and the way out; restored, 0", async () => {
      const { sandbox, superuser } = suite.mesh;
      const heartbeatFile = heartbeatPath(path.join(suite.mesh.meshDirOn('db1'), 'provides', PROVIDER));
      const superuserFile = suite.mesh.consumerFile('db1', superuser);
      const provisioner = suite.mesh.startProvisioner(2);
      const beat = () =>
        existsSync(heartbeatFile) ? parseHeartbeat(readFileSync(heartbeatFile, 'utf8')) : undefined;
      try {
        const rotated = await baton('mesh', 'rotate', '--provider', PROVIDER, '--yes', '--wait', '20');
        expect(rotated.exitCode, rotated.all).toBe(0);
        await vi.waitFor(() => expect(beat()?.login).toBe('ok'), { timeout: 20_000, interval: 100 });
        const healthy = await status();
        expect(healthy.run.exitCode, healthy.run.stdout).toBe(0);
        expect(healthy.json.provisioners[0]?.state).toBe('ok');
        const machines = path.join(suite.mesh.dir, 'machines');
        const before = credentialFiles(machines);
        const current = readFileSync(superuserFile, 'utf8');

        // A DBA changes it by hand, just after a cycle ended (so the next one begins after the
        // change); the provisioner's kept session stays open.
        const beatAfter = async (since: number) => {
          let found: Heartbeat | undefined;
          await vi.waitFor(
            () => {
              const b = beat();
              if (!b || b.pid !== provisioner.child.pid || Date.parse(b.at) <= since)
                throw new Error('no beat yet');
              found = b;
            },
            { timeout: 30_000, interval: 20 },
          );
          return found!;
        };
        await beatAfter(Date.now());
        const other = randomBytes(24).toString('base64url');
        await asSuperuser(sandbox, async (c) => {
          await c.query(`ALTER ROLE ${superuser} PASSWORD '${await scramVerifier(Buffer.from(other))}'`);
        });
        const changedAt = Date.now();
        // Tied to the heartbeat: the very next cycle says it (before, a fresh login came only every 10 s).
        const next = await beatAfter(changedAt);
        expect(next.login).toBe('refused');
        expect(await canLogin(sandbox, superuser, current)).toBe(false);

        const locked = await status();
        expect(locked.run.exitCode, locked.run.stdout).toBe(3);
        expect(locked.json.exit_code).toBe(3);
        const p = locked.json.provisioners[0]!;
        expect(p).toMatchObject({ provider: PROVIDER, machine: 'db1', state: 'locked-out', healthy: false });
        expect(p.detail).toContain('the provisioner of pg-main on db1 cannot log in');
        expect(p.detail).toContain(superuser);
        // The path as db1 knows it (the local transport keeps each machine's root under machines/<name>).
        const onDb1 = `/${path.relative(path.join(machines, 'db1'), superuserFile)}`;
        expect(onDb1).toBe(`/var/lib/baton/mesh/consumes/${PROVIDER}/${superuser}`);
        expect(p.next).toContain(`Its superuser file ${onDb1} on db1`);
        expect(p.next).toContain("no longer matches the database's password");
        expect(p.next).toContain('restore the password');
        expect(p.next_steps).toHaveLength(1);
        expect(p.next_steps[0]!.args.join(' ')).toContain(
          `mesh seed --pair ${PROVIDER}:provisioner --from-file`,
        );
        for (const secret of [other, current]) {
          expect(locked.run.stdout).not.toContain(secret);
          expect(locked.run.stderr).not.toContain(secret);
        }
        // Nothing else changed: every delivered file as it was, and the apps still log in.
        expect(credentialFiles(machines)).toEqual(before);
        for (const pair of locked.json.pairs.filter((q) => q.role !== superuser))
          expect(
            await canLogin(sandbox, pair.role, readFileSync(suite.mesh.providerFile(pair.role), 'utf8')),
          ).toBe(true);

        // The password restored (the one the superuser file holds): the next fresh login clears it.
        const restoredAt = Date.now();
        await asSuperuser(sandbox, async (c) => {
          await c.query(`ALTER ROLE ${superuser} PASSWORD '${await scramVerifier(Buffer.from(current))}'`);
        });
        await vi.waitFor(
          () => {
            const b = beat();
            expect(b && Date.parse(b.at) > restoredAt && b.login).toBe('ok');
          },
          { timeout: 30_000, interval: 50 },
        );
        const mended = await status();
        expect(mended.run.exitCode, mended.run.stdout).toBe(0);
        expect(mended.json.provisioners[0]?.state).toBe('ok');
        expect(credentialFiles(machines)).toEqual(before);
      } finally {
        await provisioner.stop();
      }
    }, 120_000);
  },
);

describe('reading a locked-out provisioner', () => {
  const NOW = Date.parse('2026-12-01T12:00:00Z');
  const plan = {
    pairs: [
      { provider: PROVIDER, providerMachine: 'db1', providerPath: '/m/provides/pg-main/web1_app' },
      { provider: 'pg-other', providerMachine: 'db2', providerPath: '/n/provides/pg-other/web1_app' },
    ],
  } as unknown as RotationPlan;
  const refused: Heartbeat = {
    format: HEARTBEAT_FORMAT,
    provider: PROVIDER,
    at: new Date(NOW - 3_000).toISOString(),
    interval_ms: 3_000,
    login: 'refused',
    reason: 'PostgreSQL refused the superuser login for "postgres" (password authentication failed).',
    superuser: 'postgres',
    last_ok_at: new Date(NOW - 6_000).toISOString(),
    host: 'db1',
    pid: 7,
  };
  const read = (pairs: { provider: string; consumer: string; role: string }[]) =>
    readProvisionerHealth(
      plan,
      { pairs } as never,
      ((machine: string) => ({
        readTexts: (paths: readonly string[]) =>
          Promise.resolve(
            paths.map((p) =>
              machine === 'db1' && p === '/m/provides/pg-main/.provisioner/heartbeat'
                ? formatHeartbeat(refused)
                : undefined,
            ),
          ),
      })) as unknown as TransportFor,
      { concurrency: 2, nowMs: NOW },
    );

  it('names the provider, its superuser file under the mesh dir and the seed of its pair; the other provider is untouched', async () => {
    const health = await read([{ provider: PROVIDER, consumer: 'provisioner', role: 'postgres' }]);
    expect(health.map((h) => [h.provider, h.state])).toEqual([
      [PROVIDER, 'locked-out'],
      ['pg-other', 'none'],
    ]);
    const [line, next] = provisionerHealthLines(health);
    expect(line).toBe(
      '✗ provisioner locked-out: the provisioner of pg-main on db1 cannot log in: PostgreSQL refused its superuser login as postgres 3 s ago (PostgreSQL refused the superuser login for "postgres" (password authentication failed).); it last logged in at 2026-12-01T11:59:54.000Z.',
    );
    expect(next).toBe(
      "    next: Its superuser file /m/consumes/pg-main/postgres on db1 (or the one its --superuser-file names) no longer matches the database's password for postgres: restore the password in the database if it was changed by hand, or re-seed both ends of its pair with the role's current password: baton mesh seed --pair pg-main:provisioner --from-file <FILE>. Nothing is applied until it logs in.",
    );
    const json = provisionerHealthJson(health);
    expect(json[0]).toMatchObject({ state: 'locked-out', healthy: false });
    expect(json[1]).toMatchObject({ state: 'none', healthy: true, next: null });
  });

  it('without a pair for its superuser, names the file to write and no seed', async () => {
    const health = await read([]);
    const h = health[0]!;
    if (!('next' in h)) throw new Error('no way out');
    expect(h.next).toEqual([
      "Its superuser file /m/consumes/pg-main/postgres on db1 (or the one its --superuser-file names) no longer matches the database's password for postgres: restore the password in the database if it was changed by hand, or write the role's current password to that file (0600). Nothing is applied until it logs in.",
    ]);
  });
});
