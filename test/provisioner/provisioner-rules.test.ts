/**
 * The provisioner's rules against an in-memory database fake (the real PostgreSQL proof is
 * postgres-provisioner.test.ts): what is sent, what is receipted, and what happens when the
 * connection, a statement or the receipt write fails half-way.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  formatReceipt,
  parseReceipt,
  secretDigest,
  type LoginSession,
  type Receipt,
} from '../../src/mesh/digest.js';
import { BatonError } from '../../src/errors.js';
import { appliedVerifierPath } from '../../src/mesh/applied-verifier.js';
import { keptVerifier } from '../../src/provisioner/applied-verifiers.js';
import { loginOf } from '../../src/provisioner/heartbeat.js';
import { PostgresProvisioner } from '../../src/provisioner/postgres-provisioner.js';
import {
  ConnectionLost,
  RoleSkipped,
  type RoleDatabase,
  type RoleOutcome,
} from '../../src/provisioner/postgres-roles.js';
import { watchProvisioner } from '../../src/provisioner/watch-provisioner.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { deliverFile, secret } from './delivered-fixture.js';

let temp: { dir: string; cleanup: () => void };
let provides: string;

/** The verifier records' temps: each written before the database is asked, none left once it answered. */
const verifierTemps = () => {
  const dir = path.dirname(appliedVerifierPath(provides, 'any'));
  return existsSync(dir) ? readdirSync(dir).filter((n) => n.includes('.tmp-')) : [];
};
let lines: string[];

const deliver = (role: string, value: string) => deliverFile(provides, role, value);

function receiptDigest(role: string): string | undefined {
  try {
    return parseReceipt(readFileSync(path.join(provides, '.applied', role), 'utf8'))?.digest;
  } catch {
    return undefined;
  }
}

/**
 * A database that records every password it was given (as verifiers) and does, per call,
 * what the test scripted; a connection the test did not expect throws.
 */
class FakeDatabase {
  /** role → its verifier; `nologin`/`expired` hold roles changed "by hand". */
  readonly roles = new Map<string, string>();
  readonly nologin = new Set<string>();
  readonly expired = new Set<string>();
  /** login → its group (an alternating pair's membership). */
  readonly members = new Map<string, string>();
  /** login → its open sessions, as `pg_stat_activity` would list them. */
  readonly openSessions = new Map<string, LoginSession[]>();
  readonly calls: string[] = [];
  readonly inspected: string[][] = [];
  connections = 0;
  closes = 0;
  allowConnect = true;
  onSetPassword: (role: string, callIndex: number) => void = () => undefined;

  connect = async (): Promise<RoleDatabase> => {
    if (!this.allowConnect) throw new Error('the test did not expect a connection');
    this.connections += 1;
    return {
      setPassword: async (role: string, verifier: string): Promise<RoleOutcome> => {
        this.calls.push(role);
        this.onSetPassword(role, this.calls.length - 1);
        expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:/);
        const outcome = this.roles.has(role) ? 'updated' : 'created';
        this.roles.set(role, verifier);
        this.nologin.delete(role);
        this.expired.delete(role);
        return outcome;
      },
      setLogin: async ({ group, login, other, verifier, groupLogin }) => {
        this.calls.push(login);
        this.onSetPassword(login, this.calls.length - 1);
        expect(verifier).toMatch(/^SCRAM-SHA-256\$4096:/);
        if (!this.roles.has(group)) {
          this.roles.set(group, '');
          this.nologin.add(group);
        }
        const groupVerifier = this.roles.get(group)!;
        const copied =
          !this.roles.has(login) &&
          !this.roles.has(other) &&
          !this.nologin.has(group) &&
          groupVerifier.startsWith('SCRAM-SHA-256$');
        if (copied) {
          this.roles.set(other, groupVerifier);
          this.members.set(other, group);
        }
        const outcome = this.roles.has(login) ? 'updated' : 'created';
        this.roles.set(login, verifier);
        this.nologin.delete(login);
        this.expired.delete(login);
        this.members.set(login, group);
        if (!groupLogin) this.nologin.add(group);
        return { outcome, copied } as const;
      },
      disableLogin: async (role: string) => {
        this.calls.push(`nologin ${role}`);
        if (!this.roles.has(role) || this.nologin.has(role)) return false;
        this.nologin.add(role);
        return true;
      },
      sessions: async (login: string) => [...(this.openSessions.get(login) ?? [])],
      endSessions: async (login: string) => {
        const ended = this.openSessions.get(login)?.length ?? 0;
        this.openSessions.delete(login);
        return ended;
      },
      inspect: async (roles: readonly string[]) => {
        this.inspected.push([...roles]);
        return new Map(
          roles
            .filter((r) => this.roles.has(r))
            .map((r) => [
              r,
              {
                canLogin: !this.nologin.has(r),
                expired: this.expired.has(r),
                verifier: this.roles.get(r)!,
                memberOf: this.members.has(r) ? [this.members.get(r)!] : [],
              },
            ]),
        );
      },
      close: async () => {
        this.closes += 1;
      },
    };
  };
}

