/**
 * A pooler is a holder (issue 45; src/mesh/poolers.ts, docs/inventory.md "Poolers"): `poolers:`
 * is read and refused with what/where/next, a pooler of a selected pair is a holder of the plan
 * (resolved by the gate, which closes without it), the preview names it, an auth_file pooler is
 * refused at plan time, and a refused test login through it names the pooler and its
 * auth_file or auth_query. The built CLI runs every command case; each refusal checks that the
 * files are as they were.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { parseInventory, type Inventory } from '../../src/mesh/inventory.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { authFileRefusal, poolerPreviewLines, poolerTargetRefusal } from '../../src/mesh/poolers.js';
import {
  formatHeartbeat,
  HEARTBEAT_FORMAT,
  type HeartbeatPooler,
} from '../../src/mesh/provisioner-heartbeat.js';
import { appPreviewLines, refusedLoginAdvice } from '../../src/app/rotation-app-text.js';
import { appHooks } from '../../src/mesh/reload.js';
import { appGate } from '../../src/app/rotation-app.js';
import { loginsFromMachines } from '../../src/mesh/login-from-machines.js';
import { Secret } from '../../src/mesh/secret.js';
import type { BoundTransport } from '../../src/mesh/transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { runBaton } from '../helpers/run-baton.js';

const SOURCE = '/srv/mesh.yaml';

/** A local mesh: db1 provides pg-main, web1 consumes it, `bouncer1` on `pool1` serves it. */
function inventoryText(pooler: string, connect = 'connect: { pooler: bouncer1, database: app }'): string {
  return [
    'machines:',
    '  - { name: db1, address: machines/db1, transport: local }',
    '  - { name: web1, address: machines/web1, transport: local }',
    '  - { name: pool1, address: machines/pool1, transport: local }',
    'providers:',
    `  - { name: pg-main, machine: db1, kind: postgres${connect ? `, ${connect}` : ''} }`,
    '  - { name: pg-other, machine: db1, kind: postgres }',
    'consumers:',
    '  - { name: web1-app, machine: web1, uses: [pg-main], reads: each-connection }',
    '  - { name: web1-other, machine: web1, uses: [pg-other], reads: each-connection }',
    ...(pooler ? ['poolers:', `  - ${pooler}`] : []),
    '',
  ].join('\n');
}

const AUTH_QUERY =
  '{ name: bouncer1, machine: pool1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1, port: 6432 }, auth_query: true }';
const AUTH_FILE =
  '{ name: bouncer1, machine: pool1, kind: pgbouncer, serves: [pg-main], listen: { host: 127.0.0.1 }, auth_file: /etc/pgbouncer/userlist.txt, admin: { user: pgbouncer } }';

function refusalOf(text: string): BatonError {
  try {
    parseInventory(text, SOURCE);
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    return error as BatonError;
  }
  throw new Error('the inventory was accepted');
}

