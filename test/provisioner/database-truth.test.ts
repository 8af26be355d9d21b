/**
 * The provisioner against a REAL PostgreSQL, as `mesh status` (the built CLI, local
 * transport) reads its receipts: a role changed in the database by hand is reported as such
 * by the cycle that finds it and put back by the next; a role another transaction holds costs
 * only that role a cycle; two provisioners on one provider do not fight. Cycles are run one by
 * one (one cycle = one `--watch` interval) with short per-role timeouts, so nothing waits out a
 * real timeout. The changes by hand run against the embedded server and Debian's PostgreSQL 15.
 * `npm test` builds first; run `npm run build` before running this file alone.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { appliedVerifierPath } from '../../src/mesh/applied-verifier.js';
import { PostgresProvisioner } from '../../src/provisioner/postgres-provisioner.js';
import { postgresRoles, providerLock, type PostgresTarget } from '../../src/provisioner/postgres-roles.js';
import { watchProvisioner } from '../../src/provisioner/watch-provisioner.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import {
  asSuperuser,
  canLogin,
  DEBIAN_POSTGRES_BIN,
  debianPostgresMissing,
  superuserPassword,
} from '../helpers/postgres.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';
import { writeLocalMesh } from '../mesh/mesh-fixture.js';
import { deliverFile, secret } from './delivered-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const PROVIDER = 'pg-main';
const LOCK_TIMEOUT_MS = 150;
/** The server the running test uses: the embedded one, or Debian's in its own suite. */
let sandbox: PostgresSandbox;
let embedded: PostgresSandbox;
let temp: { dir: string; cleanup: () => void };
let inventory: string;
let lines: string[];
const blockers: pg.Client[] = [];

const meshOf = (machine: string) => path.join(temp.dir, 'machines', machine, 'var/lib/baton/mesh');
const provides = () => path.join(meshOf('db1'), 'provides', PROVIDER);

/** The sandbox's own superuser file, outside the mesh: the local mesh holds exactly the inventory's two pairs. */
function target(): PostgresTarget {
  return {
    host: sandbox.host,
    port: sandbox.port,
    database: 'postgres',
    superuser: sandbox.superuser,
    superuserFile: sandbox.superuserPasswordFile,
  };
}

function provisioner(
  log: (line: string) => void = (line) => lines.push(line),
  lock?: ReturnType<typeof providerLock>,
): PostgresProvisioner {
  return new PostgresProvisioner({
    meshDir: meshOf('db1'),
    provider: PROVIDER,
    connect: postgresRoles(target(), { lockTimeoutMs: LOCK_TIMEOUT_MS, statementTimeoutMs: 2_000 }),
    log,
    ...(lock ? { lock } : {}),
  });
}

/** Both ends of a pair, as a whole rotation leaves them (the provider's first). */
function deliverPair(consumer: 'web1' | 'web2', value: string): void {
  const role = `${consumer}_app`;
  mkdirSync(provides(), { recursive: true, mode: 0o700 });
  deliverFile(provides(), role, value);
  const dir = path.join(meshOf(consumer), 'consumes', PROVIDER);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  deliverFile(dir, role, value);
}

interface PairJson {
  readonly state: string;
  readonly detail: string;
  readonly next: string | null;
  readonly database: {
    finding: string;
    since: string;
    restored: string | null;
    problem: string | null;
  } | null;
}

/** `baton mesh status --json` of the local mesh: its exit code and each pair's state, detail, next step and database check. */
function meshStatus(): { code: number | null; stdout: string; pairs: Record<string, PairJson> } {
  const result = spawnSync(
    process.execPath,
    [BIN, '--state-dir', path.join(temp.dir, 'state'), 'mesh', 'status', '--inventory', inventory, '--json'],
    {
      encoding: 'utf8',
      cwd: temp.dir,
      env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
    },
  );
  const doc = JSON.parse(result.stdout) as { pairs: (PairJson & { consumer: string })[] };
  return {
    code: result.status,
    stdout: result.stdout,
    pairs: Object.fromEntries(
      doc.pairs.map((p) => [
        p.consumer,
        { state: p.state, detail: p.detail, next: p.next, database: p.database },
      ]),
    ),
  };
}

/** A transaction left open on its own connection (what an operator's forgotten psql does). */
async function holdOpen(sql: string): Promise<pg.Client> {
  const client = new pg.Client({
    host: sandbox.host,
    port: sandbox.port,
    database: 'postgres',
    user: sandbox.superuser,
    password: superuserPassword(sandbox),
  });
  client.on('error', () => undefined);
  await client.connect();
  blockers.push(client);
  await client.query('BEGIN');
  await client.query(sql);
  return client;
}