function makeProvisioner(
  db: FakeDatabase,
  clock?: () => Date,
  lock?: ConstructorParameters<typeof PostgresProvisioner>[0]['lock'],
): PostgresProvisioner {
  return new PostgresProvisioner({
    meshDir: temp.dir,
    provider: 'pg-main',
    connect: db.connect,
    log: (line) => lines.push(line),
    ...(clock ? { clock } : {}),
    ...(lock ? { lock } : {}),
  });
}

function receiptOf(role: string): Receipt | undefined {
  try {
    return parseReceipt(readFileSync(path.join(provides, '.applied', role), 'utf8'));
  } catch {
    return undefined;
  }
}

beforeEach(() => {
  temp = makeTempDir('baton-prov-rules-');
  provides = path.join(temp.dir, 'provides', 'pg-main');
  mkdirSync(provides, { recursive: true });
  lines = [];
});

afterEach(() => temp.cleanup());

describe('a provisioner cycle', () => {
  it('sends no password statement when every delivered digest is already applied: it only reads the roles back', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    deliver('b', secret());
    const service = makeProvisioner(db);
    await service.runCycle();
    expect(db.calls).toEqual(['a', 'b']);

    const report = await service.runCycle();

    expect(report).toMatchObject({ applied: [], failed: [], unchanged: 2, changed: [], blocked: undefined });
    expect(db.calls).toEqual(['a', 'b']);
    // Once per run, the logins a single role may have left from an alternating past (switched-back-logins.ts); then the roles.
    expect(db.inspected).toEqual([
      ['a_a', 'a_b', 'b_a', 'b_b'],
      ['a', 'b'],
    ]);
  });

  it('does not connect at all when nothing was delivered or applied yet', async () => {
    const db = new FakeDatabase();
    db.allowConnect = false;
    const report = await makeProvisioner(db).runCycle();
    expect(report).toMatchObject({
      applied: [],
      failed: [],
      unchanged: 0,
      blocked: undefined,
      databaseDown: false,
    });
  });

  it('notices an in-place rewrite of the same size even when the mtime is put back (the ctime moves)', async () => {
    const db = new FakeDatabase();
    const file = path.join(provides, 'a');
    const stamp = new Date('2026-01-01T00:00:00Z');
    writeFileSync(file, 'A'.repeat(43));
    utimesSync(file, stamp, stamp);
    const service = makeProvisioner(db);
    await service.runCycle();
    writeFileSync(file, 'B'.repeat(43));
    utimesSync(file, stamp, stamp);

    const report = await service.runCycle();

    expect(report.applied.map((a) => a.digest)).toEqual([secretDigest('B'.repeat(43))]);
  });

  it('when the connection is lost mid-cycle, receipts exist only for what was applied and the next cycle sends only the rest', async () => {
    const db = new FakeDatabase();
    const values = { a: secret(), b: secret(), c: secret() };
    for (const [role, value] of Object.entries(values)) deliver(role, value);
    db.onSetPassword = (_role, index) => {
      if (index === 1) throw new ConnectionLost('the connection was lost (terminated)');
    };
    const service = makeProvisioner(db);

    const report = await service.runCycle();

    expect(report.applied.map((a) => a.role)).toEqual(['a']);
    expect(report.failed.map((f) => [f.role, f.inFile])).toEqual([
      ['b', false],
      ['c', false],
    ]);
    expect(report.blocked?.what).toContain('connection was lost');
    expect(db.closes).toBe(1);
    expect([receiptDigest('a'), receiptDigest('b'), receiptDigest('c')]).toEqual([
      secretDigest(values.a),
      undefined,
      undefined,
    ]);

    // Only what was applied has its verifier recorded; the records written ahead for b and c are gone.
    expect(verifierTemps()).toEqual([]);
    expect(await keptVerifier(provides, 'a', secretDigest(values.a))).toMatch(/^SCRAM-SHA-256\$/);
    expect(await keptVerifier(provides, 'b', secretDigest(values.b))).toBeUndefined();

    db.onSetPassword = () => undefined;
    const next = await service.runCycle();
    expect(next.applied.map((a) => a.role)).toEqual(['b', 'c']);
    expect(db.calls).toEqual(['a', 'b', 'b', 'c']);
    expect(await keptVerifier(provides, 'b', secretDigest(values.b))).toMatch(/^SCRAM-SHA-256\$/);
    expect(verifierTemps()).toEqual([]);
  });

  it('a role the database refuses is reported by name and skipped on its own backoff; the others are applied in the same cycle and every cycle after', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    deliver('b', secret());
    db.onSetPassword = (role) => {
      if (role === 'a') throw Object.assign(new Error('permission denied to alter role'), { code: '42501' });
    };
    let now = Date.parse('2026-11-30T12:00:00Z');
    const service = makeProvisioner(db, () => new Date(now));

    const report = await service.runCycle();

    expect(report.applied.map((a) => a.role)).toEqual(['b']);
    expect(report.failed).toEqual([
      {
        role: 'a',
        file: path.join(provides, 'a'),
        reason: 'the database refused it (permission denied to alter role)',
        inFile: false,
        scope: 'role',
      },
    ]);
    expect(lines).toContain(
      'a failed: the database refused it (permission denied to alter role); skipped (retried in 5 s or when its file changes), the other roles go on',
    );
    expect(receiptDigest('a')).toBeUndefined();
    // The refused role's verifier record, written ahead, was taken back.
    expect(verifierTemps()).toEqual([]);
    expect(existsSync(appliedVerifierPath(provides, 'a'))).toBe(false);
    // The next cycle, 1 s later, does not send a statement for it; a new delivery of b is applied.
    now += 1000;
    const b2 = secret();
    deliver('b', b2);
    const second = await service.runCycle();
    expect(second.applied.map((x) => x.role)).toEqual(['b']);
    expect(second.failed.map((f) => [f.role, f.scope])).toEqual([['a', 'role']]);
    expect(db.calls).toEqual(['a', 'b', 'b']);
    // Its own time comes: tried again, and applied once the database accepts it.
    now += 5000;
    db.onSetPassword = () => undefined;
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual(['a']);
  });

  it("applied in one transaction (setPasswords): a role the transaction refused, and every role of one whose connection was lost, takes back its verifier's record written ahead; the applied ones keep theirs", async () => {
    const db = new FakeDatabase();
    const values = { a: secret(), b: secret(), c: secret() };
    for (const [role, value] of Object.entries(values)) deliver(role, value);
    let lose = false;
    const single = db.connect;
    db.connect = async () => {
      const inner = await single();
      return {
        ...inner,
        setPasswords: async (roles) => {
          if (lose) throw new ConnectionLost('the connection was lost (terminated)');
          const outcomes = new Map<string, RoleOutcome | Error>();
          for (const { role, verifier } of roles) {
            const v = await verifier;
            if (v === undefined) continue;
            outcomes.set(
              role,
              role === 'b' ? new Error('permission denied to alter role') : await inner.setPassword(role, v),
            );
          }
          return outcomes;
        },
      };
    };
    const service = makeProvisioner(db);
    const report = await service.runCycle();
    expect(report.applied.map((a) => a.role).sort()).toEqual(['a', 'c']);
    expect(verifierTemps()).toEqual([]);
    expect(existsSync(appliedVerifierPath(provides, 'b'))).toBe(false);
    expect(await keptVerifier(provides, 'c', secretDigest(values.c))).toMatch(/^SCRAM-SHA-256\$/);
    // A new delivery of a and c, and the transaction's connection lost: neither record moves.
    const next = { a: secret(), c: secret() };
    for (const [role, value] of Object.entries(next)) deliver(role, value);
    lose = true;
    const lost = await service.runCycle();
    expect(lost.applied).toEqual([]);
    expect(verifierTemps()).toEqual([]);
    expect(await keptVerifier(provides, 'a', secretDigest(next.a))).toBeUndefined();
    expect(await keptVerifier(provides, 'a', secretDigest(values.a))).toMatch(/^SCRAM-SHA-256\$/);
  });

  it('receipts the digest of the content it actually applied when the file is replaced between the scan and the apply', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    deliver('b', secret());
    const replacement = secret();
    db.onSetPassword = (role) => {
      if (role === 'a') deliver('b', replacement);
    };

    await makeProvisioner(db).runCycle();

    expect(receiptDigest('b')).toBe(secretDigest(replacement));
  });

  it('a receipt that cannot be written is reported, and the role is applied again until it can be', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    writeFileSync(path.join(provides, '.applied'), 'in the way');
    const service = makeProvisioner(db);

    const report = await service.runCycle();

    expect(report.applied).toEqual([]);
    expect(report.failed[0]?.reason).toContain('receipt could not be written');
    rmSync(path.join(provides, '.applied'));
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual(['a']);
    expect(db.calls).toEqual(['a', 'a']);
    expect(statSync(path.join(provides, '.applied')).mode & 0o777).toBe(0o700);
  });

  it('an unreadable receipt counts as not applied, never as applied', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    mkdirSync(path.join(provides, '.applied'), { mode: 0o700 });
    writeFileSync(path.join(provides, '.applied', 'a'), '{"role":"a","digest":"sha256:torn');

    expect((await makeProvisioner(db).runCycle()).applied.map((a) => a.role)).toEqual(['a']);
  });

  it('stops between roles when its signal is aborted, and closes the connection', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    deliver('b', secret());
    const controller = new AbortController();
    db.onSetPassword = () => controller.abort();

    const report = await makeProvisioner(db).runCycle(controller.signal);

    expect(report.aborted).toBe(true);
    expect(db.calls).toEqual(['a']);
    expect(db.closes).toBe(1);
    expect(receiptDigest('b')).toBeUndefined();
  });

  it('a provider directory that does not exist blocks the cycle, by name, and writes nothing', async () => {
    const db = new FakeDatabase();
    db.allowConnect = false;
    rmSync(provides, { recursive: true });
    const before = snapshotDir(temp.dir);

    const report = await makeProvisioner(db).runCycle();

    expect(report.blocked?.where).toBe(provides);
    expect(report.blocked?.what).toContain('does not exist');
    expect(snapshotDir(temp.dir)).toEqual(before);
  });
});

