/**
 * An auth_file pgbouncer on ANOTHER machine than its provider (issue 45, "a pooler is a holder"):
 * Debian's pgbouncer 1.18 on `pool1`, reached over a real sshd, in front of Debian's PostgreSQL
 * 15 whose provider `db1` and real provisioner are local, as are the consumers. No provisioner
 * runs beside the pooler, so baton keeps its auth_file itself in the test login's pooler step:
 * the verifier the provisioner recorded (0600 under `.provisioner/verifiers/`), written by the
 * agent's compare-and-swap over ssh, then RELOAD on the admin console reached from pool1, then
 * the test login through pgbouncer. An app logs in THROUGH pgbouncer with what its consumer
 * file says (re-read for each connection). The tests share one mesh and run in order.
 *
 * Run `npm run build` before running this file alone.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { appliedVerifierPath, parseAppliedVerifiers } from '../../src/mesh/applied-verifier.js';
import { authLineSecret, authLineUser } from '../../src/mesh/pooler-auth-line.js';
import { freePort } from '../../src/sandbox/free-port.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { consumerLogin, loginsMore, startPasswordApp } from '../helpers/password-app.js';
import { asSuperuser, debianPostgresMissing } from '../helpers/postgres.js';
import { pgbouncerMissing, startPgbouncer, type Pgbouncer } from '../helpers/pgbouncer.js';
import { describeWithPart } from '../helpers/real-part.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';

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
let sshd: Sshd | undefined;

describeWithPart(
  debianPostgresMissing() ?? pgbouncerMissing() ?? sshdUnavailable(),
  'an auth_file pgbouncer on another machine than its provider, kept by baton over ssh',
  () => {
    // Before the mesh's hooks: its inventory names the sshd's port.
    beforeAll(async () => {
      bouncerPort = await freePort();
      sshd = await startSshd();
    }, 60_000);
    const suite = usePostgresMesh({
      server: 'debian',
      per: 'file',
      prefix: 'baton-pooler-remote-',
      batonTimeoutMs: 120_000,
      setupTimeoutMs: 120_000,
      writeInventory: (dir, superuser) => {
        const s = sshd!;
        writeFileSync(
          path.join(dir, 'mesh.yaml'),
          [
            `ssh: { identity: ${s.identity}, known_hosts: ${s.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 20 }`,
            'machines:',
            ...['db1', 'web1', 'web2'].map(
              (m) => `  - { name: ${m}, address: machines/${m}, transport: local }`,
            ),
            `  - { name: pool1, address: "${s.user}@127.0.0.1:${s.port}", transport: ssh, mesh_dir: ${path.join(dir, 'ssh-pool1', 'mesh')} }`,
            'providers:',
            '  - { name: pg-main, machine: db1, kind: postgres, connect: { pooler: bouncer1, database: postgres } }',
            'consumers:',
            '  - { name: web1-app, machine: web1, uses: [pg-main], reads: each-connection, credential: alternating }',
            '  - { name: web2-app, machine: web2, uses: [pg-main], reads: each-connection }',
            `  - { name: provisioner, machine: db1, reads: each-connection, uses: [pg-main], role: ${superuser} }`,
            'poolers:',
            `  - { name: bouncer1, machine: pool1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1, port: ${bouncerPort} }, auth_file: /pending, admin: { user: ${ADMIN}, password_file: admin.password } }`,
            '',
          ].join('\n'),
        );
        for (const m of ['db1', 'web1', 'web2'])
          mkdirSync(path.join(dir, 'machines', m), { recursive: true });
        mkdirSync(path.join(dir, 'ssh-pool1', 'mesh'), { recursive: true });
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
        writeFileSync(path.join(mesh.dir, 'admin.password'), `${ADMIN_PASSWORD}\n`, { mode: 0o600 });
      },
    });
    beforeAll(() => {
      provisioner = suite.mesh.startProvisioner(0.1);
    });
    afterAll(async () => {
      await provisioner?.stop();
      await bouncer?.stop();
      await sshd?.stop();
    });

    const mesh = () => suite.mesh;
    const rotate = (consumer: string, inventory = mesh().inventory) =>
      mesh().baton(
        'mesh',
        'rotate',
        '--consumer',
        consumer,
        '--inventory',
        inventory,
        '--yes',
        '--wait',
        '60',
        // Every ssh step's bound, raised: a loaded machine's handshake is not what is tested here.
        '--timeout',
        '60',
      );
    const through = () => ({ host: '127.0.0.1', port: bouncerPort });
    const authText = () => readFileSync(bouncer!.authFile, 'utf8');
    const authLines = () => authText().replace(/\n$/, '').split('\n');
    const lineOf = (login: string) => authLines().find((l) => authLineUser(l) === login);
    const stored = async (login: string) =>
      (
        await asSuperuser(mesh().sandbox, (c) =>
          c.query<{ rolpassword: string }>('SELECT rolpassword FROM pg_authid WHERE rolname = $1', [login]),
        )
      ).rows[0]?.rolpassword;
    const providerDir = () => path.join(mesh().meshDirOn('db1'), 'provides', 'pg-main');
    /** Every password a consumer file holds now: none may be in the auth_file. */
    const consumerPasswords = () =>
      [
        ['web1', 'web1_app'],
        ['web2', 'web2_app'],
      ]
        .map(([m, role]) => mesh().consumerFile(m!, role!))
        .filter((f) => existsSync(f))
        .map((f) => consumerLogin(readFileSync(f, 'utf8'), path.basename(f)).password);
    /** The auth_file holds verifiers only: each rotated login's line is the database's own, byte for byte. */
    const expectVerifiersOnly = async (logins: readonly string[]) => {
      for (const password of consumerPasswords()) expect(authText()).not.toContain(password);
      for (const login of logins) {
        const secret = authLineSecret(lineOf(login) ?? '');
        expect(secret).toMatch(/^SCRAM-SHA-256\$4096:/);
        expect(secret).toBe(await stored(login));
      }
      expect(authLines().slice(0, KEPT.length)).toEqual(KEPT);
    };

    it("a pooler whose machine cannot be reached closes the gate: exit 4, the pooler's machine named, nothing sent", async () => {
      const closed = await freePort();
      const unreachable = path.join(mesh().dir, 'mesh-unreachable.yaml');
      writeFileSync(
        unreachable,
        readFileSync(mesh().inventory, 'utf8').replace(`127.0.0.1:${sshd!.port}"`, `127.0.0.1:${closed}"`),
      );
      // The consumers' machines and the pooler's (the provider's is the running provisioner's too).
      const untouched = () =>
        ['machines/web1', 'machines/web2', 'ssh-pool1'].map((d) => snapshotDir(path.join(mesh().dir, d)));
      const machines = untouched();
      const lines = authText();
      const r = await rotate('web1-app', unreachable);
      expect(r.exitCode, r.all).toBe(4);
      expect(r.all).toContain('pool1');
      expect(r.all).toContain('bouncer1');
      expect(r.all).toMatch(/nothing was (generated or )?sent/i);
      expect(untouched()).toEqual(machines);
      expect(authText()).toBe(lines);
      console.log(`remote auth_file pooler unreachable: gate closed, exit ${r.exitCode}`);
    }, 120_000);

    it('an alternating pair through the pooler on pool1: 2 rotations, 0 failed logins through it; its lines are the database verifiers, never a password; the recorded verifiers are 0600', async () => {
      const first = await rotate('web1-app');
      expect(first.exitCode, first.all).toBe(0);
      expect(first.stdout).toContain(
        "after the receipt baton copies there the verifier db1's provisioner recorded (never a password)",
      );
      const app = startPasswordApp(through(), () => mesh().consumerFile('web1', 'web1_app'), 'web1_app');
      try {
        await loginsMore(app, 10);
        for (let i = 0; i < 2; i++) {
          const r = await rotate('web1-app');
          expect(r.exitCode, r.all).toBe(0);
          expect(r.stdout).toContain('test login pg-main:web1-app: web1_app_');
          await loginsMore(app, 10);
        }
      } finally {
        await app.stop();
      }
      const users = new Set(app.attempts.map((a) => a.user));
      console.log(
        `remote auth_file, alternating: ${app.attempts.length} logins through pgbouncer across 2 rotations (as ${[...users].sort().join(', ')}), ${app.failures().length} failed`,
      );
      expect(app.failures()).toEqual([]);
      expect(users).toEqual(new Set(['web1_app_a', 'web1_app_b']));
      await expectVerifiersOnly(['web1_app_a', 'web1_app_b']);
      const record = appliedVerifierPath(providerDir(), 'web1_app_a');
      expect(statSync(record).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(record)).mode & 0o777).toBe(0o700);
      expect(parseAppliedVerifiers(readFileSync(record, 'utf8'))[0]?.verifier).toBe(
        await stored('web1_app_a'),
      );
    }, 300_000);

    it('a single pair through the pooler on pool1: 0 failed logins through it after each of 2 rotations', async () => {
      const first = await rotate('web2-app');
      expect(first.exitCode, first.all).toBe(0);
      const app = startPasswordApp(through(), () => mesh().consumerFile('web2', 'web2_app'), 'web2_app');
      const quiet: [number, number][] = [];
      try {
        await loginsMore(app, 10);
        for (let i = 0; i < 2; i++) {
          const r = await rotate('web2-app');
          expect(r.exitCode, r.all).toBe(0);
          const end = Date.now();
          await loginsMore(app, 10);
          quiet.push([end, Date.now()]);
        }
      } finally {
        await app.stop();
      }
      const after = app.attempts.filter((a) => quiet.some(([from, to]) => a.at >= from && a.at < to));
      const stranded = after.filter((a) => !a.ok);
      console.log(
        `remote auth_file, single: ${app.attempts.length} logins through pgbouncer across 2 rotations; ${after.length} after a rotation ended, ${stranded.length} of them failed; ${app.attempts.filter((a) => !a.ok).length - stranded.length} failed inside the rotations`,
      );
      // 10 a rotation, less the one each window may cut (it started before the rotation ended).
      expect(after.length).toBeGreaterThanOrEqual(18);
      expect(stranded.map((a) => `${a.user} ${a.code ?? ''}`)).toEqual([]);
      await expectVerifiersOnly(['web2_app']);
    }, 300_000);

    it('a pooler that took the new line but could not RELOAD: the old line is put back byte for byte, the rotation rolls back naming the pooler and its admin console, the roll-back re-applies the very verifier that line names, and logins through the pooler go on', async () => {
      const on = consumerLogin(
        readFileSync(mesh().consumerFile('web1', 'web1_app'), 'utf8'),
        'web1_app',
      ).user;
      const target = on === 'web1_app_a' ? 'web1_app_b' : 'web1_app_a';
      const oldLine = lineOf(target);
      const oldVerifier = await stored(target);
      expect(authLineSecret(oldLine ?? '')).toBe(oldVerifier);
      // The admin console refuses baton's RELOAD: after the line was written, before pgbouncer read it.
      const adminFile = path.join(mesh().dir, 'admin.password');
      writeFileSync(adminFile, 'not-the-admin-password\n', { mode: 0o600 });
      const web1 = path.join(mesh().dir, 'machines', 'web1');
      const unrecorded = (snap: Record<string, string>) =>
        Object.fromEntries(Object.entries(snap).filter(([p]) => !p.endsWith('.rotation')));
      const before = unrecorded(snapshotDir(web1));
      const app = startPasswordApp(through(), () => mesh().consumerFile('web1', 'web1_app'), 'web1_app');
      let r;
      try {
        await loginsMore(app, 5);
        r = await rotate('web1-app');
        expect(r.exitCode, r.all).toBe(3);
        // The provisioner applied the rolled-back credential again: with the verifier it had.
        await vi.waitFor(async () => expect(await stored(target)).toBe(oldVerifier), {
          timeout: 60_000,
          interval: 200,
        });
        await loginsMore(app, 5);
      } finally {
        await app.stop();
        writeFileSync(adminFile, `${ADMIN_PASSWORD}\n`, { mode: 0o600 });
      }
      expect(r.all).toContain('pooler bouncer1 on pool1');
      expect(r.all).toContain(`RELOAD on its admin console ${ADMIN}@127.0.0.1:${bouncerPort} was refused`);
      expect(r.all).toContain('web1-app was NOT moved');
      expect(r.all).toContain('Next: baton could not give pooler bouncer1 on pool1 web1_app_');
      expect(lineOf(target)).toBe(oldLine);
      expect(unrecorded(snapshotDir(web1))).toEqual(before);
      expect(app.failures()).toEqual([]);
      await expectVerifiersOnly(['web1_app_a', 'web1_app_b']);
      console.log(
        `remote auth_file, RELOAD refused: exit ${r.exitCode}, the old line back and the database on its verifier; ${app.attempts.length} logins through the pooler meanwhile, ${app.failures().length} failed`,
      );
    }, 300_000);
  },
);
