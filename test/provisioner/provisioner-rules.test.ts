/**
 * The provisioner's rules against an in-memory database fake (the real PostgreSQL proof is
 * postgres-provisioner.test.ts): what is sent, what is receipted, and what happens when the
 * connection, a statement or the receipt write fails half-way.
 */
import { mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { PostgresProvisioner } from '../../src/provisioner/postgres-provisioner.js';
import { ConnectionLost, type RoleDatabase, type RoleOutcome } from '../../src/provisioner/postgres-roles.js';
import { watchProvisioner } from '../../src/provisioner/watch-provisioner.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { deliverFile, secret } from './delivered-fixture.js';

let temp: { dir: string; cleanup: () => void };
let provides: string;
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
      inspect: async (roles: readonly string[]) => {
        this.inspected.push([...roles]);
        return new Map(roles.filter((r) => this.roles.has(r)).map((r) => [r, { canLogin: !this.nologin.has(r), expired: this.expired.has(r), verifier: this.roles.get(r)! }]));
      },
      close: async () => {
        this.closes += 1;
      },
    };
  };
}

function makeProvisioner(db: FakeDatabase, clock?: () => Date): PostgresProvisioner {
  return new PostgresProvisioner({ meshDir: temp.dir, provider: 'pg-main', connect: db.connect, log: (line) => lines.push(line), ...(clock ? { clock } : {}) });
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
    expect(db.inspected).toEqual([['a', 'b']]);
  });

  it('does not connect at all when nothing was delivered or applied yet', async () => {
    const db = new FakeDatabase();
    db.allowConnect = false;
    const report = await makeProvisioner(db).runCycle();
    expect(report).toMatchObject({ applied: [], failed: [], unchanged: 0, blocked: undefined, databaseDown: false });
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
    expect(report.failed.map((f) => [f.role, f.inFile])).toEqual([['b', false], ['c', false]]);
    expect(report.blocked?.what).toContain('connection was lost');
    expect(db.closes).toBe(1);
    expect([receiptDigest('a'), receiptDigest('b'), receiptDigest('c')]).toEqual([secretDigest(values.a), undefined, undefined]);

    db.onSetPassword = () => undefined;
    const next = await service.runCycle();
    expect(next.applied.map((a) => a.role)).toEqual(['b', 'c']);
    expect(db.calls).toEqual(['a', 'b', 'b', 'c']);
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
    expect(report.failed).toEqual([{ role: 'a', file: path.join(provides, 'a'), reason: 'the database refused it (permission denied to alter role)', inFile: false, scope: 'role' }]);
    expect(lines).toContain('a failed: the database refused it (permission denied to alter role); skipped (retried in 5 s or when its file changes), the other roles go on');
    expect(receiptDigest('a')).toBeUndefined();
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

describe('watchProvisioner', () => {
  it('waits for a provider directory the mesh has not created yet, and applies what arrives in it', async () => {
    const db = new FakeDatabase();
    rmSync(provides, { recursive: true });
    const controller = new AbortController();
    const watching = watchProvisioner(makeProvisioner(db), { intervalMs: 5, signal: controller.signal, log: (line) => lines.push(line) });
    await vi.waitFor(() => expect(lines.some((l) => l.startsWith('nothing to apply yet:') && l.includes(provides))).toBe(true));

    mkdirSync(provides, { recursive: true });
    deliver('late', secret());
    await vi.waitFor(() => expect(db.calls).toEqual(['late']));
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

    const watching = watchProvisioner(throwing, { intervalMs: 1, maxBackoffMs: 4, signal: controller.signal, log: (line) => lines.push(line) });
    await vi.waitFor(() => expect(cycles).toBeGreaterThanOrEqual(3));
    controller.abort();

    await expect(watching).resolves.toBeUndefined();
    expect(lines.slice(0, 2)).toEqual(['cycle failed unexpectedly: boom 1', 'cycle failed unexpectedly: boom 2']);
  });
});