describe("the database's own truth", () => {
  it.each([
    [
      'password-changed',
      (db: FakeDatabase, role: string) => db.roles.set(role, 'SCRAM-SHA-256$4096:c2FsdA==$aGFuZA==:aGFuZA=='),
    ],
    ['dropped', (db: FakeDatabase, role: string) => db.roles.delete(role)],
    ['nologin', (db: FakeDatabase, role: string) => db.nologin.add(role)],
    ['expired', (db: FakeDatabase, role: string) => db.expired.add(role)],
  ] as const)(
    'a role %s by hand is written in its receipt by the cycle that finds it and put back by the next one; the others are untouched',
    async (found, change) => {
      const db = new FakeDatabase();
      const value = secret();
      deliver('a', value);
      deliver('b', secret());
      let now = Date.parse('2026-12-01T10:00:00.000Z');
      const clock = () => new Date(now);
      const service = makeProvisioner(db, clock);
      await service.runCycle();
      change(db, 'a');

      now += 2_000;
      const finding = await service.runCycle();

      // For one interval the receipt says what the database holds, and nothing is set.
      expect(finding).toMatchObject({
        changed: [{ role: 'a', found }],
        applied: [],
        failed: [],
        unchanged: 1,
      });
      expect(db.calls).toEqual(['a', 'b']);
      expect(receiptOf('a')).toMatchObject({
        digest: secretDigest(value),
        database: { found, since: '2026-12-01T10:00:02.000Z' },
      });
      expect(receiptOf('a')?.database?.restored).toBeUndefined();

      now += 2_000;
      const repair = await makeProvisioner(db, clock).runCycle();

      // A restarted provisioner repairs from the receipt alone, without checking again first.
      expect(repair).toMatchObject({ changed: [], unchanged: 1 });
      expect(repair.applied).toEqual([expect.objectContaining({ role: 'a', restored: found })]);
      expect(db.calls).toEqual(['a', 'b', 'a']);
      expect(receiptOf('a')?.database).toMatchObject({
        found: 'as-set',
        restored: found,
        since: '2026-12-01T10:00:04.000Z',
      });
      expect(lines.filter((l) => l.startsWith('a '))).toEqual([
        expect.stringMatching(/ created$/),
        expect.stringMatching(
          /^a changed in the database: .*; the delivered password is put back on the next cycle$/,
        ),
        expect.stringMatching(/^a sha256:[0-9a-f]{12} restored \(/),
      ]);
      expect(lines.join('\n')).not.toContain(value);
    },
  );

  it('a role it cannot put back keeps its finding and the reason in the receipt; after a restart the receipt alone makes it try again', async () => {
    const db = new FakeDatabase();
    const value = secret();
    deliver('a', value);
    await makeProvisioner(db).runCycle();
    db.nologin.add('a');
    db.onSetPassword = () => {
      throw Object.assign(new Error('permission denied to alter role'), { code: '42501' });
    };

    expect((await makeProvisioner(db).runCycle()).changed).toEqual([{ role: 'a', found: 'nologin' }]);
    const report = await makeProvisioner(db).runCycle();

    expect(report.changed).toEqual([]);
    expect(report.failed).toEqual([
      expect.objectContaining({
        role: 'a',
        scope: 'role',
        reason: 'the database refused it (permission denied to alter role)',
      }),
    ]);
    expect(receiptOf('a')).toMatchObject({
      digest: secretDigest(value),
      database: { found: 'nologin', problem: 'the database refused it (permission denied to alter role)' },
    });
    expect(lines).toContain(
      'a changed in the database (the role was set NOLOGIN) and could not be put back: the database refused it (permission denied to alter role)',
    );
    // A lasting problem is logged once, not on every poll (its retry is later than these cycles).
    const again = makeProvisioner(db);
    await again.runCycle();
    await again.runCycle();
    expect(lines.filter((l) => l.includes('could not be put back'))).toHaveLength(1);

    db.onSetPassword = () => undefined;
    const restarted = await makeProvisioner(db).runCycle();
    expect(restarted.applied).toEqual([expect.objectContaining({ role: 'a', restored: 'nologin' })]);
    expect(db.nologin.has('a')).toBe(false);
    expect(receiptOf('a')?.database).toMatchObject({ found: 'as-set', restored: 'nologin' });
  });

  it('a change whose receipt cannot record it is put back in the cycle that finds it (nothing could show it meanwhile), and the receipt problem is reported', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    const service = makeProvisioner(db);
    await service.runCycle();
    db.nologin.add('a');
    // A directory where the receipt goes: neither the finding nor a new receipt can be written.
    const receipt = path.join(provides, '.applied', 'a');
    rmSync(receipt);
    mkdirSync(path.join(receipt, 'in-the-way'), { recursive: true });

    const report = await service.runCycle();

    expect(report.changed).toEqual([{ role: 'a', found: 'nologin' }]);
    expect(db.calls).toEqual(['a', 'a']);
    expect(db.nologin.has('a')).toBe(false);
    expect(report.failed).toEqual([
      expect.objectContaining({
        role: 'a',
        scope: 'role',
        reason: expect.stringContaining('its receipt could not be written'),
      }),
    ]);
    expect(lines).toContain(
      'a changed in the database: the role was set NOLOGIN; putting the delivered password back now',
    );
    expect(
      lines.some((l) => l.startsWith('a: its receipt could not be updated with the database check (')),
    ).toBe(true);
  });

  it('an old receipt without a database check still reads as applied, and gets its first check written', async () => {
    const db = new FakeDatabase();
    const value = secret();
    deliver('a', value);
    await makeProvisioner(db).runCycle();
    const old = { role: 'a', digest: secretDigest(value), applied_at: '2026-01-01T00:00:00.000Z' };
    writeFileSync(path.join(provides, '.applied', 'a'), `${JSON.stringify(old)}\n`);

    const report = await makeProvisioner(db).runCycle();

    expect(report).toMatchObject({ applied: [], unchanged: 1, changed: [] });
    expect(receiptOf('a')).toMatchObject({ ...old, database: { found: 'as-set' } });
  });
});

