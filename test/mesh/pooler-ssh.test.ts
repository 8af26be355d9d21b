/**
 * A pooler's machine over a real sshd (issue 45): Debian's pgbouncer 1.18 with `auth_query` in
 * front of Debian's PostgreSQL 15, its machine `pool1` and the consumer's machine `web1` each
 * reached by the ssh transport (two ports of one test sshd, so each is its own connection), the
 * provider and its real provisioner local. The gate resolves the pooler's machine over ssh, the
 * test login goes from web1 through pgbouncer, and an app logging in through pgbouncer with what
 * web1's consumer file says (re-read for each connection) must see 0 failed logins during and
 * after the rotations. Nothing else may change: pgbouncer's files, the pooler machine's mesh
 * directory, and no staged or kept file left on web1.
 *
 * Run `npm run build` before running this file alone.
 */
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/sandbox/free-port.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { loginsMore, startPasswordApp } from '../helpers/password-app.js';
import { debianPostgresMissing } from '../helpers/postgres.js';
import {
  pgbouncerFileDigests,
  pgbouncerMissing,
  startAuthQueryPgbouncer,
  type Pgbouncer,
} from '../helpers/pgbouncer.js';
import { describeWithPart } from '../helpers/real-part.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';

let bouncerPort = 0;
let bouncer: Pgbouncer | undefined;
let provisioner: MeshProvisioner | undefined;
let sshd: Sshd | undefined;

describeWithPart(
  debianPostgresMissing() ?? pgbouncerMissing() ?? sshdUnavailable(),
  "a pooler's machine over a real sshd (pgbouncer with auth_query)",
  () => {
    // Before the mesh's hooks: its inventory names the sshd's ports.
    beforeAll(async () => {
      bouncerPort = await freePort();
      sshd = await startSshd({ extraPorts: 1 });
    }, 60_000);
    const overSsh = (dir: string, m: string) => path.join(dir, `ssh-${m}`, 'mesh');
    const suite = usePostgresMesh({
      server: 'debian',
      per: 'file',
      prefix: 'baton-pooler-ssh-',
      batonTimeoutMs: 120_000,
      setupTimeoutMs: 120_000,
      writeInventory: (dir, superuser) => {
        const s = sshd!;
        mkdirSync(path.join(dir, 'machines', 'db1'), { recursive: true });
        for (const m of ['pool1', 'web1']) mkdirSync(overSsh(dir, m), { recursive: true });
        writeFileSync(
          path.join(dir, 'mesh.yaml'),
          [
            `ssh: { identity: ${s.identity}, known_hosts: ${s.knownHosts}, strict_host_key_checking: "yes", config: /dev/null, connect_timeout: 20 }`,
            'machines:',
            '  - { name: db1, address: machines/db1, transport: local }',
            `  - { name: pool1, address: "${s.user}@127.0.0.1:${s.ports[0]}", transport: ssh, mesh_dir: ${overSsh(dir, 'pool1')} }`,
            `  - { name: web1, address: "${s.user}@127.0.0.1:${s.ports[1]}", transport: ssh, mesh_dir: ${overSsh(dir, 'web1')} }`,
            'providers:',
            '  - { name: pg-main, machine: db1, kind: postgres, connect: { pooler: bouncer1, database: postgres } }',
            'consumers:',
            '  - { name: web1-app, machine: web1, uses: [pg-main], reads: each-connection, credential: alternating }',
            `  - { name: provisioner, machine: db1, reads: each-connection, uses: [pg-main], role: ${superuser} }`,
            'poolers:',
            `  - { name: bouncer1, machine: pool1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1, port: ${bouncerPort} }, auth_query: true }`,
            '',
          ].join('\n'),
        );
      },
      beforeSeed: async (mesh) => {
        bouncer = await startAuthQueryPgbouncer(mesh.sandbox, bouncerPort);
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
    const rotate = () =>
      mesh().baton(
        'mesh',
        'rotate',
        '--consumer',
        'web1-app',
        '--inventory',
        mesh().inventory,
        '--yes',
        '--wait',
        '60',
        // Every ssh step's bound, raised: a loaded machine's handshake is not what is tested here.
        '--timeout',
        '60',
      );
    const consumerFile = () => path.join(overSsh(mesh().dir, 'web1'), 'consumes', 'pg-main', 'web1_app');
    const bouncerFiles = () => pgbouncerFileDigests(bouncer!);
    const journal = () =>
      readFileSync(path.join(mesh().stateDir, 'mesh-journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { phase: string; test_logins?: { pooler?: string; ok: boolean }[] });

    it('an alternating pair through pgbouncer on an ssh machine: 2 rotations, 0 failed logins through the pooler during and after; nothing else changed', async () => {
      const first = await rotate();
      expect(first.exitCode, first.all).toBe(0);
      expect(first.stdout).toContain('pooler bouncer1 (pgbouncer on pool1');
      expect(first.stdout).toContain('(pooler bouncer1), from web1, before web1-app moves');

      const pooled = bouncerFiles();
      const poolMachine = snapshotDir(overSsh(mesh().dir, 'pool1'));
      const web1Files = () => Object.keys(snapshotDir(overSsh(mesh().dir, 'web1'))).sort();
      const web1Before = web1Files();
      const poolConnections = sshd!.connections([sshd!.ports[0]!]);
      const app = startPasswordApp({ host: '127.0.0.1', port: bouncerPort }, consumerFile, 'web1_app');
      const during: number[] = [];
      try {
        await loginsMore(app, 10);
        for (let i = 0; i < 2; i++) {
          const from = app.attempts.length;
          const r = await rotate();
          expect(r.exitCode, r.all).toBe(0);
          expect(r.stdout).toContain('test login pg-main:web1-app: web1_app_');
          during.push(app.attempts.length - from);
          await loginsMore(app, 10);
        }
      } finally {
        await app.stop();
      }
      const users = new Set(app.attempts.map((a) => a.user));
      console.log(
        `pooler over ssh: ${app.attempts.length} logins through pgbouncer across 2 rotations (${during.join(' and ')} while they ran; as ${[...users].sort().join(', ')}), ${app.failures().length} failed; the pooler's machine took ${sshd!.connections([sshd!.ports[0]!]) - poolConnections} ssh connection(s)`,
      );
      expect(app.failures()).toEqual([]);
      expect(users).toEqual(new Set(['web1_app_a', 'web1_app_b']));
      // The gate reached the pooler's machine over the sshd, once a rotation at least.
      expect(sshd!.connections([sshd!.ports[0]!]) - poolConnections).toBeGreaterThanOrEqual(2);
      // Every test login went through the pooler and passed.
      const logged = journal().flatMap((r) => r.test_logins ?? []);
      expect(logged.length).toBeGreaterThanOrEqual(3);
      expect(logged.every((t) => t.pooler === 'bouncer1' && t.ok)).toBe(true);
      // Nothing else changed: pgbouncer's files, the pooler machine's directory, no file left staged on web1.
      expect(bouncerFiles()).toEqual(pooled);
      expect(snapshotDir(overSsh(mesh().dir, 'pool1'))).toEqual(poolMachine);
      expect(web1Files()).toEqual(web1Before);
      expect(
        (readdirSync(overSsh(mesh().dir, 'web1'), { recursive: true }) as string[]).filter((f) =>
          /\.next$|\.prev$|\.rolled-back$/.test(f),
        ),
      ).toEqual([]);
    }, 300_000);
  },
);
