/**
 * A pgbouncer that keeps its logins in an auth_file, rotated as a holder (issue 45): Debian's
 * PostgreSQL 15 and pgbouncer 1.18 on the provider's machine, the real provisioner started with
 * `--pooler-auth-file` (it writes each login's new verifier into the auth_file, the database's
 * own string, and sends RELOAD on the admin console before the receipt), and the built CLI on a
 * local-transport mesh whose provider's `connect:` goes through the pooler. An app logs in
 * THROUGH pgbouncer every 50 ms while pairs rotate: none of its logins may strand. Then a
 * provisioner started without the flag leaves the pooler's line stale: the test login through
 * it is refused, the rotation names the pooler and its auth_file, rolls back and changes nothing
 * else. The tests share one mesh and run in order.
 *
 * Run `npm run build` before running this file alone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/sandbox/free-port.js';
import { authLineUser } from '../../src/mesh/pooler-auth-line.js';
import { heartbeatPath, parseHeartbeat } from '../../src/mesh/provisioner-heartbeat.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { loginsMore, startPasswordApp } from '../helpers/password-app.js';
import { asSuperuser, debianPostgresMissing } from '../helpers/postgres.js';
import { pgbouncerMissing, startPgbouncer, type Pgbouncer } from '../helpers/pgbouncer.js';
import { describeWithPart } from '../helpers/real-part.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { writeLocalMesh } from './mesh-fixture.js';

const ADMIN = 'pooler_admin';
const ADMIN_PASSWORD = 'admin-console-only-in-this-test';
/** Lines of the auth_file baton must keep byte for byte: the admin, a comment, another login. */
const KEPT = [
  `"${ADMIN}" "${ADMIN_PASSWORD}"`,
  '; kept by hand: "web1_app_a" is not this line',
  '"some ""quoted"" user" "SCRAM-SHA-256$4096:c2FsdA==$AAAA:BBBB"',
];

let bouncerPort = 0;
let bouncer: Pgbouncer | undefined;
let provisioner: MeshProvisioner | undefined;