describe('a provisioner that keeps going', () => {
  it('a role skipped by its own timeout is reported with its reason, the others are applied in the same cycle, and it is tried again the next cycle (no backoff)', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    deliver('b', secret());
    deliver('c', secret());
    db.onSetPassword = (role) => {
      if (role === 'b') throw new RoleSkipped('another transaction holds a lock on it (waited 50 ms)');
    };
    const service = makeProvisioner(db);

    const report = await service.runCycle();

    expect(report.applied.map((a) => a.role)).toEqual(['a', 'c']);
    expect(report.failed).toEqual([
      {
        role: 'b',
        file: path.join(provides, 'b'),
        reason: 'skipped this cycle: another transaction holds a lock on it (waited 50 ms)',
        inFile: false,
        scope: 'role',
      },
    ]);
    expect(report.databaseDown).toBe(false);
    expect(receiptDigest('b')).toBeUndefined();
    db.onSetPassword = () => undefined;
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual(['b']);
  });

  it('while another provisioner holds the provider it connects to nothing and applies nothing, says who holds it once, and takes over when it can', async () => {
    const db = new FakeDatabase();
    deliver('a', secret());
    let holder: string | undefined =
      '"baton-provision pg-main pid 4242 on db1" (server pid 77, from 10.0.0.5)';
    const lock = {
      acquire: async () => (holder ? { held: false as const, holder } : { held: true as const }),
    };
    const service = makeProvisioner(db, undefined, lock);
    const before = snapshotDir(temp.dir);

    const first = await service.runCycle();
    await service.runCycle();

    expect(first).toMatchObject({ applied: [], failed: [], busy: holder, databaseDown: false });
    expect(db.connections).toBe(0);
    expect(snapshotDir(temp.dir)).toEqual(before);
    expect(lines).toEqual([
      `another provisioner for pg-main is running: ${holder}; this one waits and applies nothing until it stops`,
    ]);
    holder = undefined;
    expect((await service.runCycle()).applied.map((a) => a.role)).toEqual(['a']);
    expect(lines[1]).toBe('the other provisioner for pg-main stopped: this one holds the provider now');
  });

  it('removes a temp receipt left by a provisioner killed mid-write, and leaves a fresh one (a write in progress) alone', async () => {
    const db = new FakeDatabase();
    const applied = path.join(provides, '.applied');
    mkdirSync(applied, { recursive: true, mode: 0o700 });
    const stale = path.join(applied, '.web1_app.tmp-0123456789ab');
    const fresh = path.join(applied, '.web2_app.tmp-ba9876543210');
    writeFileSync(stale, '{"role":"web1_app"');
    writeFileSync(fresh, '{"role":"web2_app"');
    const old = new Date(Date.now() - 60_000);
    utimesSync(stale, old, old);

    await makeProvisioner(db).runCycle();

    expect(existsSync(stale)).toBe(false);
    expect(existsSync(fresh)).toBe(true);
    expect(lines).toEqual([
      `removed ${stale}, a temp receipt left by a provisioner that was stopped mid-write`,
    ]);
  });
});

