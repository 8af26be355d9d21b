/**
 * A pooler is a holder, against the real parts (issue 45): Debian's PostgreSQL 15, Debian's
 * pgbouncer 1.18 in front of it with `auth_query` (SCRAM for its clients, its auth_user reading
 * pg_authid through a SECURITY DEFINER function), the real provisioner, and the built CLI on a
 * local-transport mesh whose provider's `connect:` names the pooler. An app logs in THROUGH
 * pgbouncer every 50 ms with what its consumer file says (test/helpers/password-app.ts) while
 * pairs rotate, and every failed login is counted: none may strand. Then a pooler that hands out
 * a stale verifier refuses the test login, and the rotation names it and its auth_query, rolls
 * the pair back and changes nothing else. The tests share one mesh and run in order.
 *
 * Run `npm run build` before running this file alone.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '../../src/sandbox/free-port.js';
import { usePostgresMesh, type MeshProvisioner } from '../helpers/postgres-mesh.js';
import { loginsMore, startPasswordApp } from '../helpers/password-app.js';
import { asSuperuser, debianPostgresMissing } from '../helpers/postgres.js';
import {
  pgbouncerFileDigests,
  pgbouncerMissing,
  startAuthQueryPgbouncer,
  type Pgbouncer,
} from '../helpers/pgbouncer.js';
import { describeWithPart } from '../helpers/real-part.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';

let bouncerPort = 0;
let bouncer: Pgbouncer | undefined;
let provisioner: MeshProvisioner | undefined;

describeWithPart(
  debianPostgresMissing() ?? pgbouncerMissing(),
  'pgbouncer with auth_query in front of the mesh',
  () => {
    beforeAll(async () => {
      bouncerPort = await freePort();
    });
    const suite = usePostgresMesh({
      server: 'debian',
      per: 'file',
      prefix: 'baton-pooler-',
      batonTimeoutMs: 60_000,
      setupTimeoutMs: 120_000,
      writeInventory: (dir, superuser) => {
        for (const m of ['db1', 'web1', 'web2'])
          mkdirSync(path.join(dir, 'machines', m), { recursive: true });
        writeFileSync(
          path.join(dir, 'mesh.yaml'),
          [
            'machines:',
            ...['db1', 'web1', 'web2'].map(
              (m) => `  - { name: ${m}, address: machines/${m}, transport: local }`,
            ),
            'providers:',
            '  - { name: pg-main, machine: db1, kind: postgres, connect: { pooler: bouncer1, database: postgres } }',
            'consumers:',
            '  - { name: web1-app, machine: web1, uses: [pg-main], reads: each-connection, credential: alternating }',
            '  - { name: web2-app, machine: web2, uses: [pg-main], reads: each-connection }',
            `  - { name: provisioner, machine: db1, reads: each-connection, uses: [pg-main], role: ${superuser} }`,
            'poolers:',
            `  - { name: bouncer1, machine: db1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1, port: ${bouncerPort} }, auth_query: true }`,
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
    const bouncerFiles = () => pgbouncerFileDigests(bouncer!);
    const journal = () =>
      readFileSync(path.join(mesh().stateDir, 'mesh-journal.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map(
          (l) =>
            JSON.parse(l) as { id: string; phase: string; test_logins?: { pooler?: string; ok: boolean }[] },
        );

    it('an alternating pair through pgbouncer rotates 3 times with 0 failed logins through the pooler', async () => {
      const pooled = bouncerFiles();
      const first = await rotate('web1-app');
      expect(first.exitCode, first.all).toBe(0);
      // The preview names the pooler and the test login goes through it.
      expect(first.stdout).toContain(`(pooler bouncer1), from web1, before web1-app moves`);
      expect(first.stdout).toContain('pooler bouncer1 (pgbouncer on db1');
      const app = startPasswordApp(through(), () => mesh().consumerFile('web1', 'web1_app'), 'web1_app');
      try {
        await loginsMore(app, 10);
        for (let i = 0; i < 3; i++) {
          const r = await rotate('web1-app');
          expect(r.exitCode, r.all).toBe(0);
          expect(r.stdout).toContain('test login pg-main:web1-app: web1_app_');
          await loginsMore(app, 5);
        }
      } finally {
        await app.stop();
      }
      const logins = app.attempts.length;
      const users = new Set(app.attempts.map((a) => a.user));
      console.log(
        `auth_query, alternating: ${logins} logins through pgbouncer during 3 rotations (as ${[...users].sort().join(', ')}), ${app.failures().length} failed`,
      );
      expect(app.failures()).toEqual([]);
      expect(users).toEqual(new Set(['web1_app_a', 'web1_app_b']));
      // Every test login went through the pooler and passed; pgbouncer's own files were never touched.
      const logged = journal().flatMap((r) => r.test_logins ?? []);
      expect(logged.length).toBeGreaterThanOrEqual(4);
      expect(logged.every((t) => t.pooler === 'bouncer1' && t.ok)).toBe(true);
      expect(bouncerFiles()).toEqual(pooled);
    }, 240_000);

    it('a single pair through pgbouncer: 0 stranded logins through the pooler after each of 3 rotations', async () => {
      const pooled = bouncerFiles();
      const first = await rotate('web2-app');
      expect(first.exitCode, first.all).toBe(0);
      const app = startPasswordApp(through(), () => mesh().consumerFile('web2', 'web2_app'), 'web2_app');
      // Between a rotation's end and the next one's start, every login must pass.
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
      // A single pair's window (database applied → consumer's file replaced) is stated; what
      // matters here is that no login strands once a rotation said it applied.
      const afterRotations = app.attempts.filter((a) =>
        quiet.some(([from, to]) => a.at >= from && a.at < to),
      );
      const stranded = afterRotations.filter((a) => !a.ok);
      const inWindows = app.attempts.filter((a) => !a.ok).length - stranded.length;
      console.log(
        `auth_query, single: ${app.attempts.length} logins through pgbouncer across 3 rotations; ${afterRotations.length} after a rotation ended, ${stranded.length} of them failed (stranded); ${inWindows} failed inside the stated windows`,
      );
      expect(afterRotations.length).toBeGreaterThanOrEqual(20);
      expect(stranded.map((a) => `${a.user} ${a.code ?? ''}`)).toEqual([]);
      expect(bouncerFiles()).toEqual(pooled);
    }, 240_000);

    it('a pooler that hands out a stale verifier refuses the test login: named with its auth_query, rolled back, nothing else changed', async () => {
      // pgbouncer's auth_query now reads a copy of the logins' verifiers taken before the rotation.
      await asSuperuser(mesh().sandbox, async (c) => {
        await c.query(
          `CREATE TABLE public.frozen_auth AS SELECT rolname, rolpassword, rolcanlogin FROM pg_authid WHERE rolname LIKE 'web1_app%'`,
        );
        await c.query(
          `CREATE OR REPLACE FUNCTION public.pooler_auth(p_user text, OUT usename text, OUT passwd text) RETURNS record LANGUAGE sql SECURITY DEFINER AS $$ SELECT rolname::text, rolpassword FROM public.frozen_auth WHERE rolname = p_user AND rolcanlogin $$`,
        );
      });
      const web1 = path.join(mesh().dir, 'machines', 'web1');
      const before = snapshotDir(web1);
      const pooled = bouncerFiles();
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
      expect(r.all).toContain(
        "its auth_query could not give the new verifier: check that pgbouncer.ini's auth_user",
      );
      expect(r.all).toContain('web1-app was NOT moved');
      // The consumer machine is as it was (its file still names the login that works), and the
      // app through the pooler never failed; pgbouncer's files were not touched.
      // (Only the consumer end's record changed: it names the rotation that was taken back.)
      const unrecorded = (snap: Record<string, string>) =>
        Object.fromEntries(Object.entries(snap).filter(([p]) => !p.endsWith('.rotation')));
      expect(unrecorded(snapshotDir(web1))).toEqual(unrecorded(before));
      expect(app.failures()).toEqual([]);
      expect(bouncerFiles()).toEqual(pooled);
      const last = journal().at(-1)!;
      expect(last.phase).toBe('rolled-back');
      expect(last.test_logins?.map((t) => [t.pooler, t.ok])).toEqual([['bouncer1', false]]);
      console.log(
        `stale auth_query: test login refused by pgbouncer (08P01), rotation exit ${r.exitCode}, rolled back; ${app.attempts.length} logins through the pooler meanwhile, ${app.failures().length} failed`,
      );
    }, 240_000);
  },
);
