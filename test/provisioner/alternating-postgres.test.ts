/**
 * Alternating logins against a REAL PostgreSQL (embedded binaries, scram-sha-256 on every
 * connection): what the provisioner creates is proved by logging in as each login, creating
 * tables through them, and ending their sessions. One database start for the whole file.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { formatConsumerConninfo, loginFileName, loginRole } from '../../src/mesh/alternating.js';
import { scramVerifier } from '../../src/provisioner/scram-verifier.js';
import { END_SESSIONS_DIR, parseReceipt, secretDigest, type Receipt } from '../../src/mesh/digest.js';
import { PostgresProvisioner } from '../../src/provisioner/postgres-provisioner.js';
import { postgresRoles } from '../../src/provisioner/postgres-roles.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { asSuperuser, canLogin, superuserPassword } from '../helpers/postgres.js';
import { deliverFile, secret, uniqueRole } from './delivered-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const PROVIDER = 'pg-main';
let pg_: PostgresSandbox;
let temp: { dir: string; cleanup: () => void };
let provides: string;
let lines: string[];
const opened: pg.Client[] = [];

const deliver = (name: string, value: string) => deliverFile(provides, name, value);

function provisioner(): PostgresProvisioner {
  const superuserFile = path.join(temp.dir, 'consumes', PROVIDER, pg_.superuser);
  return new PostgresProvisioner({
    meshDir: temp.dir,
    provider: PROVIDER,
    connect: postgresRoles({
      host: pg_.host,
      port: pg_.port,
      database: 'postgres',
      superuser: pg_.superuser,
      superuserFile,
    }),
    log: (line) => lines.push(line),
  });
}

function receiptOf(name: string): Receipt | undefined {
  try {
    return parseReceipt(readFileSync(path.join(provides, '.applied', name), 'utf8'));
  } catch {
    return undefined;
  }
}

/** A session logged in as `user`, kept open until the test ends (or the server ends it). */
async function session(user: string, password: string, applicationName = 'alt-test'): Promise<pg.Client> {
  const client = new pg.Client({
    host: pg_.host,
    port: pg_.port,
    database: 'postgres',
    user,
    password,
    application_name: applicationName,
  });
  client.on('error', () => undefined);
  await client.connect();
  opened.push(client);
  return client;
}

beforeAll(async () => {
  pg_ = await startPostgres();
});

afterAll(async () => {
  for (const client of opened) await client.end().catch(() => undefined);
  await ifSet(pg_)?.destroy();
  ifSet(temp)?.cleanup();
});

beforeEach(() => {
  ifSet(temp)?.cleanup();
  temp = makeTempDir('baton-prov-alt-');
  provides = path.join(temp.dir, 'provides', PROVIDER);
  mkdirSync(provides, { recursive: true, mode: 0o700 });
  const superuserFile = path.join(temp.dir, 'consumes', PROVIDER, pg_.superuser);
  mkdirSync(path.dirname(superuserFile), { recursive: true, mode: 0o700 });
  writeFileSync(superuserFile, superuserPassword(pg_), { mode: 0o600 });
  lines = [];
});

