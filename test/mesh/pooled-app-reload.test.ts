/**
 * Issue 45, case 2 and its "Done when": a pooled single-pair app (a `pg.Pool` that reads its
 * password once, test/helpers/pool-app.mjs) against Debian's PostgreSQL 15, the real provisioner
 * and the built CLI. Without `reload:` the plan refuses it (words, nothing changed); with
 * `reload:` (SIGHUP: the app reads its file into a new pool) 5 rotations cost it 0 failed queries,
 * and `mesh status` marks each step confirmed: the file, the test login, the reload and the app's
 * own new sessions on the role. And a session held on the login an alternating consumer left is
 * listed by `mesh status` (the provisioner's census, read back), in words and JSON.
 *
 * Run `npm run build` before running this file alone.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { parseConninfo } from '../../src/mesh/alternating.js';
import pg from 'pg';
import { MESH_DIR, startPostgresMesh, type PostgresMesh } from '../helpers/postgres-mesh.js';
import { DEBIAN_POSTGRES_BIN, debianPostgresMissing } from '../helpers/postgres.js';
import { registerChild } from '../helpers/process-registry.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt } from '../helpers/run-baton.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { waitOn } from '../helpers/wait-on.js';

const POOL_APP = path.join(import.meta.dirname, '../helpers/pool-app.mjs');
const RELOAD = `kill -HUP "$(cat "$BATON_ROOT/app.pid")"`;

interface Counts {
  readonly ok: number;
  readonly failed: number;
  readonly codes: Record<string, number>;
  readonly reloads: number;
}

describeWithPart(
  debianPostgresMissing(),
  "a pooled app on a single pair, against Debian's PostgreSQL 15",
  () => {
    let sandbox: PostgresSandbox;
    let mesh: PostgresMesh;
    let dir: string;
    let superuser: string;
    const web1 = () => path.join(dir, 'machines', 'web1');
    const inventory = () => path.join(dir, 'mesh.yaml');
    const writeInventory = (consumer: string) =>
      writeFileSync(
        inventory(),
        [
          'machines:',
          ...['db1', 'web1', 'web2'].map(
            (m) => `  - { name: ${m}, address: machines/${m}, transport: local }`,
          ),
          'providers:',
          `  - { name: pg-main, machine: db1, kind: postgres, connect: { host: 127.0.0.1, port: ${sandbox.port}, database: postgres } }`,
          'consumers:',
          `  - { name: web1-app, machine: web1, uses: [pg-main], ${consumer} }`,
          '  - { name: web2-app, machine: web2, uses: [pg-main], credential: alternating, reads: each-connection }',
          `  - { name: provisioner, machine: db1, reads: each-connection, uses: [pg-main], role: ${superuser} }`,
          '',
        ].join('\n'),
      );
    const rotate = () =>
      mesh.baton(
        'mesh',
        'rotate',
        '--pair',
        'pg-main:web1-app',
        '--inventory',
        inventory(),
        '--yes',
        '--wait',
        '20',
      );

    beforeAll(async () => {
      assertBuilt();
      sandbox = await startPostgres({ binDir: DEBIAN_POSTGRES_BIN });
      mesh = await startPostgresMesh(sandbox, {
        prefix: 'baton-pooled-app-',
        writeInventory: (meshDir, role) => {
          dir = meshDir;
          superuser = role;
          for (const m of ['db1', 'web1', 'web2'])
            mkdirSync(path.join(meshDir, 'machines', m), { recursive: true });
          writeInventory('reads: each-connection');
        },
      });
      mesh.startProvisioner(0.1);
    }, 90_000);

    afterAll(async () => {
      const started = { mesh, sandbox } as { mesh?: PostgresMesh; sandbox?: PostgresSandbox };
      started.mesh?.cleanup();
      await started.sandbox?.destroy();
    });

    it('without reload: the plan refuses it naming the three ways, and nothing changed', async () => {
      // The first delivery makes the role (a consumer that re-reads per connection passes the plan).
      const first = await rotate();
      expect(first.exitCode, first.all).toBe(0);
      writeInventory('reads: once');
      // The provisioner keeps writing its heartbeat and census on db1: the pair's own files are compared.
      const consumerSide = web1();
      const before = snapshotDir(consumerSide);
      const providerBefore = readFileSync(mesh.providerFile('web1_app'), 'utf8');
      const journal = path.join(mesh.stateDir, 'mesh-journal.jsonl');
      const journalBefore = readFileSync(journal, 'utf8');
      const r = await rotate();
      expect(r.exitCode, r.all).toBe(2);
      expect(r.stderr).toContain(
        'Consumer "web1-app" reads its password once (reads: once) on a single pair with no reload:',
      );
      for (const way of [
        '`reads: each-connection`',
        '`reads: once` with `reload:`',
        '`reads: once` on a `credential: alternating` pair',
      ])
        expect(r.stderr).toContain(way);
      expect(snapshotDir(consumerSide)).toEqual(before);
      expect(readFileSync(mesh.providerFile('web1_app'), 'utf8')).toBe(providerBefore);
      expect(existsSync(`${mesh.providerFile('web1_app')}.next`)).toBe(false);
      expect(readFileSync(journal, 'utf8')).toBe(journalBefore);
      console.log(
        `pooled single-pair app without reload: refused at plan (exit ${r.exitCode}), nothing changed`,
      );
    }, 120_000);

    it('with reload: (SIGHUP into a new pool) 5 rotations cost the app 0 failed queries, and status marks every step confirmed', async () => {
      writeInventory(`reads: once, reload: '${RELOAD}'`);
      const log = path.join(web1(), 'app.counts');
      const pidFile = path.join(web1(), 'app.pid');
      const file = mesh.consumerFile('web1', 'web1_app');
      expect(file.startsWith(path.join(web1(), MESH_DIR))).toBe(true);
      const child = spawn(
        process.execPath,
        [POOL_APP, file, 'web1_app', sandbox.host, String(sandbox.port), log, pidFile],
        {
          stdio: 'ignore',
        },
      );
      registerChild(child, 'pool app');
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const counts = (): Counts => JSON.parse(readFileSync(log, 'utf8')) as Counts;
      try {
        await waitOn(
          () => {
            if (!existsSync(log) || counts().ok < 20) throw new Error('no queries yet');
          },
          child,
          'the pool app answering queries',
        );
        const start = counts();
        const outputs: string[] = [];
        for (let i = 0; i < 5; i++) {
          const r = await rotate();
          outputs.push(r.all);
          expect(r.exitCode, r.all).toBe(0);
          expect(r.all).toContain('reload of web1-app on web1: exit 0');
          expect(r.all).toContain('web1_app accepted from web1');
        }
        // Queries after the last reload, on the new pool.
        const last = counts().ok;
        await vi.waitFor(() => expect(counts().ok).toBeGreaterThan(last + 20), {
          timeout: 10_000,
          interval: 50,
        });
        // Status is read while the app runs: the provisioner's census sees only the sessions open
        // at one of its cycles, so an app stopped before the census after its last reload is rightly
        // 'not-confirmed' (round 12's CI saw that ordering under three workers).
        // The rotation's summary said what it confirmed, and status reads the same marks back.
        expect(outputs.at(-1)).toContain('pg-main:web1-app confirmed: ✓ file; ✓ test login; ✓ reload;');
        await vi.waitFor(
          async () => {
            const s = await mesh.baton(
              'mesh',
              'status',
              '--pair',
              'pg-main:web1-app',
              '--inventory',
              inventory(),
              '--json',
            );
            expect(s.exitCode, s.all).toBe(0);
            const pair = (JSON.parse(s.stdout) as { pairs: { state: string; confirmed: unknown }[] })
              .pairs[0]!;
            expect(pair.state).toBe('applied');
            expect(pair.confirmed).toEqual({
              file: 'confirmed',
              test_login: 'confirmed',
              reload: 'confirmed',
              app_sessions: 'confirmed',
            });
          },
          { timeout: 20_000, interval: 500 },
        );
        const plain = await mesh.baton(
          'mesh',
          'status',
          '--pair',
          'pg-main:web1-app',
          '--inventory',
          inventory(),
        );
        expect(plain.stdout).toContain(
          "    confirmed: ✓ file; ✓ test login; ✓ reload; ✓ app's new sessions seen on the live login after the move",
        );
        child.kill('SIGTERM');
        await exited;
        const end = counts();
        const during = end.ok - start.ok;
        console.log(
          `pooled app with reload: 5 rotations, ${during} queries ok during them, ${end.failed} failed (${JSON.stringify(end.codes)}), ${end.reloads} reloads`,
        );
        expect(end.failed, JSON.stringify(end.codes)).toBe(0);
        expect(end.reloads).toBe(5);
        expect(during).toBeGreaterThan(0);
        console.log(
          "mesh status after them: file, test login, reload and the app's new sessions each confirmed",
        );
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    }, 240_000);

    it('a session held on the login an alternating consumer left is listed by mesh status, in words and --json', async () => {
      const rotateWeb2 = () =>
        mesh.baton(
          'mesh',
          'rotate',
          '--pair',
          'pg-main:web2-app',
          '--inventory',
          inventory(),
          '--yes',
          '--wait',
          '20',
        );
      const first = await rotateWeb2();
      expect(first.exitCode, first.all).toBe(0);
      const held = parseConninfo(readFileSync(mesh.consumerFile('web2', 'web2_app'), 'utf8'))!;
      // An app's pooled connection on the login the consumer is on now, kept open across the move.
      const client = new pg.Client({
        host: sandbox.host,
        port: sandbox.port,
        database: 'postgres',
        user: held.user,
        password: held.password,
        application_name: 'held-session',
      });
      client.on('error', () => undefined);
      await client.connect();
      try {
        const second = await rotateWeb2();
        expect(second.exitCode, second.all).toBe(0);
        const now = parseConninfo(readFileSync(mesh.consumerFile('web2', 'web2_app'), 'utf8'))!;
        expect(now.user).not.toBe(held.user);
        let json = '';
        await vi.waitFor(
          async () => {
            const s = await mesh.baton(
              'mesh',
              'status',
              '--pair',
              'pg-main:web2-app',
              '--inventory',
              inventory(),
              '--json',
            );
            json = s.stdout;
            const pair = (
              JSON.parse(s.stdout) as {
                pairs: {
                  app: {
                    left_open_sessions: { login: string; open: number; oldest_start: string | null } | null;
                  };
                }[];
              }
            ).pairs[0]!;
            expect(pair.app.left_open_sessions).toMatchObject({ login: held.user, open: 1 });
            expect(typeof pair.app.left_open_sessions?.oldest_start).toBe('string');
          },
          { timeout: 20_000, interval: 500 },
        );
        const plain = await mesh.baton(
          'mesh',
          'status',
          '--pair',
          'pg-main:web2-app',
          '--inventory',
          inventory(),
        );
        expect(plain.stdout).toContain(
          `    sessions: 1 still open on ${held.user}, the login its file left, the oldest started `,
        );
        expect(json).not.toContain(held.password!);
        expect(plain.stdout).not.toContain(held.password!);
        console.log(
          `held session on the left login ${String(held.user)}: listed by mesh status (1 open), words and --json`,
        );
      } finally {
        await client.end().catch(() => undefined);
      }
    }, 180_000);
  },
);
