/**
 * The pooler step's rules without a pgbouncer (pooler-remote.ts; the real one, over a real sshd,
 * is test/mesh/pooler-remote-auth-file.test.ts): which pairs it applies to, the recorded
 * verifier it needs, the compare-and-swap that keeps another writer's line, and the old line put
 * back when RELOAD cannot be sent. The machines are an in-memory fake with the agent's two
 * whole-file operations; the applied-verifier record's format is checked here too.
 */
import { createHash } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  appliedVerifierPath,
  formatAppliedVerifiers,
  parseAppliedVerifiers,
} from '../../src/mesh/applied-verifier.js';
import { refusedLoginAdvice } from '../../src/app/rotation-app-text.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { testLoginRecord } from '../../src/mesh/test-login.js';
import type { Pooler } from '../../src/mesh/inventory.js';
import {
  giveBackPrevious,
  loginThroughPooler,
  poolerKeeper,
  takeBackUnmoved,
  type PoolerKeeper,
} from '../../src/mesh/pooler-remote.js';
import type { BoundTransport, FileDigests, TransportFor } from '../../src/mesh/transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const V_OLD = 'SCRAM-SHA-256$4096:b2xk$T0xE:T0xE';
const V_NEW = 'SCRAM-SHA-256$4096:bmV3$TkVX:TkVX';
const NEW = secretDigest('the new password');
const OLD = secretDigest('the old password');
const AUTH_FILE = '/etc/pgbouncer/userlist.txt';
const PROVIDER_PATH = '/m/provides/pg-main/web1_app';
const RECORD = appliedVerifierPath('/m/provides/pg-main', 'web1_app');
const FILE_TEXT = `"admin" "pw"\n; a comment\n"web1_app" "${V_OLD}"\n`;

const pair = { providerMachine: 'db1', providerPath: PROVIDER_PATH, role: 'web1_app' } as const;

function pooler(overrides: Partial<Pooler> = {}): Pooler {
  return {
    name: 'bouncer1',
    machine: 'pool1',
    kind: 'pgbouncer',
    serves: ['pg-main'],
    listen: { host: '127.0.0.1', port: 6432 },
    auth: { mode: 'auth_file', file: AUTH_FILE },
    admin: { user: 'pgbouncer', host: '127.0.0.1', port: 6432 },
    ...overrides,
  };
}

/** Machines whose files are a map; `beforeSwap` runs before each swap (another writer). */
function machines(files: Map<string, string>, beforeSwap: () => void = () => undefined) {
  const swaps: string[] = [];
  const sha = (t: string) => createHash('sha256').update(t).digest('hex');
  const transportFor: TransportFor = (machine) =>
    ({
      machine,
      readWholeText: (file: string) => {
        const text = files.get(`${machine}:${file}`);
        return Promise.resolve(text === undefined ? undefined : { text, sha256: sha(text) });
      },
      swapText: (file: string, expected: string, text: string) => {
        beforeSwap();
        const key = `${machine}:${file}`;
        if (sha(files.get(key) ?? '') !== expected) return Promise.resolve(false);
        files.set(key, text);
        swaps.push(key);
        return Promise.resolve(true);
      },
    }) as unknown as BoundTransport;
  return { transportFor, swaps };
}

describe('the applied-verifier record', () => {
  it('keeps the current application and the one before it, newest first, one line each; a line of another shape is dropped', () => {
    const first = formatAppliedVerifiers({ digest: OLD, verifier: V_OLD }, []);
    const second = formatAppliedVerifiers({ digest: NEW, verifier: V_NEW }, parseAppliedVerifiers(first));
    expect(second).toBe(`${NEW} ${V_NEW}\n${OLD} ${V_OLD}\n`);
    const third = secretDigest('a third');
    const again = formatAppliedVerifiers({ digest: third, verifier: V_OLD }, parseAppliedVerifiers(second));
    expect(parseAppliedVerifiers(again).map((v) => v.digest)).toEqual([third, NEW]);
    // The same credential applied again is one line, not two.
    expect(formatAppliedVerifiers({ digest: NEW, verifier: V_NEW }, parseAppliedVerifiers(second))).toBe(
      second,
    );
    expect(
      parseAppliedVerifiers(`${NEW} password-in-clear\nnoise\n${OLD} ${V_OLD} extra\n${OLD} ${V_OLD}\n`),
    ).toEqual([{ digest: OLD, verifier: V_OLD }]);
    expect(RECORD).toBe('/m/provides/pg-main/.provisioner/verifiers/web1_app');
  });
});