describe('poolers: in the inventory', () => {
  it('a pooler is read with its listen address, and connect: through it takes that address', () => {
    const inventory = parseInventory(inventoryText(AUTH_QUERY), SOURCE);
    expect(inventory.poolers).toEqual([
      {
        name: 'bouncer1',
        machine: 'pool1',
        kind: 'pgbouncer',
        serves: ['pg-main'],
        listen: { host: '127.0.0.1', port: 6432 },
        auth: { mode: 'auth_query' },
      },
    ]);
    expect(inventory.providers[0]!.connect).toEqual({
      host: '127.0.0.1',
      port: 6432,
      database: 'app',
      pooler: 'bouncer1',
    });
    const file = parseInventory(inventoryText(AUTH_FILE), SOURCE).poolers[0]!;
    expect(file.auth).toEqual({ mode: 'auth_file', file: '/etc/pgbouncer/userlist.txt' });
    expect(file.admin).toEqual({ user: 'pgbouncer', host: '127.0.0.1', port: 6432 });
    // An inventory without poolers: reads as before.
    expect(parseInventory(inventoryText('', ''), SOURCE).poolers).toEqual([]);
  });

  it.each([
    [
      'a machine the inventory does not list',
      AUTH_QUERY.replace('machine: pool1', 'machine: pool9'),
      'pooler "bouncer1" is on machine "pool9", which the inventory does not list.',
      'Add it under machines:',
    ],
    [
      'a provider it serves that is not listed',
      AUTH_QUERY.replace('serves: [pg-main]', 'serves: [pg-gone]'),
      'pooler "bouncer1" serves provider "pg-gone", which the inventory does not list.',
      'use one of: pg-main, pg-other',
    ],
    [
      'both auth_file and auth_query',
      AUTH_QUERY.replace('auth_query: true', 'auth_query: true, auth_file: /etc/u.txt'),
      'pooler "bouncer1" sets both auth_file: and auth_query:.',
      'auth_query: true (its auth_query setting)',
    ],
    [
      'neither auth_file nor auth_query',
      AUTH_QUERY.replace(', auth_query: true', ''),
      'pooler "bouncer1" sets neither auth_file: nor auth_query:.',
      "auth_file: <its path on the pooler's machine>",
    ],
    [
      'a relative auth_file',
      AUTH_FILE.replace('/etc/pgbouncer/userlist.txt', 'userlist.txt'),
      'pooler "bouncer1": auth_file "userlist.txt" is not an absolute path.',
      "as pgbouncer.ini's auth_file says it",
    ],
    [
      'a kind other than pgbouncer',
      AUTH_QUERY.replace('kind: pgbouncer', 'kind: odyssey'),
      'poolers[0] ("bouncer1").kind is invalid',
      'docs/inventory.md shows the format',
    ],
    [
      'an unknown field',
      AUTH_QUERY.replace('auth_query: true', 'auth_query: true, password: x'),
      'Unknown field "password" in poolers[0] ("bouncer1").',
      'poolers',
    ],
  ])('a pooler with %s is refused naming it, the file and what to do', (_what, pooler, what, next) => {
    const e = refusalOf(inventoryText(pooler, ''));
    expect(e.code).toBe('config');
    expect(e.what).toContain(what);
    expect(e.where).toBe(SOURCE);
    expect(String(e.next)).toContain(next);
    expect(e.changed).toBe('Nothing was sent.');
  });

  it.each([
    [
      'a pooler the inventory does not list',
      'connect: { pooler: bouncer9 }',
      'provider "pg-main": connect: names pooler "bouncer9", which the inventory does not list.',
      'use one of: bouncer1',
    ],
    [
      'a pooler and an address',
      'connect: { pooler: bouncer1, host: db1.internal }',
      'provider "pg-main": connect: names both pooler: and an address.',
      "the address is the pooler's listen:",
    ],
    [
      'neither',
      'connect: { database: app }',
      'provider "pg-main": connect: names neither host: nor pooler:.',
      'the pooler they connect through (pooler:)',
    ],
  ])("a provider's connect: naming %s is refused", (_what, connect, what, next) => {
    const e = refusalOf(inventoryText(AUTH_QUERY, connect));
    expect(e.what).toContain(what);
    expect(String(e.next)).toContain(next);
  });

  it("a provider's connect: through a pooler that does not serve it is refused", () => {
    const text = inventoryText(AUTH_QUERY, '').replace(
      '{ name: pg-other, machine: db1, kind: postgres }',
      '{ name: pg-other, machine: db1, kind: postgres, connect: { pooler: bouncer1 } }',
    );
    const e = refusalOf(text);
    expect(e.what).toContain(
      'provider "pg-other": connect: names pooler "bouncer1", which does not serve it.',
    );
    expect(String(e.next)).toContain('Add pg-other to pooler "bouncer1"\'s serves:');
  });

  it('two poolers of one name are refused', () => {
    const text = inventoryText(AUTH_QUERY, '').replace(
      `  - ${AUTH_QUERY}`,
      `  - ${AUTH_QUERY}\n  - ${AUTH_QUERY.replace('pool1', 'db1')}`,
    );
    expect(refusalOf(text).what).toBe('Duplicate pooler name "bouncer1".');
  });
});