describeWithPart(
  debianPostgresMissing() ?? pgbouncerMissing(),
  'pgbouncer with an auth_file kept by the provisioner',
  () => {
    beforeAll(async () => {
      bouncerPort = await freePort();
    });
    const suite = usePostgresMesh({
      server: 'debian',
      per: 'file',
      prefix: 'baton-pooler-file-',
      batonTimeoutMs: 60_000,
      setupTimeoutMs: 120_000,
      writeInventory: (dir, superuser) => {
        const file = writeLocalMesh(dir, { provisionerRole: superuser });
        const text = readFileSync(file, 'utf8')
          .replace(
            '{ name: pg-main, machine: db1, kind: postgres }',
            '{ name: pg-main, machine: db1, kind: postgres, connect: { pooler: bouncer1 } }',
          )
          .replace(
            '{ name: web1-app, machine: web1,',
            '{ name: web1-app, machine: web1, credential: alternating,',
          );
        writeFileSync(
          file,
          `${text}poolers:\n  - { name: bouncer1, machine: db1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1, port: ${bouncerPort} }, auth_file: /pending, admin: { user: ${ADMIN} } }\n`,
        );
      },
      beforeSeed: async (mesh) => {
        bouncer = await startPgbouncer(mesh.sandbox, {
          port: bouncerPort,
          authFileText: `${KEPT.join('\n')}\n`,
          adminUser: ADMIN,
        });
        writeFileSync(
          mesh.inventory,
          readFileSync(mesh.inventory, 'utf8').replace(
            'auth_file: /pending',
            `auth_file: ${bouncer.authFile}`,
          ),
        );
        writeFileSync(path.join(mesh.dir, 'admin.password'), ADMIN_PASSWORD, { mode: 0o600 });
      },
    });
    const startProvisioner = (keepsAuthFile: boolean) =>
      suite.mesh.spawnTracked(process.execPath, [
        ...suite.mesh.provisionerArgs(),
        ...(keepsAuthFile
          ? [
              '--pooler-auth-file',
              bouncer!.authFile,
              '--pooler-admin',
              `127.0.0.1:${bouncerPort}`,
              '--pooler-admin-user',
              ADMIN,
              '--pooler-admin-password-file',
              path.join(suite.mesh.dir, 'admin.password'),
            ]
          : []),
        '--watch',
        '--interval',
        '0.1',
      ]);
    beforeAll(() => {
      provisioner = startProvisioner(true);
    });
    afterAll(async () => {
      await provisioner?.stop();
      await bouncer?.stop();
    });

    const mesh = () => suite.mesh;
    const rotate = (consumer: string) =>
      mesh().baton(
        'mesh',
        'rotate',
        '--consumer',
        consumer,
        '--inventory',
        mesh().inventory,
        '--yes',
        '--wait',
        '30',
      );
    const through = () => ({ host: '127.0.0.1', port: bouncerPort });
    const authLines = () => readFileSync(bouncer!.authFile, 'utf8').replace(/\n$/, '').split('\n');
    /** The auth_file's line for `login`, and the verifier PostgreSQL holds for it, quoted the same way. */
    const lineAndDatabase = async (login: string) => {
      const line = authLines().find((l) => authLineUser(l) === login);
      const stored = await asSuperuser(mesh().sandbox, (c) =>
        c.query<{ rolpassword: string }>('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [login]),
      );
      return { line, database: `"${login}" "${stored.rows[0]?.rolpassword ?? ''}"` };
    };

    it('an alternating pair through pgbouncer rotates 3 times with 0 failed logins; its lines are the database verifiers, the other lines untouched', async () => {
      const first = await rotate('web1-app');
      expect(first.exitCode, first.all).toBe(0);
      expect(first.stdout).toContain(
        "db1's provisioner writes the new one there and sends RELOAD before the receipt",
      );
      // The provisioner states what its --pooler-* flags told it; the rotation checked it is the inventory's pooler.
      const beat = parseHeartbeat(
        readFileSync(heartbeatPath(path.join(mesh().meshDirOn('db1'), 'provides', 'pg-main')), 'utf8'),
      );
      expect(beat?.pooler).toEqual({
        auth_file: bouncer!.authFile,
        admin: `127.0.0.1:${bouncerPort}`,
        admin_user: ADMIN,
      });
      const app = startPasswordApp(through(), () => mesh().consumerFile('web1', 'web1_app'), 'web1_app');
      try {
        await loginsMore(app, 10);
        for (let i = 0; i < 3; i++) {
          const r = await rotate('web1-app');
          expect(r.exitCode, r.all).toBe(0);
          await loginsMore(app, 5);
        }
      } finally {
        await app.stop();
      }
      const users = new Set(app.attempts.map((a) => a.user));
      console.log(
        `auth_file, alternating: ${app.attempts.length} logins through pgbouncer during 3 rotations (as ${[...users].sort().join(', ')}), ${app.failures().length} failed`,
      );
      expect(app.failures()).toEqual([]);
      expect(users).toEqual(new Set(['web1_app_a', 'web1_app_b']));
      // Each login's line is the verifier PostgreSQL holds, byte for byte; the others are as they were.
      for (const login of ['web1_app_a', 'web1_app_b']) {
        const { line, database } = await lineAndDatabase(login);
        expect(line).toBe(database);
      }
      expect(authLines().slice(0, KEPT.length)).toEqual(KEPT);
    }, 240_000);

    it('a single pair through pgbouncer: 0 stranded logins through the pooler after each of 3 rotations', async () => {
      const first = await rotate('web2-app');
      expect(first.exitCode, first.all).toBe(0);
      const app = startPasswordApp(through(), () => mesh().consumerFile('web2', 'web2_app'), 'web2_app');
      const quiet: [number, number][] = [];
      try {
        await loginsMore(app, 10);
        for (let i = 0; i < 3; i++) {
          const r = await rotate('web2-app');
          expect(r.exitCode, r.all).toBe(0);
          const end = Date.now();
          await loginsMore(app, 12);
          quiet.push([end, Date.now()]);
        }
      } finally {
        await app.stop();
      }
      const afterRotations = app.attempts.filter((a) =>
        quiet.some(([from, to]) => a.at >= from && a.at < to),
      );
      const stranded = afterRotations.filter((a) => !a.ok);
      const inWindows = app.attempts.filter((a) => !a.ok).length - stranded.length;
      console.log(
        `auth_file, single: ${app.attempts.length} logins through pgbouncer across 3 rotations; ${afterRotations.length} after a rotation ended, ${stranded.length} of them failed (stranded); ${inWindows} failed inside the stated windows`,
      );
      expect(afterRotations.length).toBeGreaterThanOrEqual(20);
      expect(stranded.map((a) => `${a.user} ${a.code ?? ''}`)).toEqual([]);
      const { line, database } = await lineAndDatabase('web2_app');
      expect(line).toBe(database);
      expect(authLines().slice(0, KEPT.length)).toEqual(KEPT);
    }, 240_000);

    it('a provisioner not told to keep the auth_file: the test login through the pooler is refused, named with its auth_file, rolled back, nothing else changed', async () => {
      await provisioner?.stop();
      provisioner = startProvisioner(false);
      const web1 = path.join(mesh().dir, 'machines', 'web1');
      const before = snapshotDir(web1);
      const lines = authLines();
      const app = startPasswordApp(through(), () => mesh().consumerFile('web1', 'web1_app'), 'web1_app');
      let r;
      try {
        await loginsMore(app, 5);
        r = await rotate('web1-app');
        await loginsMore(app, 5);
      } finally {
        await app.stop();
      }
      expect(r.exitCode, r.all).toBe(3);
      expect(r.all).toContain('(SQLSTATE 08P01): SASL authentication failed');
      expect(r.all).toContain('the server that answered is pooler bouncer1 on db1');
      expect(r.all).toContain(`its auth_file ${bouncer!.authFile} still holds web1_app_`);
      expect(r.all).toContain('then RELOAD on its admin console');
      expect(r.all).toContain('web1-app was NOT moved');
      const unrecorded = (snap: Record<string, string>) =>
        Object.fromEntries(Object.entries(snap).filter(([p]) => !p.endsWith('.rotation')));
      expect(unrecorded(snapshotDir(web1))).toEqual(unrecorded(before));
      expect(authLines()).toEqual(lines);
      expect(app.failures()).toEqual([]);
      console.log(
        `auth_file not kept: test login refused by pgbouncer (08P01), rotation exit ${r.exitCode}, rolled back; ${app.attempts.length} logins through the pooler meanwhile, ${app.failures().length} failed`,
      );
    }, 240_000);
  },
);