describe('the pooler step (an auth_file pooler on another machine than its provider)', () => {
  let tmp: { dir: string; cleanup: () => void };
  beforeEach(() => {
    tmp = makeTempDir('baton-pooler-remote-');
  });
  afterEach(() => tmp.cleanup());

  it('applies only to an auth_file pooler the pair logs in through, on another machine than its provider', () => {
    const { transportFor } = machines(new Map());
    const keeper = (p: Pooler) => poolerKeeper([p]).give(pair, { pooler: 'bouncer1' }, NEW, transportFor);
    expect(keeper(pooler({ auth: { mode: 'auth_query' } }))).toBeUndefined();
    expect(keeper(pooler({ machine: 'db1' }))).toBeUndefined();
    expect(poolerKeeper([pooler()]).give(pair, { pooler: 'other' }, NEW, transportFor)).toBeUndefined();
    expect(poolerKeeper([pooler()]).give(pair, {}, NEW, transportFor)).toBeUndefined();
  });

  it('without a recorded verifier for the new credential the login is refused, naming the record and the pooler, and the auth_file is not touched', async () => {
    const files = new Map([
      [`db1:${RECORD}`, `${OLD} ${V_OLD}\n`],
      [`pool1:${AUTH_FILE}`, FILE_TEXT],
    ]);
    const { transportFor, swaps } = machines(files);
    let tried = false;
    const result = await loginThroughPooler(
      poolerKeeper([pooler()]),
      { pair, connect: { pooler: 'bouncer1' }, digest: NEW, transportFor },
      () => {
        tried = true;
        return Promise.resolve({ ok: true, ms: 1 });
      },
    );
    expect(tried).toBe(false);
    expect(result).toMatchObject({ ok: false, poolerStep: true });
    // The journal's record says so, and the advice speaks of the step, not of pg_hba.conf.
    const record = testLoginRecord(
      { key: 'pg-main:web1-app', consumerMachine: 'web1' },
      'web1_app',
      { pooler: 'bouncer1' },
      result,
    );
    expect(record.pooler_step).toBe(true);
    const advice = refusedLoginAdvice(record, pooler(), 'db1');
    expect(advice).toContain(
      "baton could not give pooler bouncer1 on pool1 web1_app's new verifier (the reason above), so no login was tried",
    );
    expect(advice).toContain("that db1's provisioner records its verifiers");
    expect(advice).not.toContain('pg_hba.conf');
    // Refused by pgbouncer itself after baton gave it the line: not the provisioner's flags.
    const refused = refusedLoginAdvice(
      { ...record, pooler_step: undefined, code: '08P01', reason: 'SASL authentication failed' },
      pooler(),
      'db1',
    );
    expect(refused).toContain('although baton wrote it into its auth_file /etc/pgbouncer/userlist.txt');
    expect(refused).not.toContain('--pooler-auth-file');
    expect(result.ok ? '' : result.reason).toBe(
      `db1's provisioner has not recorded the verifier of the new credential of web1_app (${RECORD}; a provisioner older than baton's round 10 records none), so pooler bouncer1 on pool1 was not given it and its auth_file ${AUTH_FILE} was not changed`,
    );
    expect(swaps).toEqual([]);
    expect(files.get(`pool1:${AUTH_FILE}`)).toBe(FILE_TEXT);
  });

  it('a line another writer added between the read and the swap is kept; RELOAD that cannot be sent puts the old line back and refuses the login, naming the pooler', async () => {
    const files = new Map([
      [`db1:${RECORD}`, `${NEW} ${V_NEW}\n${OLD} ${V_OLD}\n`],
      [`pool1:${AUTH_FILE}`, FILE_TEXT],
    ]);
    let writer = 0;
    const { transportFor, swaps } = machines(files, () => {
      // Once, before baton's first swap: a person adds a login.
      if (writer++ === 0) files.set(`pool1:${AUTH_FILE}`, `${FILE_TEXT}"added" "by hand"\n`);
    });
    const result = await loginThroughPooler(
      poolerKeeper([pooler()]), // its admin: names no password_file
      { pair, connect: { pooler: 'bouncer1' }, digest: NEW, transportFor },
      () => Promise.resolve({ ok: true, ms: 1 }),
    );
    expect(result.ok ? '' : result.reason).toBe(
      'pooler bouncer1 on pool1: the inventory names no admin: password_file for its RELOAD',
    );
    // Written (on the second try, over the added line), then put back: only the rotated login's line moved.
    expect(swaps).toHaveLength(2);
    expect(files.get(`pool1:${AUTH_FILE}`)).toBe(`${FILE_TEXT}"added" "by hand"\n`);
  });

  it('an admin password_file others can read is refused by name before anything is sent to the admin console', async () => {
    const file = path.join(tmp.dir, 'admin.pw');
    writeFileSync(file, 'secret\n');
    chmodSync(file, 0o644);
    const files = new Map([
      [`db1:${RECORD}`, `${NEW} ${V_NEW}\n`],
      [`pool1:${AUTH_FILE}`, FILE_TEXT],
    ]);
    const { transportFor } = machines(files);
    const result = await loginThroughPooler(
      poolerKeeper([
        pooler({ admin: { user: 'pgbouncer', host: '127.0.0.1', port: 6432, passwordFile: file } }),
      ]),
      { pair, connect: { pooler: 'bouncer1' }, digest: NEW, transportFor },
      () => Promise.resolve({ ok: true, ms: 1 }),
    );
    expect(result.ok ? '' : result.reason).toBe(
      `pooler bouncer1 on pool1: its admin password_file ${file} is readable by others (mode 644): chmod 600 it`,
    );
    expect(files.get(`pool1:${AUTH_FILE}`)).toBe(FILE_TEXT);
  });
});