describe('a pooler in a rotation plan', () => {
  const inventory: Inventory = parseInventory(inventoryText(AUTH_QUERY), SOURCE);

  it("is a holder of the pairs of the providers it serves: its machine is in the plan's holders, with no file", () => {
    const plan = planRotation(inventory, { by: 'all' });
    expect(plan.poolers?.map((p) => [p.name, p.pairs])).toEqual([['bouncer1', ['pg-main:web1-app']]]);
    expect(plan.holders.map((h) => [h.machine, h.receives.length])).toEqual([
      ['db1', 2],
      ['web1', 2],
      ['pool1', 0],
    ]);
  });

  it('is left out of a plan whose pairs it does not serve', () => {
    const plan = planRotation(inventory, { by: 'consumer', name: 'web1-other' });
    expect(plan.poolers).toBeUndefined();
    expect(plan.holders.map((h) => h.machine)).toEqual(['db1', 'web1']);
  });

  it('the preview names it with what it holds and that the test login goes through it', () => {
    const plan = planRotation(inventory, { by: 'consumer', name: 'web1-app' });
    expect(poolerPreviewLines(plan)).toEqual([
      "pooler bouncer1 (pgbouncer on pool1, listening on 127.0.0.1:6432) for pg-main:web1-app: asks PostgreSQL for each login's verifier as the login happens, so it holds the new one as soon as the database does: nothing is staged there and no RELOAD is needed",
    ]);
    const lines = appPreviewLines(plan, appHooks(inventory));
    expect(lines[0]).toBe(
      '  test login pg-main:web1-app: as web1_app to 127.0.0.1:6432/app (pooler bouncer1), from web1, before web1-app moves; refused = not moved',
    );
    expect(lines.at(-1)).toContain('  pooler bouncer1 (pgbouncer on pool1');
  });

  it('an auth_file pooler on another machine than its provider without an admin password_file is refused at plan time, naming it, its file and the way out; with one it is planned', () => {
    const fileInventory = parseInventory(inventoryText(AUTH_FILE), SOURCE);
    const e = authFileRefusal(planRotation(fileInventory, { by: 'all' }), fileInventory)!;
    expect(e.code).toBe('config');
    expect(e.what).toContain(
      `pooler "bouncer1" keeps pg-main's logins in its auth_file /etc/pgbouncer/userlist.txt on pool1, away from pg-main's provisioner on db1: baton gives it each new verifier itself and sends RELOAD on its admin console, but its admin: names no password_file`,
    );
    expect(e.what).toContain('a login through the pooler could be refused while the rotation says applied');
    expect(String(e.next)).toContain(
      "give its admin: { user: <its admin user>, password_file: <a 0600 file on this host with that user's password> }",
    );
    expect(String(e.next)).toContain(
      "start its provisioner with `--pooler-auth-file <the auth_file> --pooler-admin <host:port> --pooler-admin-user <user>`, the pooler's admin: as the inventory names it",
    );
    const withPassword = parseInventory(
      inventoryText(
        AUTH_FILE.replace(
          'admin: { user: pgbouncer }',
          'admin: { user: pgbouncer, password_file: admin.pw }',
        ),
      ),
      SOURCE,
    );
    const planned = planRotation(withPassword, { by: 'all' });
    expect(authFileRefusal(planned, withPassword)).toBe(undefined);
    expect(withPassword.poolers[0]?.admin?.passwordFile).toBe(path.resolve(path.dirname(SOURCE), 'admin.pw'));
    expect(poolerPreviewLines(planned)[0]).toContain(
      "holds each login's verifier in its auth_file /etc/pgbouncer/userlist.txt: after the receipt baton copies there the verifier db1's provisioner recorded (never a password) and sends RELOAD on its admin console",
    );
    expect(String(e.next)).toContain('which a pooler on any machine can use');
    expect(String(e.next)).toContain('or switch the pooler to auth_query');
    expect(e.changed).toBe('Nothing was read or sent.');
    // A selection the pooler does not serve is not refused.
    expect(
      authFileRefusal(planRotation(fileInventory, { by: 'consumer', name: 'web1-other' }), fileInventory),
    ).toBe(undefined);
  });

  it('an auth_file pooler beside its provider: refused when connect: bypasses it, planned when the test login goes through it', () => {
    const beside = AUTH_FILE.replace('machine: pool1', 'machine: db1');
    const direct = parseInventory(inventoryText(beside, 'connect: { host: db1.internal }'), SOURCE);
    expect(authFileRefusal(planRotation(direct, { by: 'all' }), direct)?.what).toContain(
      "but pg-main's connect: does not go through it: no test login would prove the pooler took a new verifier",
    );
    const through = parseInventory(inventoryText(beside), SOURCE);
    const plan = planRotation(through, { by: 'all' });
    expect(authFileRefusal(plan, through)).toBe(undefined);
    expect(poolerPreviewLines(plan)[0]).toContain(
      "holds each login's verifier in its auth_file /etc/pgbouncer/userlist.txt: db1's provisioner writes the new one there and sends RELOAD before the receipt",
    );
  });
});