describe('watchProvisioner', () => {
  it('waits for a provider directory the mesh has not created yet, and applies what arrives in it', async () => {
    const db = new FakeDatabase();
    rmSync(provides, { recursive: true });
    const controller = new AbortController();
    const watching = watchProvisioner(makeProvisioner(db), {
      intervalMs: 5,
      signal: controller.signal,
      log: (line) => lines.push(line),
    });
    await vi.waitFor(
      () =>
        expect(lines.some((l) => l.startsWith('nothing to apply yet:') && l.includes(provides))).toBe(true),
      { timeout: 10_000 },
    );

    mkdirSync(provides, { recursive: true });
    deliver('late', secret());
    await vi.waitFor(() => expect(db.calls).toEqual(['late']), { timeout: 10_000 });
    controller.abort();
    await watching;
    expect(lines.filter((l) => l.startsWith('nothing to apply yet:'))).toHaveLength(1);
  });

  it('never rejects: a cycle that throws is logged and retried until the signal ends the watch', async () => {
    const controller = new AbortController();
    let cycles = 0;
    const throwing = {
      runCycle: async () => {
        cycles += 1;
        throw new Error(`boom ${cycles}`);
      },
    } as unknown as PostgresProvisioner;

    const watching = watchProvisioner(throwing, {
      intervalMs: 1,
      maxBackoffMs: 4,
      signal: controller.signal,
      log: (line) => lines.push(line),
    });
    await vi.waitFor(() => expect(cycles).toBeGreaterThanOrEqual(3), { timeout: 10_000 });
    controller.abort();

    await expect(watching).resolves.toBeUndefined();
    expect(lines.slice(0, 2)).toEqual([
      'cycle failed unexpectedly: boom 1',
      'cycle failed unexpectedly: boom 2',
    ]);
  });
});