describe('a given line stays only where the consumer moved', () => {
  /** A keeper whose step always gives the line; `undone` counts its undos. */
  const giving = () => {
    const state = { undone: 0 };
    const keeper: PoolerKeeper = {
      give: () =>
        Promise.resolve({
          ok: true as const,
          undo: () => {
            state.undone++;
            return Promise.resolve();
          },
        }),
    };
    return { keeper, state };
  };
  const step = {
    pair,
    connect: { pooler: 'bouncer1' },
    digest: NEW,
    transportFor: machines(new Map()).transportFor,
  };

  it('a passed login keeps the line and hands its undo on; a refused one takes it back; a refused one whose consumer the machine moved keeps it', async () => {
    const passed = giving();
    let handed: (() => Promise<void>) | undefined;
    await loginThroughPooler(
      passed.keeper,
      step,
      () => Promise.resolve({ ok: true, ms: 1 }),
      undefined,
      (u) => {
        handed = u;
      },
    );
    expect(passed.state.undone).toBe(0);
    await handed!();
    expect(passed.state.undone).toBe(1);

    const refused = giving();
    const r = await loginThroughPooler(refused.keeper, step, () =>
      Promise.resolve({ ok: false, ms: 1, reason: 'refused', code: '28P01' }),
    );
    expect(r).toMatchObject({ ok: false, reason: 'refused', code: '28P01' });
    expect(refused.state.undone).toBe(1);

    const moved = giving();
    let stayed = false;
    await loginThroughPooler(
      moved.keeper,
      step,
      () => Promise.resolve({ ok: false, ms: 1, reason: 'read late' }),
      () => true,
      () => {
        stayed = true;
      },
    );
    expect(moved.state.undone).toBe(0);
    expect(stayed).toBe(true);
  });

  it('after a roll-back, takes back the lines of the consumers whose live end is not the new credential (single) or login (alternating); an unread end is left', async () => {
    const ends = new Map<string, FileDigests | Error>([
      ['/web/single-moved', { live: NEW, next: undefined }],
      ['/web/single-stayed', { live: OLD, next: undefined }],
      ['/web/alt-moved', { live: OLD, next: undefined, liveLogin: 'web1_app_b' }],
      ['/web/alt-stayed', { live: OLD, next: undefined, liveLogin: 'web1_app_a' }],
      ['/web/unread', new Error('no answer')],
    ]);
    const transportFor: TransportFor = () =>
      ({
        digests: ([p]: readonly string[]) => {
          const end = ends.get(p!)!;
          return end instanceof Error ? Promise.reject(end) : Promise.resolve([end]);
        },
      }) as unknown as BoundTransport;
    const undone: string[] = [];
    const line = (consumerPath: string, alternating: boolean) => ({
      pair: {
        consumerMachine: 'web1',
        consumerPath,
        ...(alternating ? { login: { slot: 'b' as const, role: 'web1_app_b' } } : {}),
      },
      digest: NEW,
      undo: () => {
        undone.push(consumerPath);
        return Promise.resolve();
      },
    });
    await takeBackUnmoved(
      [
        line('/web/single-moved', false),
        line('/web/single-stayed', false),
        line('/web/alt-moved', true),
        line('/web/alt-stayed', true),
        line('/web/unread', false),
      ],
      transportFor,
    );
    expect(undone.sort()).toEqual(['/web/alt-stayed', '/web/single-stayed']);
  });
});

describe('a roll-back started from what was read', () => {
  it('gives each pair taken back its previous credential through the pooler step, and leaves a first delivery and a pair without connect: alone', async () => {
    const given: { role: string; digest: string }[] = [];
    const keeper: PoolerKeeper = {
      give: (p, _connect, digest) => {
        given.push({ role: p.role, digest });
        return Promise.resolve({ ok: true as const, undo: () => Promise.resolve() });
      },
    };
    const { transportFor } = machines(new Map());
    await giveBackPrevious(
      keeper,
      [
        { pair, connect: { pooler: 'bouncer1' }, previous: OLD },
        { pair: { ...pair, role: 'first_app' }, connect: { pooler: 'bouncer1' }, previous: undefined },
        { pair: { ...pair, role: 'direct_app' }, connect: undefined, previous: OLD },
      ],
      transportFor,
    );
    expect(given).toEqual([{ role: 'web1_app', digest: OLD }]);
  });
});