async function release(client: pg.Client): Promise<void> {
  await client.query('ROLLBACK');
  await client.end();
  blockers.splice(blockers.indexOf(client), 1);
}

beforeAll(async () => {
  assertBuilt();
  embedded = await startPostgres();
  sandbox = embedded;
});

afterAll(async () => {
  await ifSet(embedded)?.destroy();
});

beforeEach(() => {
  temp = makeTempDir('baton-db-truth-');
  inventory = writeLocalMesh(temp.dir);
  lines = [];
});

afterEach(async () => {
  for (const client of blockers.splice(0)) await client.end().catch(() => undefined);
  temp.cleanup();
});

/**
 * Changed by hand, as an operator would: the cycle that finds it writes it in the receipt
 * (`mesh status` exit 3, not applied, saying what to do), the next one puts the delivered
 * password back; nothing holds the role, so this is what happens every time.
 */
function changedByHand(): void {
  it.each([
    [
      'password-changed',
      "ALTER ROLE web1_app PASSWORD 'set-by-hand'",
      'its password was changed in the database',
    ],
    ['dropped', 'DROP ROLE web1_app', 'the role was dropped'],
    ['nologin', 'ALTER ROLE web1_app NOLOGIN', 'the role was set NOLOGIN'],
  ] as const)(
    '%s by hand: the cycle that finds it makes mesh status exit 3 (changed-in-db, what to do); the next puts it back, exit 0, the consumer logs in',
    async (found, change, words) => {
      const web1 = secret();
      const web2 = secret();
      deliverPair('web1', web1);
      deliverPair('web2', web2);
      const service = provisioner();
      expect((await service.runCycle()).applied.map((a) => a.role).sort()).toEqual(['web1_app', 'web2_app']);
      expect(await canLogin(sandbox, 'web1_app', web1)).toBe(true);

      await asSuperuser(sandbox, (client) => client.query(change));
      const finding = await service.runCycle();

      expect(finding).toMatchObject({
        changed: [{ role: 'web1_app', found }],
        applied: [],
        failed: [],
        databaseDown: false,
      });
      const during = meshStatus();
      expect(during.code).toBe(3);
      expect(during.pairs['web1-app']).toMatchObject({
        state: 'changed-in-db',
        next: 'nothing by hand: the provisioner on db1 puts the delivered password back; if this stays, check its log',
        database: { finding: found, restored: null, problem: null },
      });
      expect(during.pairs['web1-app']?.detail).toContain(
        `${words} (found ${during.pairs['web1-app']?.database?.since})`,
      );
      expect(during.pairs['web1-app']?.detail).toContain(
        'the provisioner puts the delivered password back on its next cycle',
      );
      expect(during.pairs['web2-app']).toMatchObject({
        state: 'applied',
        database: { finding: 'as-set', restored: null, problem: null },
      });
      expect(await canLogin(sandbox, 'web1_app', web1)).toBe(false);
      expect(lines).toContain(
        `web1_app changed in the database: ${words}; the delivered password is put back on the next cycle`,
      );

      const next = await service.runCycle();

      expect(next).toMatchObject({ changed: [], failed: [] });
      expect(next.applied).toEqual([expect.objectContaining({ role: 'web1_app', restored: found })]);
      expect(await canLogin(sandbox, 'web1_app', web1)).toBe(true);
      expect(await canLogin(sandbox, 'web2_app', web2)).toBe(true);
      const after = meshStatus();
      expect(after.code).toBe(0);
      const since = after.pairs['web1-app']?.database?.since ?? '';
      expect(Date.parse(since)).toBeGreaterThanOrEqual(Date.parse(during.pairs['web1-app']!.database!.since));
      expect(after.pairs['web1-app']).toMatchObject({
        state: 'applied',
        database: { finding: 'as-set', restored: found, problem: null },
      });
      expect(after.pairs['web1-app']?.detail).toBe(
        `both ends equal; pg-main applied it (put back at ${since}: ${words})`,
      );
      for (const text of [lines.join('\n'), during.stdout, after.stdout]) {
        expect(text).not.toContain(web1);
        expect(text).not.toContain('SCRAM-SHA-256$');
      }
    },
  );
}