describe('alternating login files (R+a, R+b)', () => {
  const session = (pid: number): LoginSession => ({
    pid,
    application_name: 'web1',
    client_addr: '10.0.0.5',
    backend_start: '2026-12-01T00:00:00.000Z',
  });
  const receiptPath = (name: string) => path.join(provides, '.applied', name);

  it('applies R+a in one call: group R NOLOGIN, R_a a LOGIN member of R; the receipt is named after the file and names the login and its sessions', async () => {
    const db = new FakeDatabase();
    db.openSessions.set('web1_app_a', [session(101)]);
    const password = secret();
    deliver('web1_app+a', password);
    const service = makeProvisioner(db);

    const report = await service.runCycle();

    expect(report).toMatchObject({
      applied: [{ role: 'web1_app+a', digest: secretDigest(password), outcome: 'created' }],
      failed: [],
    });
    expect(db.calls).toEqual(['web1_app_a']);
    expect(db.nologin.has('web1_app')).toBe(true);
    expect(db.nologin.has('web1_app_a')).toBe(false);
    expect(db.members.get('web1_app_a')).toBe('web1_app');
    expect(db.roles.has('web1_app_b')).toBe(false);
    expect(receiptOf('web1_app+a')).toMatchObject({
      role: 'web1_app+a',
      login: 'web1_app_a',
      digest: secretDigest(password),
      sessions: [session(101)],
      database: { found: 'as-set' },
    });
    expect(existsSync(receiptPath('web1_app_a'))).toBe(false);

    const again = await service.runCycle();
    expect(again).toMatchObject({ applied: [], unchanged: 1, changed: [] });
    expect(db.calls).toEqual(['web1_app_a']);
    // The login's check, then the group's (kept NOLOGIN while no plain file is delivered).
    expect(db.inspected.slice(-2)).toEqual([['web1_app_a'], ['web1_app']]);
  });

  it("switching a single pair: the other login gets R's stored verifier; R stays LOGIN while its file is delivered, then becomes NOLOGIN and loses its receipt", async () => {
    const db = new FakeDatabase();
    const service = makeProvisioner(db);
    deliver('web1_app', secret());
    await service.runCycle();
    const groupVerifier = db.roles.get('web1_app')!;

    deliver('web1_app+a', secret());
    const switched = await service.runCycle();

    expect(switched.applied).toMatchObject([{ role: 'web1_app+a', outcome: 'created', copied: true }]);
    expect(db.roles.get('web1_app_b')).toBe(groupVerifier);
    expect(db.members.get('web1_app_b')).toBe('web1_app');
    expect(db.nologin.has('web1_app')).toBe(false);
    expect(lines).toContain(
      "web1_app_b created with web1_app's stored verifier: it accepts the password web1_app's consumer holds",
    );
    expect(existsSync(receiptPath('web1_app'))).toBe(true);

    rmSync(path.join(provides, 'web1_app'));
    await service.runCycle();

    expect(db.nologin.has('web1_app')).toBe(true);
    expect(existsSync(receiptPath('web1_app'))).toBe(false);
    expect(lines).toContain('web1_app set NOLOGIN: its plain file is gone, its logins carry the pair');
    await service.runCycle();
    expect(db.calls.filter((c) => c === 'nologin web1_app')).toHaveLength(1);

    // The next delivery of R+b replaces the copied verifier; nothing is copied again.
    deliver('web1_app+b', secret());
    const rotated = await service.runCycle();
    expect(rotated.applied).toMatchObject([{ role: 'web1_app+b', outcome: 'updated' }]);
    expect(rotated.applied[0]!.copied).toBeUndefined();
    expect(db.roles.get('web1_app_b')).not.toBe(groupVerifier);
  });

  it('a login file that goes away: the login becomes NOLOGIN and its receipt is removed, also by a provisioner started afterwards', async () => {
    const db = new FakeDatabase();
    deliver('web1_app+a', secret());
    deliver('web1_app+b', secret());
    await makeProvisioner(db).runCycle();
    const service = makeProvisioner(db);
    await service.runCycle();

    rmSync(path.join(provides, 'web1_app+a'));
    await service.runCycle();
    expect(db.nologin.has('web1_app_a')).toBe(true);
    expect(db.nologin.has('web1_app_b')).toBe(false);
    expect(existsSync(receiptPath('web1_app+a'))).toBe(false);
    expect(lines).toContain('web1_app_a set NOLOGIN: its file web1_app+a is gone');

    rmSync(path.join(provides, 'web1_app+b'));
    const restarted = makeProvisioner(db);
    await restarted.runCycle();
    expect(db.nologin.has('web1_app_b')).toBe(true);
    expect(existsSync(receiptPath('web1_app+b'))).toBe(false);
    const calls = db.calls.length;
    db.allowConnect = false;
    expect(await restarted.runCycle()).toMatchObject({ applied: [], failed: [], blocked: undefined });
    expect(db.calls).toHaveLength(calls);
  });

  it('checks a login as it checks a role, and its membership too: taken out of its group, it is found and put back', async () => {
    const db = new FakeDatabase();
    deliver('web1_app+a', secret());
    const service = makeProvisioner(db);
    await service.runCycle();
    db.members.delete('web1_app_a');

    const found = await service.runCycle();
    expect(found.changed).toEqual([{ role: 'web1_app+a', found: 'not-member' }]);
    expect(receiptOf('web1_app+a')?.database).toMatchObject({ found: 'not-member' });

    const repaired = await service.runCycle();
    expect(repaired.applied).toMatchObject([{ role: 'web1_app+a', restored: 'not-member' }]);
    expect(db.members.get('web1_app_a')).toBe('web1_app');
    expect(receiptOf('web1_app+a')?.database).toMatchObject({ found: 'as-set', restored: 'not-member' });
  });

  it("ends a login's sessions only once the digest its request names is applied, records how many, and removes the request", async () => {
    const db = new FakeDatabase();
    db.openSessions.set('web1_app_a', [session(101), session(102)]);
    const service = makeProvisioner(db);
    deliver('web1_app+a', secret());
    await service.runCycle();
    expect(receiptOf('web1_app+a')?.sessions).toEqual([session(101), session(102)]);

    const fresh = secret();
    const request = path.join(provides, '.end-sessions', 'web1_app+a');
    mkdirSync(path.dirname(request), { recursive: true });
    // A request the mesh is still staging is not one yet: neither acted on nor reported.
    writeFileSync(`${request}.next`, secretDigest(fresh));
    await service.runCycle();
    expect(lines.filter((l) => l.includes('end-sessions'))).toEqual([]);
    rmSync(`${request}.next`);
    writeFileSync(request, secretDigest(fresh));
    await service.runCycle();
    expect(db.openSessions.get('web1_app_a')).toHaveLength(2);
    expect(existsSync(request)).toBe(true);
    expect(receiptOf('web1_app+a')?.ended_sessions).toBeUndefined();

    deliver('web1_app+a', fresh);
    await service.runCycle();
    expect(db.openSessions.has('web1_app_a')).toBe(false);
    expect(receiptOf('web1_app+a')).toMatchObject({
      digest: secretDigest(fresh),
      ended_sessions: 2,
      sessions: [],
    });
    expect(existsSync(request)).toBe(false);
    expect(lines.some((l) => l.startsWith('web1_app_a: ended 2 sessions on request'))).toBe(true);
  });
});