/** A provisioner's heartbeat that states the pooler it keeps (what `provision postgres --pooler-*` writes). */
function heartbeatStating(pooler: HeartbeatPooler | undefined): string {
  return formatHeartbeat({
    format: HEARTBEAT_FORMAT,
    provider: 'pg-main',
    at: new Date().toISOString(),
    interval_ms: 1000,
    login: 'ok',
    superuser: 'postgres',
    host: 'db1',
    pid: 4242,
    ...(pooler ? { pooler } : {}),
  });
}

describe("the inventory's auth_file pooler and the provisioner that keeps it name one pooler", () => {
  const beside = AUTH_FILE.replace('machine: pool1', 'machine: db1');
  const inventory = parseInventory(inventoryText(beside), SOURCE);
  const plan = planRotation(inventory, { by: 'all' });
  const agreed: HeartbeatPooler = {
    auth_file: '/etc/pgbouncer/userlist.txt',
    admin: '127.0.0.1:6432',
    admin_user: 'pgbouncer',
  };

  it("agrees when the heartbeat states the inventory's auth_file and admin console (admin: defaulting to listen:); says nothing without a statement", () => {
    expect(poolerTargetRefusal(plan, inventory, new Map([['pg-main', heartbeatStating(agreed)]]))).toBe(
      undefined,
    );
    expect(poolerTargetRefusal(plan, inventory, new Map([['pg-main', heartbeatStating(undefined)]]))).toBe(
      undefined,
    );
    expect(poolerTargetRefusal(plan, inventory, new Map([['pg-main', undefined]]))).toBe(undefined);
  });

  it.each([
    ['another admin port', { ...agreed, admin: '127.0.0.1:6433' }, 'RELOAD as pgbouncer on 127.0.0.1:6433'],
    [
      'another admin user',
      { ...agreed, admin_user: 'pooler_admin' },
      'RELOAD as pooler_admin on 127.0.0.1:6432',
    ],
    [
      'another auth_file',
      { ...agreed, auth_file: '/etc/pgbouncer/other.txt' },
      'keeps auth_file /etc/pgbouncer/other.txt',
    ],
  ])('is refused naming both when the provisioner states %s', (_, stated, words) => {
    const e = poolerTargetRefusal(plan, inventory, new Map([['pg-main', heartbeatStating(stated)]]))!;
    expect(e.code).toBe('config');
    expect(e.what).toContain(
      'pooler "bouncer1" is, by the inventory, auth_file /etc/pgbouncer/userlist.txt with RELOAD as pgbouncer on 127.0.0.1:6432, but pg-main\'s provisioner on db1 states (its heartbeat) that it keeps',
    );
    expect(e.what).toContain(words);
    expect(String(e.next)).toContain(
      "restart pg-main's provisioner on db1 with `--pooler-auth-file /etc/pgbouncer/userlist.txt --pooler-admin 127.0.0.1:6432 --pooler-admin-user pgbouncer`",
    );
    expect(String(e.next)).toContain("correct the pooler's auth_file: or admin:");
    expect(e.changed).toBe('Nothing was generated or sent.');
  });
});