describe('alternating logins in a real PostgreSQL', () => {
  it('a table created through R_a and one created through R_b are both owned by R, and both logins read both', async () => {
    const role = uniqueRole('web1_app');
    const [a, b] = [loginRole(role, 'a'), loginRole(role, 'b')];
    const [secretA, secretB] = [secret(), secret()];
    deliver(loginFileName(role, 'a'), secretA);
    deliver(loginFileName(role, 'b'), secretB);

    const report = await provisioner().runCycle();

    expect(report.failed).toEqual([]);
    expect(report.applied.map((r) => r.role).sort()).toEqual([`${role}+a`, `${role}+b`]);
    // The group owns the grants and never logs in itself.
    const group = await asSuperuser(pg_, (c) =>
      c.query<{ rolcanlogin: boolean }>('SELECT rolcanlogin FROM pg_roles WHERE rolname = $1', [role]),
    );
    expect(group.rows).toEqual([{ rolcanlogin: false }]);
    await asSuperuser(pg_, (c) => c.query(`GRANT CREATE ON SCHEMA public TO ${c.escapeIdentifier(role)}`));

    const viaA = await session(a, secretA);
    const viaB = await session(b, secretB);
    expect((await viaA.query('SELECT current_user AS u, session_user AS s')).rows).toEqual([
      { u: role, s: a },
    ]);
    await viaA.query(`CREATE TABLE ${role}_t_a (x int)`);
    await viaA.query(`INSERT INTO ${role}_t_a VALUES (1)`);
    await viaB.query(`CREATE TABLE ${role}_t_b (x int)`);
    await viaB.query(`INSERT INTO ${role}_t_b VALUES (2)`);

    const owners = await asSuperuser(pg_, (c) =>
      c.query<{ tablename: string; tableowner: string }>(
        'SELECT tablename, tableowner FROM pg_tables WHERE tablename = ANY($1) ORDER BY tablename',
        [[`${role}_t_a`, `${role}_t_b`]],
      ),
    );
    expect(owners.rows).toEqual([
      { tablename: `${role}_t_a`, tableowner: role },
      { tablename: `${role}_t_b`, tableowner: role },
    ]);
    for (const client of [viaA, viaB]) {
      expect(
        (await client.query(`SELECT x FROM ${role}_t_a UNION ALL SELECT x FROM ${role}_t_b ORDER BY x`)).rows,
      ).toEqual([{ x: 1 }, { x: 2 }]);
    }
    expect(receiptOf(`${role}+a`)).toMatchObject({
      role: `${role}+a`,
      login: a,
      digest: secretDigest(secretA),
      database: { found: 'as-set' },
    });
  });

  it("switching: R+a for a LOGIN role R gives R_b R's verifier; R logs in until its file is gone; a gone R+a makes R_a refused", async () => {
    const role = uniqueRole('web2_app');
    const [a, b] = [loginRole(role, 'a'), loginRole(role, 'b')];
    const [password, fresh] = [secret(), secret()];
    const service = provisioner();
    deliver(role, password);
    await service.runCycle();
    expect(await canLogin(pg_, role, password)).toBe(true);

    deliver(loginFileName(role, 'a'), fresh);
    const switched = await service.runCycle();

    expect(switched.failed).toEqual([]);
    expect(await canLogin(pg_, a, fresh)).toBe(true);
    expect(await canLogin(pg_, b, password)).toBe(true);
    expect(await canLogin(pg_, b, fresh)).toBe(false);
    expect(await canLogin(pg_, role, password)).toBe(true);
    expect(lines).toContain(
      `${b} created with ${role}'s stored verifier: it accepts the password ${role}'s consumer holds`,
    );

    rmSync(path.join(provides, role));
    await service.runCycle();
    expect(await canLogin(pg_, role, password)).toBe(false);
    expect(receiptOf(role)).toBeUndefined();
    expect(await canLogin(pg_, a, fresh)).toBe(true);
    expect(await canLogin(pg_, b, password)).toBe(true);

    rmSync(path.join(provides, loginFileName(role, 'a')));
    await service.runCycle();
    expect(await canLogin(pg_, a, fresh)).toBe(false);
    expect(receiptOf(`${role}+a`)).toBeUndefined();
    expect(lines).toContain(`${a} set NOLOGIN: its file ${role}+a is gone`);
  });

  it("lists a login's open sessions in its receipt; an end-sessions request for the applied digest ends them and says how many", async () => {
    const role = uniqueRole('web3_app');
    const a = loginRole(role, 'a');
    const name = loginFileName(role, 'a');
    const [first, second] = [secret(), secret()];
    const service = provisioner();
    deliver(name, first);
    await service.runCycle();
    const held = await session(a, first, 'web3-worker');
    const pid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

    // Without a request: a new password, the session survives and is named in the receipt.
    deliver(name, second);
    await service.runCycle();
    expect((await held.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    expect(receiptOf(name)?.sessions).toEqual([
      expect.objectContaining({ pid, application_name: 'web3-worker' }),
    ]);
    expect(receiptOf(name)?.ended_sessions).toBeUndefined();

    const request = path.join(provides, END_SESSIONS_DIR, name);
    mkdirSync(path.dirname(request), { recursive: true });
    writeFileSync(request, secretDigest(second));
    await service.runCycle();

    expect(receiptOf(name)).toMatchObject({ digest: secretDigest(second), ended_sessions: 1, sessions: [] });
    await vi.waitFor(
      async () => {
        const left = await asSuperuser(pg_, (c) =>
          c.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]),
        );
        expect(left.rowCount).toBe(0);
      },
      { timeout: 10_000 },
    );
    await expect(held.query('SELECT 1')).rejects.toThrow();
    expect(() => readFileSync(request)).toThrow();
    expect(await canLogin(pg_, a, second)).toBe(true);
  });

  it('the database check covers a login: taken out of its group or set NOLOGIN by hand, it is found and put back', async () => {
    const role = uniqueRole('web4_app');
    const a = loginRole(role, 'a');
    const name = loginFileName(role, 'a');
    const password = secret();
    const service = provisioner();
    deliver(name, password);
    await service.runCycle();

    await asSuperuser(pg_, (c) =>
      c.query(`REVOKE ${c.escapeIdentifier(role)} FROM ${c.escapeIdentifier(a)}`),
    );
    expect((await service.runCycle()).changed).toEqual([{ role: name, found: 'not-member' }]);
    expect((await service.runCycle()).applied).toMatchObject([{ role: name, restored: 'not-member' }]);
    const viaA = await session(a, password);
    expect((await viaA.query('SELECT current_user AS u')).rows).toEqual([{ u: role }]);

    await asSuperuser(pg_, (c) => c.query(`ALTER ROLE ${c.escapeIdentifier(a)} NOLOGIN`));
    expect((await service.runCycle()).changed).toEqual([{ role: name, found: 'nologin' }]);
    await service.runCycle();
    expect(await canLogin(pg_, a, password)).toBe(true);
    expect(receiptOf(name)?.database).toMatchObject({ found: 'as-set', restored: 'nologin' });
  });
  it("the provisioner's own superuser pair switched to alternating: once its role is NOLOGIN it logs in through the login its file names, and applies as before", async () => {
    const su = uniqueRole('su');
    const old = secret();
    await asSuperuser(pg_, async (c) =>
      c.query(`CREATE ROLE ${su} SUPERUSER LOGIN PASSWORD '${await scramVerifier(Buffer.from(old))}'`),
    );
    const consumerFile = path.join(temp.dir, 'consumes', PROVIDER, su);
    writeFileSync(consumerFile, old, { mode: 0o600 });
    deliver(su, old);
    const service = new PostgresProvisioner({
      meshDir: temp.dir,
      provider: PROVIDER,
      connect: postgresRoles({
        host: pg_.host,
        port: pg_.port,
        database: 'postgres',
        superuser: su,
        superuserFile: consumerFile,
      }),
      log: (line) => lines.push(line),
    });
    expect((await service.runCycle()).blocked).toBeUndefined();

    // The switch, as the mesh delivers it: the login file, its receipt, then the consumer end, then the plain file retired.
    const fresh = secret();
    deliver(loginFileName(su, 'a'), fresh);
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual([loginFileName(su, 'a')]);
    writeFileSync(consumerFile, formatConsumerConninfo(loginRole(su, 'a'), fresh), { mode: 0o600 });
    rmSync(path.join(provides, su));
    rmSync(path.join(provides, '.applied', su));
    const switched = await service.runCycle();
    expect(switched.blocked).toBeUndefined();
    expect(await canLogin(pg_, su, old)).toBe(false);
    expect(await canLogin(pg_, loginRole(su, 'a'), fresh)).toBe(true);

    // Still a superuser through its login: it creates a role it is asked to.
    const role = uniqueRole('web9_app');
    const password = secret();
    deliver(role, password);
    const next = await service.runCycle();
    expect(next.blocked).toBeUndefined();
    expect(next.applied.map((a) => a.role)).toEqual([role]);
    expect(await canLogin(pg_, role, password)).toBe(true);
  });
});