describe("a login's receipt", () => {
  it('reads back its login, sessions and ended count; a session of an unknown shape is dropped, at most 20 are kept, and an old receipt reads without them', () => {
    const digest = secretDigest('x');
    const sessions = Array.from({ length: 25 }, (_, i) => ({
      pid: 100 + i,
      application_name: 'web1',
      client_addr: i === 0 ? null : '10.0.0.5',
      backend_start: '2026-12-01T00:00:00.000Z',
    }));
    const text = formatReceipt({
      role: 'web1_app+a',
      digest,
      applied_at: 't',
      login: 'web1_app_a',
      sessions,
      ended_sessions: 3,
    });
    const read = parseReceipt(text)!;
    expect(read).toMatchObject({ role: 'web1_app+a', login: 'web1_app_a', ended_sessions: 3 });
    expect(read.sessions).toEqual(sessions.slice(0, 20));

    const odd = parseReceipt(
      JSON.stringify({
        role: 'web1_app+a',
        digest,
        applied_at: 't',
        sessions: [{ pid: 'x' }, sessions[1]],
        ended_sessions: -1,
      }),
    )!;
    expect(odd.sessions).toEqual([sessions[1]]);
    expect(odd.ended_sessions).toBeUndefined();
    expect(parseReceipt(JSON.stringify({ role: 'web1_app', digest, applied_at: 't' }))).toEqual({
      role: 'web1_app',
      digest,
      applied_at: 't',
    });
  });
});