describe("the database's own truth (embedded PostgreSQL, mesh status of the built CLI)", () => {
  changedByHand();

  it('a change it cannot put back (the role is held by an open transaction) stays changed-in-db naming why; once released, the next cycle puts it back', async () => {
    const web1 = secret();
    deliverPair('web1', web1);
    deliverPair('web2', secret());
    const service = provisioner();
    await service.runCycle();
    await asSuperuser(sandbox, (client) => client.query('ALTER ROLE web1_app NOLOGIN'));
    expect((await service.runCycle()).changed).toEqual([{ role: 'web1_app', found: 'nologin' }]);
    const blocker = await holdOpen('ALTER ROLE web1_app CONNECTION LIMIT 77');

    const started = performance.now();
    const held = await service.runCycle();
    const cycleMs = performance.now() - started;

    const reason = `skipped this cycle: another transaction holds a lock on it (waited ${LOCK_TIMEOUT_MS} ms)`;
    expect(held.failed).toEqual([expect.objectContaining({ role: 'web1_app', scope: 'role', reason })]);
    expect(held.databaseDown).toBe(false);
    // The verifier's record written ahead of the statement the real transaction refused is taken back.
    const verifiers = path.dirname(appliedVerifierPath(provides(), 'web1_app'));
    expect(readdirSync(verifiers).filter((name) => name.includes('.tmp-'))).toEqual([]);
    expect(cycleMs).toBeLessThan(20_000);
    const during = meshStatus();
    expect(during.code).toBe(3);
    expect(during.pairs['web1-app']).toMatchObject({
      state: 'changed-in-db',
      database: { finding: 'nologin', problem: reason },
    });
    expect(during.pairs['web1-app']?.detail).toContain(
      `could not put the delivered password back: ${reason}`,
    );
    expect(during.pairs['web1-app']?.next).toContain(
      'fix what keeps the provisioner on db1 from putting it back',
    );
    expect(await canLogin(sandbox, 'web1_app', web1)).toBe(false);

    await release(blocker);
    expect((await service.runCycle()).applied).toEqual([
      expect.objectContaining({ role: 'web1_app', restored: 'nologin' }),
    ]);
    expect(await canLogin(sandbox, 'web1_app', web1)).toBe(true);
    expect(meshStatus().code).toBe(0);
  });

  it('checks the stored verifier against the delivered password, not against a memory: after a restart the same password set by hand is no change; another, and an expiry, are found by one cycle and put back by the next', async () => {
    const web1 = secret();
    deliverPair('web1', web1);
    deliverPair('web2', secret());
    await provisioner().runCycle();
    const set = (sql: string) => asSuperuser(sandbox, (client) => client.query(sql));

    // The server salts it afresh: a verifier this provisioner never saw, of the same password.
    await set(`ALTER ROLE web1_app PASSWORD '${web1}'`);
    expect(await provisioner().runCycle()).toMatchObject({ changed: [], applied: [], unchanged: 2 });

    await set("ALTER ROLE web1_app PASSWORD 'set-by-hand'");
    expect((await provisioner().runCycle()).changed).toEqual([
      { role: 'web1_app', found: 'password-changed' },
    ]);
    expect(await canLogin(sandbox, 'web1_app', web1)).toBe(false);
    expect((await provisioner().runCycle()).applied).toEqual([
      expect.objectContaining({ role: 'web1_app', restored: 'password-changed' }),
    ]);
    expect(await canLogin(sandbox, 'web1_app', web1)).toBe(true);

    await set("ALTER ROLE web1_app VALID UNTIL '2001-01-01'");
    expect((await provisioner().runCycle()).changed).toEqual([{ role: 'web1_app', found: 'expired' }]);
    expect(meshStatus().code).toBe(3);
    expect((await provisioner().runCycle()).applied).toEqual([
      expect.objectContaining({ role: 'web1_app', restored: 'expired' }),
    ]);
    expect(await canLogin(sandbox, 'web1_app', web1)).toBe(true);
    expect(meshStatus().code).toBe(0);
  });
});

