/**
 * The provisioner against a REAL PostgreSQL (embedded binaries, scram-sha-256 on every
 * connection, log_statement = 'all'): logins as the provisioned roles prove the verifier, the
 * server's own log proves what it saw.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { PostgresProvisioner } from '../../src/provisioner/postgres-provisioner.js';
import { postgresRoles } from '../../src/provisioner/postgres-roles.js';
import { startPostgres, type PostgresSandbox } from '../../src/sandbox/postgres.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import {
  asSuperuser,
  canLogin,
  loggedStatements,
  serverLogSoFar,
  superuserPassword,
} from '../helpers/postgres.js';
import { deliverFile, secret, uniqueRole } from './delivered-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const PROVIDER = 'pg-main';
let pg: PostgresSandbox;
let temp: { dir: string; cleanup: () => void };
let meshDir: string;
let provides: string;
let superuserFile: string;
let lines: string[];
let statements: string[];

const deliver = (role: string, value: string) => deliverFile(provides, role, value);

function provisioner(overrides: { superuserFile?: string } = {}): PostgresProvisioner {
  return new PostgresProvisioner({
    meshDir,
    provider: PROVIDER,
    connect: postgresRoles(
      {
        host: pg.host,
        port: pg.port,
        database: 'postgres',
        superuser: pg.superuser,
        superuserFile: overrides.superuserFile ?? superuserFile,
      },
      { onStatement: (sql) => statements.push(sql) },
    ),
    log: (line) => lines.push(line),
  });
}

beforeAll(async () => {
  pg = await startPostgres({ logStatements: true });
});

afterAll(async () => {
  await ifSet(pg)?.destroy();
});

beforeEach(() => {
  ifSet(temp)?.cleanup();
  temp = makeTempDir('baton-prov-');
  meshDir = temp.dir;
  provides = path.join(meshDir, 'provides', PROVIDER);
  mkdirSync(provides, { recursive: true, mode: 0o700 });
  superuserFile = path.join(meshDir, 'consumes', PROVIDER, pg.superuser);
  mkdirSync(path.dirname(superuserFile), { recursive: true, mode: 0o700 });
  writeFileSync(superuserFile, superuserPassword(pg), { mode: 0o600 });
  lines = [];
  statements = [];
});

afterAll(() => ifSet(temp)?.cleanup());

describe('the provisioner against a real PostgreSQL', () => {
  it('runs on a sandbox that demands scram-sha-256: a wrong superuser password is refused, the right one (from a 0600 file) logs in', async () => {
    expect(statSync(pg.superuserPasswordFile).mode & 0o777).toBe(0o600);
    expect(await canLogin(pg, pg.superuser, 'wrong-password')).toBe(false);
    expect(await canLogin(pg, pg.superuser, superuserPassword(pg))).toBe(true);
    const method = await asSuperuser(pg, (client) =>
      client.query<{ auth_method: string }>(
        "SELECT DISTINCT auth_method FROM pg_hba_file_rules WHERE type = 'host'",
      ),
    );
    expect(method.rows).toEqual([{ auth_method: 'scram-sha-256' }]);
  });

  it('creates a delivered role that then logs in with its secret, and writes a 0600 receipt of its digest', async () => {
    const role = uniqueRole('web1_app');
    const password = secret();
    deliver(role, password);

    const report = await provisioner().runCycle();

    expect(report.applied).toEqual([{ role, digest: secretDigest(password), outcome: 'created' }]);
    expect(await canLogin(pg, role, password)).toBe(true);
    const receiptFile = path.join(provides, '.applied', role);
    expect(parseReceipt(readFileSync(receiptFile, 'utf8'))).toMatchObject({
      role,
      digest: secretDigest(password),
    });
    expect(readFileSync(receiptFile, 'utf8')).not.toContain(password);
    expect(statSync(receiptFile).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(receiptFile)).mode & 0o777).toBe(0o700);
    expect(lines).toEqual([`${role} ${secretDigest(password).slice(0, 19)} created`]);
  });

  it('after a replaced file, the new password logs in and the old one is refused', async () => {
    const role = uniqueRole('web2_app');
    const oldPassword = secret();
    const newPassword = secret();
    deliver(role, oldPassword);
    const service = provisioner();
    await service.runCycle();
    expect(await canLogin(pg, role, oldPassword)).toBe(true);

    deliver(role, newPassword);
    const report = await service.runCycle();

    expect(report.applied).toEqual([{ role, digest: secretDigest(newPassword), outcome: 'updated' }]);
    expect(await canLogin(pg, role, newPassword)).toBe(true);
    expect(await canLogin(pg, role, oldPassword)).toBe(false);
  });

  it('unchanged files cause no statement that changes anything, in this process or after a restart that reads the receipts: only a read of pg_authid', async () => {
    const roles = [uniqueRole('a'), uniqueRole('b'), uniqueRole('c')];
    for (const role of roles) deliver(role, secret());
    await provisioner().runCycle();
    const before = await serverLogSoFar(pg);
    statements = [];

    const sameProcess = provisioner();
    // A fresh provisioner knows nothing in memory: it must read the receipts, not re-apply.
    const first = await sameProcess.runCycle();
    const second = await sameProcess.runCycle();

    const after = await serverLogSoFar(pg);
    const between = loggedStatements(after.slice(before.length)).filter(
      (s) => !s.includes('baton-log-marker-'),
    );
    expect(first).toMatchObject({ applied: [], failed: [], unchanged: 3, changed: [] });
    expect(second).toMatchObject({ applied: [], failed: [], unchanged: 3, changed: [] });
    // The fresh provisioner checks every role once (and once per run looks at the logins a single
    // role may have left: switched-back-logins.ts); its next cycle asks only whether any role
    // changed (the roles' fingerprint) and, nothing having changed, checks none again. Each cycle
    // also reads pg_stat_activity for the session census (a read, nothing more).
    const census = (s: string) => s.startsWith('SELECT usename AS login');
    const read = (s: string) =>
      s.startsWith('SELECT rolname, rolcanlogin') || s.startsWith('SELECT md5(') || census(s);
    expect(statements.filter(census).length).toBe(2);
    expect(
      statements
        .filter((s) => !census(s))
        .map((s) => (s.startsWith('SELECT md5(') ? 'fingerprint' : s.slice(0, 27))),
    ).toEqual(['fingerprint', 'SELECT rolname, rolcanlogin', 'SELECT rolname, rolcanlogin', 'fingerprint']);
    expect(between.filter((s) => !read(s))).toEqual([]);
    expect(lines.filter((l) => !l.endsWith('created'))).toEqual([]);
  });

  it('sends only a SCRAM verifier: the server log of every statement never contains a cleartext password', async () => {
    const created = uniqueRole('log_created');
    const updated = uniqueRole('log_updated');
    const passwords = [secret(), secret(), secret()];
    deliver(created, passwords[0]!);
    deliver(updated, passwords[1]!);
    const service = provisioner();
    await service.runCycle();
    deliver(updated, passwords[2]!);
    await service.runCycle();

    const log = await serverLogSoFar(pg);
    const roleStatements = loggedStatements(log).filter((s) => s.includes(created) || s.includes(updated));
    // The log did record the statements (so this test can fail), with verifiers in them (a
    // batch sends each role's statement between its savepoint and the release, in one string).
    expect(
      roleStatements.some((s) => s.includes(`CREATE ROLE "${created}" LOGIN PASSWORD 'SCRAM-SHA-256$4096:`)),
    ).toBe(true);
    expect(
      roleStatements.some((s) => s.includes(`ALTER ROLE "${updated}" LOGIN PASSWORD 'SCRAM-SHA-256$4096:`)),
    ).toBe(true);
    for (const password of passwords) expect(log).not.toContain(password);
    for (const password of passwords) expect(lines.join('\n')).not.toContain(password);
    expect(await canLogin(pg, updated, passwords[2]!)).toBe(true);
  });

  it('reads the superuser password file at each connection, so a rotated superuser password is honoured', async () => {
    const service = provisioner();
    const first = uniqueRole('before_su');
    deliver(first, secret());
    expect((await service.runCycle()).applied).toHaveLength(1);

    const rotated = secret();
    const original = superuserPassword(pg);
    await asSuperuser(pg, (client) =>
      client.query(
        `ALTER ROLE ${client.escapeIdentifier(pg.superuser)} PASSWORD ${client.escapeLiteral(rotated)}`,
      ),
    );
    try {
      writeFileSync(superuserFile, rotated, { mode: 0o600 });
      const second = uniqueRole('after_su');
      const password = secret();
      deliver(second, password);

      const report = await service.runCycle();

      expect(report.failed).toEqual([]);
      expect(report.applied.map((a) => a.role)).toEqual([second]);
      expect(await canLogin(pg, second, password)).toBe(true);
    } finally {
      await asSuperuser(
        pg,
        (client) =>
          client.query(
            `ALTER ROLE ${client.escapeIdentifier(pg.superuser)} PASSWORD ${client.escapeLiteral(original)}`,
          ),
        rotated,
      );
    }
  });

  it('a missing superuser password file is named, nothing is applied or receipted, and the next cycle applies once it is delivered', async () => {
    rmSync(superuserFile);
    const role = uniqueRole('waits_for_su');
    const password = secret();
    deliver(role, password);
    const service = provisioner();
    const snapshot = snapshotDir(meshDir);

    const report = await service.runCycle();

    expect(report.applied).toEqual([]);
    expect(report.blocked?.what).toContain('superuser password file cannot be read');
    expect(report.blocked?.where).toBe(superuserFile);
    expect(report.failed.map((f) => f.role)).toEqual([role]);
    expect(lines.join('\n')).toContain(superuserFile);
    expect(snapshotDir(meshDir)).toEqual(snapshot);
    expect(await canLogin(pg, role, password)).toBe(false);

    writeFileSync(superuserFile, superuserPassword(pg), { mode: 0o600 });
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual([role]);
    expect(await canLogin(pg, role, password)).toBe(true);
  });

  it('a bad role name, an empty file, a directory and a dangling symlink are each named, staged files are ignored, and the other roles are still applied', async () => {
    const good = uniqueRole('good');
    const password = secret();
    deliver(good, password);
    writeFileSync(path.join(provides, 'bad;name'), secret(), { mode: 0o600 });
    writeFileSync(path.join(provides, 'empty_role'), '', { mode: 0o600 });
    mkdirSync(path.join(provides, 'dir_role'));
    symlinkSync(path.join(meshDir, 'nowhere'), path.join(provides, 'dangling_role'));
    writeFileSync(path.join(provides, 'newline_role'), `${secret()}\n`, { mode: 0o600 });
    writeFileSync(path.join(provides, 'evil\x1b[8m\nrole'), secret(), { mode: 0o600 });
    writeFileSync(path.join(provides, 'staged_role.next'), secret(), { mode: 0o600 });
    writeFileSync(path.join(provides, 'staged_role.next.tmp.1a2b3c4d'), secret(), { mode: 0o600 });

    const report = await provisioner().runCycle();

    expect(report.applied.map((a) => a.role)).toEqual([good]);
    expect(await canLogin(pg, good, password)).toBe(true);
    const reasons = Object.fromEntries(report.failed.map((f) => [f.role, f.reason]));
    expect(reasons).toEqual({
      'bad;name': expect.stringContaining('the file name is not a PostgreSQL identifier'),
      empty_role: 'is empty',
      dir_role: expect.stringContaining('not a regular file (a directory)'),
      dangling_role: expect.stringContaining('cannot be read'),
      newline_role: expect.stringContaining('line break'),
      'evil\x1b[8m\nrole': expect.stringContaining('the file name is'),
    });
    // A file name is shown in the log escaped, on one line: it never draws a line of its own.
    expect(lines.some((line) => line.includes('evil\\x1b[8m\\nrole failed: '))).toBe(true);
    expect(lines.every((line) => !/[\u0000-\u001f]/u.test(line))).toBe(true);
    for (const name of ['bad;name', 'empty_role', 'dir_role', 'dangling_role', 'newline_role']) {
      expect(lines.some((line) => line.includes(path.join(provides, name)))).toBe(true);
      expect(existsSync(path.join(provides, '.applied', name))).toBe(false);
    }
    expect(existsSync(path.join(provides, '.applied', 'staged_role'))).toBe(false);
    const roles = await asSuperuser(pg, (client) =>
      client.query<{ rolname: string }>(
        "SELECT rolname FROM pg_roles WHERE rolname IN ('empty_role','dir_role','dangling_role','newline_role','staged_role')",
      ),
    );
    expect(roles.rows).toEqual([]);
  });

  it('a lasting problem is logged once, not on every poll', async () => {
    writeFileSync(path.join(provides, 'empty_again'), '', { mode: 0o600 });
    const service = provisioner();
    await service.runCycle();
    await service.runCycle();
    await service.runCycle();
    expect(lines.filter((l) => l.includes('empty_again'))).toHaveLength(1);
  });

  it('with the database down nothing is applied or receipted, and the next cycle after it is back applies it', async () => {
    const role = uniqueRole('during_outage');
    const password = secret();
    const service = provisioner();
    await pg.stop();
    try {
      deliver(role, password);
      const down = await service.runCycle();
      expect(down.applied).toEqual([]);
      expect(down.blocked?.what).toContain('PostgreSQL cannot be reached');
      expect(existsSync(path.join(provides, '.applied', role))).toBe(false);
      expect(lines.join('\n')).toContain('PostgreSQL cannot be reached');
    } finally {
      await pg.start();
    }
    const up = await service.runCycle();
    expect(up.applied.map((a) => a.role)).toEqual([role]);
    expect(await canLogin(pg, role, password)).toBe(true);
    expect(parseReceipt(readFileSync(path.join(provides, '.applied', role), 'utf8'))?.digest).toBe(
      secretDigest(password),
    );
  });
});