describe('a connection kept open (--watch) and a login refused since', () => {
  it('a fresh login refused while the kept session still applies is reported (heartbeat: refused); accepted again, it clears', async () => {
    const db = new FakeDatabase();
    let now = Date.parse('2026-12-01T12:00:00Z');
    let refuse = false;
    const provisioner = new PostgresProvisioner({
      meshDir: temp.dir,
      provider: 'pg-main',
      connect: async () => {
        if (refuse)
          throw new BatonError('failed', {
            what: 'PostgreSQL refused the superuser login for "su" (password authentication failed).',
            reason: 'denied',
          });
        return db.connect();
      },
      log: (line) => lines.push(line),
      clock: () => new Date(now),
    });
    provisioner.keepConnectionOpen();
    deliver('app', secret());
    expect((await provisioner.runCycle()).applied).toHaveLength(1);
    // The cycle after an application logs in afresh (the role applied may be its own login).
    refuse = true;
    now += 1_000;
    const refused = await provisioner.runCycle();
    expect(refused.databaseDown).toBe(false);
    expect(refused.loginRefused?.reason).toBe('denied');
    expect(loginOf(refused)).toEqual({ login: 'refused', reason: expect.stringContaining('still applies') });
    expect(lines.filter((l) => l.startsWith('a new login is refused'))).toHaveLength(1);
    // Within LOGIN_RECHECK_MS no handshake is tried: the verdict stands, on the one connection.
    now += 5_000;
    expect((await provisioner.runCycle()).loginRefused).toBeDefined();
    expect(db.connections).toBe(1);
    refuse = false;
    now += 10_000;
    const accepted = await provisioner.runCycle();
    expect(accepted.loginRefused).toBeUndefined();
    expect(loginOf(accepted)).toEqual({ login: 'ok' });
    expect(db.connections).toBe(2);
    expect(db.closes).toBe(1); // the fresh one, closed at once; the kept one stays open
    expect(lines).toContain('a new login is accepted again');
    await provisioner.closeConnection();
  });

  it("the roles' fingerprint moved (a password changed by hand): a fresh login at once, not LOGIN_RECHECK_MS later", async () => {
    const db = new FakeDatabase();
    let now = Date.parse('2026-12-01T12:00:00Z');
    let fingerprint = 'f1';
    let refuse = false;
    const provisioner = new PostgresProvisioner({
      meshDir: temp.dir,
      provider: 'pg-main',
      connect: async () => {
        if (refuse)
          throw new BatonError('failed', {
            what: 'PostgreSQL refused the superuser login for "su" (password authentication failed).',
            reason: 'denied',
          });
        return { ...(await db.connect()), fingerprint: async () => fingerprint };
      },
      log: (line) => lines.push(line),
      clock: () => new Date(now),
    });
    provisioner.keepConnectionOpen();
    deliver('app', secret());
    expect((await provisioner.runCycle()).applied).toHaveLength(1);
    now += 1_000;
    await provisioner.runCycle(); // the fresh login after an application
    now += 1_000;
    await provisioner.runCycle();
    expect(db.connections).toBe(2); // nothing moved, within 10 s: no handshake
    // ALTER ROLE … PASSWORD by hand, 1 s later: the very next cycle tries and is refused.
    refuse = true;
    fingerprint = 'f2';
    now += 1_000;
    const refused = await provisioner.runCycle();
    expect(refused.loginRefused?.reason).toBe('denied');
    expect(loginOf(refused)?.login).toBe('refused');
    // Restored (the fingerprint moves again): accepted on the next cycle, still within 10 s.
    refuse = false;
    fingerprint = 'f3';
    now += 1_000;
    const accepted = await provisioner.runCycle();
    expect(accepted.loginRefused).toBeUndefined();
    expect(lines).toContain('a new login is accepted again');
    await provisioner.closeConnection();
  });
});