describe('a provisioner that keeps going (real PostgreSQL)', () => {
  it('a role held by an open transaction is skipped with its reason; the other role of the same rotation is applied in the same cycle, and the held one once the lock is released', async () => {
    deliverPair('web1', secret());
    deliverPair('web2', secret());
    const service = provisioner();
    await service.runCycle();
    const web1 = secret();
    const web2 = secret();
    deliverPair('web1', web1);
    deliverPair('web2', web2);
    const blocker = await holdOpen('ALTER ROLE web2_app CONNECTION LIMIT 77');

    const started = performance.now();
    const report = await service.runCycle();
    const cycleMs = performance.now() - started;

    expect(report.applied.map((a) => a.role)).toEqual(['web1_app']);
    expect(report.failed).toEqual([
      expect.objectContaining({
        role: 'web2_app',
        scope: 'role',
        reason: `skipped this cycle: another transaction holds a lock on it (waited ${LOCK_TIMEOUT_MS} ms)`,
      }),
    ]);
    expect(report.databaseDown).toBe(false);
    expect(cycleMs).toBeLessThan(20_000);
    expect(await canLogin(sandbox, 'web1_app', web1)).toBe(true);
    const during = meshStatus();
    expect([during.code, during.pairs['web1-app']?.state, during.pairs['web2-app']?.state]).toEqual([
      3,
      'applied',
      'pending',
    ]);
    expect(lines).toContain(
      `web2_app skipped this cycle: another transaction holds a lock on it (waited ${LOCK_TIMEOUT_MS} ms); the other roles go on`,
    );

    await release(blocker);
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual(['web2_app']);
    expect(await canLogin(sandbox, 'web2_app', web2)).toBe(true);
    expect(meshStatus().code).toBe(0);
  });

  it('two provisioners on one provider: the second says which is running and waits; it takes over when the first stops; no "tuple concurrently updated"', async () => {
    const first: string[] = [];
    const second: string[] = [];
    const stopFirst = new AbortController();
    const stopSecond = new AbortController();
    const lockA = providerLock(target(), PROVIDER);
    const lockB = providerLock(target(), PROVIDER);
    const watchA = watchProvisioner(
      provisioner((l) => first.push(l), lockA),
      { intervalMs: 30, signal: stopFirst.signal, log: (l) => first.push(l) },
    ).finally(() => lockA.release());
    const v1 = secret();
    deliverPair('web1', v1);
    await vi.waitFor(
      () =>
        expect(
          first.some((l) => l.startsWith('web1_app ') && (l.endsWith(' created') || l.endsWith(' updated'))),
        ).toBe(true),
      { timeout: 10_000, interval: 20 },
    );
    const watchB = watchProvisioner(
      provisioner((l) => second.push(l), lockB),
      { intervalMs: 30, signal: stopSecond.signal, log: (l) => second.push(l) },
    ).finally(() => lockB.release());
    try {
      await vi.waitFor(
        () =>
          expect(second.some((l) => l.startsWith('another provisioner for pg-main is running: '))).toBe(true),
        { timeout: 10_000, interval: 20 },
      );
      const waiting = second.find((l) => l.startsWith('another provisioner for pg-main is running: '))!;
      expect(waiting).toContain(`"baton-provision pg-main pid ${process.pid} on `);
      expect(waiting).toContain('server pid ');
      // Rotations keep coming; only the first applies them.
      for (let i = 0; i < 5; i++) {
        const value = secret();
        deliverPair('web1', value);
        await vi.waitFor(async () => expect(await canLogin(sandbox, 'web1_app', value)).toBe(true), {
          timeout: 10_000,
          interval: 20,
        });
      }
      expect(second.filter((l) => l.startsWith('web1_app '))).toEqual([]);

      stopFirst.abort();
      await watchA;
      const last = secret();
      deliverPair('web1', last);
      await vi.waitFor(
        () =>
          expect(second).toContain(
            'the other provisioner for pg-main stopped: this one holds the provider now',
          ),
        { timeout: 10_000, interval: 20 },
      );
      await vi.waitFor(async () => expect(await canLogin(sandbox, 'web1_app', last)).toBe(true), {
        timeout: 10_000,
        interval: 20,
      });
      for (const line of [...first, ...second]) expect(line).not.toContain('tuple concurrently updated');
      // Said once per holder: the provisioner repeats no line it said last (report()), so a second
      // line means the holder's words changed (round 11's CI saw two under load); each names the first.
      const waits = second.filter((l) => l.startsWith('another provisioner'));
      for (const [i, line] of waits.entries()) {
        expect(line).toContain(`"baton-provision pg-main pid ${process.pid} on `);
        if (i > 0) expect(line).not.toBe(waits[i - 1]);
      }
    } finally {
      stopFirst.abort();
      stopSecond.abort();
      await Promise.all([watchA, watchB]);
    }
  });
});

describeWithPart(
  debianPostgresMissing(),
  "the database's own truth (Debian's PostgreSQL 15, mesh status of the built CLI)",
  () => {
    let debian: PostgresSandbox | undefined;
    beforeAll(async () => {
      debian = await startPostgres({ binDir: DEBIAN_POSTGRES_BIN });
      sandbox = debian;
    });
    afterAll(async () => {
      sandbox = embedded;
      await debian?.destroy();
    });

    it("is Debian's server", async () => {
      const version = await asSuperuser(sandbox, (client) =>
        client.query<{ v: string }>('SELECT version() AS v'),
      );
      expect(version.rows[0]?.v).toMatch(/^PostgreSQL 15\.\d+ \(Debian /);
    });

    changedByHand();
  },
);