describe("a test login's record names the pooler it went through, on every path that moves a consumer", () => {
  const inventory: Inventory = parseInventory(inventoryText(AUTH_QUERY), SOURCE);
  const plan = planRotation(inventory, { by: 'consumer', name: 'web1-app' });
  const pair = plan.pairs[0]!;
  const secret = Secret.generate();
  /** Machines that can read the provider end back but open no stream: every login is refused, and recorded. */
  const transportFor = (machine: string) =>
    ({
      machine,
      readTexts: (paths: readonly string[]) => Promise.resolve(paths.map(() => secret.reveal())),
    }) as unknown as BoundTransport;
  const expected = {
    pair: 'pg-main:web1-app',
    machine: 'web1',
    login: 'web1_app',
    pooler: 'bouncer1',
    ok: false,
    reason: 'the transport of web1 cannot open a stream from the machine',
  };

  it("the rotation's gate (commit) and its roll-back's login before it finishes a pair", async () => {
    const app = appGate({ transportFor, app: appHooks(inventory) });
    app.keep(plan)!(pair.key, secret);
    const { gate } = app.gateOption();
    expect((await gate!([pair], undefined)).refused.map((r) => r.pair)).toEqual([pair.key]);
    expect((await app.finish(new Set([pair.key])))?.testLogins).toMatchObject([expected]);
    expect([...(await app.loginBeforeMove([pair]))]).toEqual([pair.key]);
    expect(app.lateLogins()).toMatchObject([expected]);
  });

  it('mesh resume and mesh rollback, which read the credential back from the provider end', async () => {
    const later = loginsFromMachines(appHooks(inventory), { [pair.key]: secret.digest }, transportFor, 2);
    expect((await later.gate([pair], undefined)).refused.map((r) => r.pair)).toEqual([pair.key]);
    expect([...(await later.loginFirst([pair]))]).toEqual([pair.key]);
    expect(later.records()).toMatchObject([expected, expected]);
    expect(later.records().every((r) => r.pooler === 'bouncer1')).toBe(true);
  });
});

describe('a refused test login through a pooler names it and where it finds verifiers', () => {
  const t = { login: 'web1_app_b', machine: 'web1', code: '08P01', reason: 'SASL authentication failed' };

  it('auth_query: the pooler, its machine, its auth_query and auth_user; not pg_hba.conf', () => {
    const advice = refusedLoginAdvice(t, {
      name: 'bouncer1',
      machine: 'pool1',
      auth: { mode: 'auth_query' },
    });
    expect(advice).toContain('the server that answered is pooler bouncer1 on pool1');
    expect(advice).toContain(
      "its auth_query could not give the new verifier: check that pgbouncer.ini's auth_user",
    );
    expect(advice).toContain("reads web1_app_b's row of pg_authid");
    expect(advice).not.toContain('pg_hba.conf');
  });

  it('auth_file: the pooler, its auth_file path and RELOAD', () => {
    const advice = refusedLoginAdvice(t, {
      name: 'bouncer1',
      machine: 'pool1',
      auth: { mode: 'auth_file', file: '/etc/pgbouncer/userlist.txt' },
    });
    expect(advice).toContain(
      "its auth_file /etc/pgbouncer/userlist.txt still holds web1_app_b's old SCRAM verifier",
    );
    expect(advice).toContain('then RELOAD on its admin console');
  });

  it('a pooler the inventory does not list is still recognised by its words, and poolers: is named', () => {
    const advice = refusedLoginAdvice(t);
    expect(advice).toContain('a pooler the inventory does not list');
    expect(advice).toContain('List it under poolers:');
  });
});

describe('poolers through the built CLI', () => {
  let tmp: { dir: string; cleanup: () => void };
  beforeEach(() => {
    tmp = makeTempDir('baton-poolers-');
    for (const m of ['db1', 'web1', 'pool1'])
      mkdirSync(path.join(tmp.dir, 'machines', m), { recursive: true });
  });
  afterEach(() => tmp.cleanup());

  const baton = (inventory: string, ...args: string[]) =>
    runBaton(['--state-dir', path.join(tmp.dir, 'state'), ...args, '--inventory', inventory], {
      cwd: tmp.dir,
      env: { NO_COLOR: '1' },
    });
  const write = (text: string) => {
    const file = path.join(tmp.dir, 'mesh.yaml');
    writeFileSync(file, text);
    return file;
  };

  it.each([
    ['mesh', 'plan', '--consumer', 'web1-app'],
    ['mesh', 'rotate', '--consumer', 'web1-app', '--yes'],
  ])(
    'an auth_file pooler away from its provider with no admin password_file: %s %s is refused at plan (exit 2); nothing read or sent',
    async (...words) => {
      const inventory = write(inventoryText(AUTH_FILE));
      const before = snapshotDir(tmp.dir);
      const r = await baton(inventory, ...words);
      expect(r.exitCode, r.all).toBe(2);
      expect(r.stderr).toContain(
        `pooler "bouncer1" keeps pg-main's logins in its auth_file /etc/pgbouncer/userlist.txt on pool1, away from pg-main's provisioner on db1`,
      );
      expect(r.stderr).toContain('its admin: names no password_file');
      expect(r.stderr).toContain('Nothing was read or sent.');
      expect(snapshotDir(tmp.dir)).toEqual(before);
      console.log(`auth_file pooler, ${words[1]}: refused at plan (exit ${r.exitCode})`);
    },
  );

  it('mesh plan lists the pooler as a holder and its line; its machine unresolved closes the gate', async () => {
    const inventory = write(inventoryText(AUTH_QUERY));
    const open = await baton(inventory, 'mesh', 'plan', '--consumer', 'web1-app');
    expect(open.exitCode, open.all).toBe(0);
    expect(open.stdout).toContain('pool1 (local machines/pool1) receives nothing');
    expect(open.stdout).toContain('  pooler bouncer1 (pgbouncer on pool1, listening on 127.0.0.1:6432)');
    expect(open.stdout).toContain('Gate open: all 3 machines resolved');

    rmSync(path.join(tmp.dir, 'machines', 'pool1'), { recursive: true });
    const before = snapshotDir(tmp.dir);
    const closed = await baton(inventory, 'mesh', 'plan', '--consumer', 'web1-app');
    expect(closed.exitCode, closed.all).toBe(3);
    expect(closed.stdout).toContain('Gate closed: 1 of 3 machines unresolved (pool1)');
    const rotated = await baton(inventory, 'mesh', 'rotate', '--consumer', 'web1-app', '--yes');
    expect(rotated.exitCode, rotated.all).toBe(4);
    expect(rotated.all).toContain('pool1');
    expect(rotated.all).toContain('nothing');
    // Only the journal's record of the closed gate was written; no machine's files changed.
    const after = snapshotDir(tmp.dir);
    const changed = Object.keys(after).filter((p) => after[p] !== before[p]);
    expect(changed.filter((p) => p !== 'state' && !p.startsWith('state/'))).toEqual([]);
    console.log(
      `pooler machine unresolved: mesh plan exit ${closed.exitCode}, mesh rotate exit ${rotated.exitCode}`,
    );
  });

  it("mesh rotate is refused (exit 2) when the provisioner's heartbeat states another admin console than the inventory's pooler; nothing generated or sent", async () => {
    const inventory = write(inventoryText(AUTH_FILE.replace('machine: pool1', 'machine: db1')));
    const heartbeat = path.join(
      tmp.dir,
      'machines/db1/var/lib/baton/mesh/provides/pg-main/.provisioner/heartbeat',
    );
    mkdirSync(path.dirname(heartbeat), { recursive: true });
    writeFileSync(
      heartbeat,
      heartbeatStating({
        auth_file: '/etc/pgbouncer/userlist.txt',
        admin: '127.0.0.1:6433',
        admin_user: 'pgbouncer',
      }),
    );
    const machines = path.join(tmp.dir, 'machines');
    const before = snapshotDir(machines);
    const r = await baton(inventory, 'mesh', 'rotate', '--consumer', 'web1-app', '--yes');
    expect(r.exitCode, r.all).toBe(2);
    expect(r.stderr).toContain(
      'pooler "bouncer1" is, by the inventory, auth_file /etc/pgbouncer/userlist.txt with RELOAD as pgbouncer on 127.0.0.1:6432, but pg-main\'s provisioner on db1 states (its heartbeat) that it keeps auth_file /etc/pgbouncer/userlist.txt with RELOAD as pgbouncer on 127.0.0.1:6433',
    );
    expect(r.stderr).toContain('Nothing was generated or sent.');
    expect(snapshotDir(machines)).toEqual(before);
    // No rotation was begun: the journal holds no record of one.
    expect(existsSync(path.join(tmp.dir, 'state', 'mesh-journal.jsonl'))).toBe(false);
    console.log(`pooler admin console disagreeing with the provisioner's: mesh rotate exit ${r.exitCode}`);
  });
});
