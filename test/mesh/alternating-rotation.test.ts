import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import type { RotationState } from '../../src/app/rotation-flow.js';
import { notConfirmedText, summaryLines, windowBadge } from '../../src/app/rotation-text.js';
import { rotationRunner, type RotationDeps } from '../../src/app/rotation-run-effect.js';
import { rotationFlow } from '../../src/app/rotation-flow.js';
import { takeBackStart } from '../../src/app/rotation-recovered.js';
import type { PoolerKeeper } from '../../src/mesh/pooler-remote.js';
import { conninfoLogin, formatConsumerConninfo, parseConninfo } from '../../src/mesh/alternating.js';
import { formatReceipt, parseReceipt, secretDigest } from '../../src/mesh/digest.js';
import { findMachine, parseInventory, type Inventory } from '../../src/mesh/inventory.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import { appendJournal, JOURNAL_FILE, readJournal } from '../../src/mesh/journal.js';
import { inspectPlan, unknownLoginsRefusal } from '../../src/mesh/leftovers.js';
import { previousInJournal, rollBackPairs } from '../../src/mesh/rollback.js';
import { appliedInJournal, resumablePlan } from '../../src/mesh/resume.js';
import { resumeRotation } from '../../src/operations/resume.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { Secret } from '../../src/mesh/secret.js';
import { seedPair } from '../../src/mesh/seed.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { dyingAfterProviderCommit } from './dying-baton.js';
import { fakeMesh, provisionerOn, type FakeMesh } from './fake-transport.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function journalDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-alt-'));
  dirs.push(dir);
  return dir;
}

/** db1 provides pg-main; web1-app consumes it with `credential` (alternating unless told), web2-app single. */
function inventory(web1: 'single' | 'alternating' = 'alternating'): Inventory {
  return parseInventory(
    [
      'mesh_dir: /m',
      'machines:',
      '  - { name: db1, address: db1.internal, transport: ssh }',
      '  - { name: web1, address: web1.internal, transport: ssh }',
      '  - { name: web2, address: web2.internal, transport: ssh }',
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      'consumers:',
      `  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main], credential: ${web1} }`,
      '  - { name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
      '',
    ].join('\n'),
    '/m/mesh.yaml',
  );
}

const P = '/m/provides/pg-main';
const C1 = '/m/consumes/pg-main/web1_app';
const machines = ['db1', 'web1', 'web2'];

function deps(transportFor: TransportFor, dir: string, waitMs: number): RotationDeps {
  return {
    transportFor,
    journalDir: dir,
    operator: 'tester',
    resolve: { concurrency: 3 },
    concurrency: 3,
    waitMs,
    pollMs: 5,
  };
}

/** What `mesh rotate` does before the flow: read the ends (one batch per machine), fix the logins, refuse leftovers. */
async function inspect(
  inv: Inventory,
  selector: Parameters<typeof planRotation>[1],
  mesh: FakeMesh,
  dir: string,
): Promise<RotationPlan> {
  const records = await readJournalAll(dir);
  const { plan, leftovers } = await inspectPlan(
    planRotation(inv, selector),
    mesh.transportFor,
    journalHistory(records),
    2,
    (name) => findMachine(inv, name),
  );
  expect(leftovers).toEqual([]);
  return plan;
}

async function readJournalAll(dir: string) {
  try {
    return readFileSync(path.join(dir, JOURNAL_FILE), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

async function rotate(plan: RotationPlan, transportFor: TransportFor, dir: string, id: string, waitMs = 500) {
  const lines: string[] = [];
  const result = await runRotationPlain({
    id,
    plan,
    deps: deps(transportFor, dir, waitMs),
    yes: true,
    write: (l) => lines.push(l),
  });
  return { ...result, text: lines.join('\n') };
}

/** The fake mesh for every plan these tests make (its strictness allows each pair's provider files in either mode). */
function mesh(): FakeMesh {
  const m = fakeMesh(machines, planRotation(inventory(), { by: 'provider', name: 'pg-main' }));
  provisionerOn(m.machines.db1!);
  return m;
}

const files = (m: FakeMesh, machine: string) => m.machines[machine]!.files;

describe('an alternating rotation', () => {
  it("first rotation: slot a; the provider end is the raw secret, the consumer end names the login with it; each end checked by its own digest; the receipt awaited is the secret's", async () => {
    const m = mesh();
    const dir = journalDir();
    const plan = await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(plan.pairs[0]!.login).toEqual({ slot: 'a', role: 'web1_app_a' });
    expect(plan.pairs[0]!.providerPath).toBe(`${P}/web1_app+a`);
    expect(plan.pairs[0]!.receiptPath).toBe(`${P}/.applied/web1_app+a`);
    expect(plan.pairs[0]!.consumerPath).toBe(C1);
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r1');
    expect(code).toBe(0);
    const secret = files(m, 'db1').get(`${P}/web1_app+a`)!;
    expect(files(m, 'web1').get(C1)).toBe(formatConsumerConninfo('web1_app_a', secret));
    expect(parseReceipt(files(m, 'db1').get(`${P}/.applied/web1_app+a`)!)?.digest).toBe(secretDigest(secret));
    expect(text).toContain('window pg-main:web1-app: none (alternating): web1-app moves to web1_app_a');
    expect(text).toContain('No window for 1 alternating pair');
    const prepared = (await readJournal(dir, 'r1')).find((r) => r.phase === 'prepared')!;
    expect(prepared.pairs[0]).toMatchObject({
      credential: 'alternating',
      login: 'web1_app_a',
      digest: secretDigest(secret),
      consumer_digest: secretDigest(files(m, 'web1').get(C1)!),
    });
    expect(prepared.pairs[0]!.left).toBeUndefined();
    expect(readFileSync(path.join(dir, JOURNAL_FILE), 'utf8')).not.toContain(secret);
  });

  it('second rotation: the consumer on web1_app_a moves to b; a keeps its file (and password) untouched; the journal says which was left', async () => {
    const m = mesh();
    const dir = journalDir();
    await rotate(
      await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir),
      m.transportFor,
      dir,
      'r1',
    );
    const a = files(m, 'db1').get(`${P}/web1_app+a`)!;
    const plan = await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(plan.pairs[0]!.login).toEqual({
      slot: 'b',
      role: 'web1_app_b',
      left: {
        slot: 'a',
        role: 'web1_app_a',
        providerPath: `${P}/web1_app+a`,
        receiptPath: `${P}/.applied/web1_app+a`,
      },
    });
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r2');
    expect(code).toBe(0);
    expect(text).toContain('none (alternating): web1-app moves from web1_app_a to web1_app_b');
    expect(text).toContain('web1_app_a, which it leaves, keeps working until the next rotation');
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe(a);
    expect(conninfoLogin(files(m, 'web1').get(C1)!)).toBe('web1_app_b');
    expect(parseConninfo(files(m, 'web1').get(C1)!)?.password).toBe(files(m, 'db1').get(`${P}/web1_app+b`));
    expect((await readJournal(dir, 'r2')).find((r) => r.phase === 'applied')!.pairs[0]).toMatchObject({
      login: 'web1_app_b',
      left: 'web1_app_a',
    });
    // A third goes back to a.
    expect(
      (await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir)).pairs[0]!.login?.slot,
    ).toBe('a');
  });

  it('a single pair in the same rotation is delivered exactly as before: the same raw secret on both ends, its window stated', async () => {
    const m = mesh();
    const dir = journalDir();
    const plan = await inspect(inventory(), { by: 'provider', name: 'pg-main' }, m, dir);
    const single = plan.pairs.find((p) => p.consumer === 'web2-app')!;
    expect(single.login).toBeUndefined();
    expect(single.retire).toBeUndefined();
    expect(single.providerPath).toBe(`${P}/web2_app`);
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r1');
    expect(code).toBe(0);
    expect(files(m, 'web2').get('/m/consumes/pg-main/web2_app')).toBe(files(m, 'db1').get(`${P}/web2_app`));
    expect(text).toContain('window pg-main:web2-app: from pg-main applying the new password for web2_app');
    const journal = (await readJournal(dir, 'r1'))
      .find((r) => r.phase === 'applied')!
      .pairs.find((p) => p.consumer === 'web2-app')!;
    expect(Object.keys(journal)).not.toContain('credential');
    expect(Object.keys(journal)).not.toContain('consumer_digest');
  });
});

describe('an alternating pair that does not finish leaves the consumer on a login that works', () => {
  async function onA() {
    const m = mesh();
    const dir = journalDir();
    await rotate(
      await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir),
      m.transportFor,
      dir,
      'r1',
    );
    return { m, dir, a: files(m, 'db1').get(`${P}/web1_app+a`)!, consumer: files(m, 'web1').get(C1)! };
  }

  it('a stall (no receipt in time): rolled back, the consumer file still names web1_app_a, whose provider file is unchanged; the summary says it works', async () => {
    const { m, dir, a, consumer } = await onA();
    m.machines.db1!.afterCommit = undefined; // the provisioner stopped
    const plan = await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir);
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r2', 50);
    expect(code).toBe(3);
    expect(files(m, 'web1').get(C1)).toBe(consumer);
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe(a);
    expect(files(m, 'db1').has(`${P}/web1_app+b`)).toBe(false);
    expect([...files(m, 'web1').keys()].filter((k) => k.endsWith('.next'))).toEqual([]);
    expect(text).toContain('web1-app stayed on its live login web1_app_a, which works');
  });

  /** Rotation r2 of web1-app, with baton dead right after its provider commit (journal at "committed"). */
  const killedBetweenCommits = async (m: ReturnType<typeof mesh>, dir: string): Promise<void> => {
    const plan = await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir);
    const dying = dyingAfterProviderCommit(m.transportFor);
    void rotate(plan, dying.transportFor, dir, 'r2', 1000);
    await dying.dead;
    await vi.waitFor(
      async () => expect((await readJournal(dir, 'r2')).map((r) => r.phase)).toContain('committed'),
      { timeout: 10_000 },
    );
  };

  it('baton killed between the commits: the consumer still names web1_app_a (unchanged); mesh resume from the journal moves it to b', async () => {
    const { m, dir, a, consumer } = await onA();
    await killedBetweenCommits(m, dir);
    expect(files(m, 'web1').get(C1)).toBe(consumer);
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe(a);
    const records = await readJournal(dir, 'r2');
    const result = await resumeRotation({
      id: 'r2',
      records,
      inventory: inventory(),
      transportFor: m.transportFor,
      concurrency: 2,
      waitMs: 500,
      pollMs: 5,
      journalDir: dir,
      operator: 'test',
    });
    expect(result.applied).toEqual(['pg-main:web1-app']);
    expect(result.plan.pairs[0]!.credential).toBe('alternating');
    expect(result.plan.pairs[0]!.login?.left?.role).toBe('web1_app_a');
    expect((await readJournal(dir, 'r2')).at(-1)!.phase).toBe('resumed');
    expect(conninfoLogin(files(m, 'web1').get(C1)!)).toBe('web1_app_b');
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe(a);
  });

  it('baton killed between the commits, then mesh rollback from the journal: b back as before, the consumer still on a', async () => {
    const { m, dir, a, consumer } = await onA();
    m.machines.db1!.afterCommit = undefined;
    await killedBetweenCommits(m, dir);
    const records = await readJournal(dir, 'r2');
    const { pairs, digests } = resumablePlan('r2', records, inventory(), dir);
    expect(pairs[0]!.providerPath).toBe(`${P}/web1_app+b`);
    const results = await rollBackPairs(pairs, digests, previousInJournal(records), m.transportFor, {
      concurrency: 2,
      waitMs: 0,
      pollMs: 5,
    });
    expect(results[0]).toMatchObject({ result: 'rolled-back' });
    expect(files(m, 'web1').get(C1)).toBe(consumer);
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe(a);
    expect(files(m, 'db1').has(`${P}/web1_app+b`)).toBe(false);
  });

  it('baton killed between the commits of a rotation back onto a, then mesh rollback on the machine: a pooler baton keeps is given back the credential a had before (the line the dead run may have left)', async () => {
    const { m, dir } = await onA();
    await rotate(
      await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir),
      m.transportFor,
      dir,
      'r2',
    );
    const a = files(m, 'db1').get(`${P}/web1_app+a`)!;
    m.machines.db1!.afterCommit = undefined;
    const plan = await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(plan.pairs[0]!.providerPath).toBe(`${P}/web1_app+a`);
    const dying = dyingAfterProviderCommit(m.transportFor);
    void rotate(plan, dying.transportFor, dir, 'r3', 1000);
    await dying.dead;
    await vi.waitFor(
      async () => expect((await readJournal(dir, 'r3')).map((r) => r.phase)).toContain('committed'),
      { timeout: 10_000 },
    );
    const records = await readJournal(dir, 'r3');
    const { pairs, holders, digests } = resumablePlan('r3', records, inventory(), dir);
    expect(previousInJournal(records)['pg-main:web1-app']).toBe(secretDigest(a));
    const given: { role: string; pooler: string | undefined; digest: string }[] = [];
    const keeper: PoolerKeeper = {
      give: (pair, connect, digest) => {
        given.push({ role: pair.role, pooler: connect.pooler, digest });
        return Promise.resolve({ ok: true as const, undo: () => Promise.resolve() });
      },
    };
    const flow = rotationFlow(
      takeBackStart({
        id: 'r3',
        pairs,
        holders,
        selectorText: records.find((r) => r.phase === 'prepared')!.selector,
        digests,
        previous: previousInJournal(records),
        finished: appliedInJournal(records),
        settled: new Set(),
      }),
      rotationRunner({
        ...deps(m.transportFor, dir, 0),
        app: {
          reloadOf: () => undefined,
          connectOf: () => ({ host: '127.0.0.1', port: 6432, database: 'app', pooler: 'bouncer1' }),
          pooler: keeper,
        },
        machineLogins: {
          gate: () => Promise.resolve({ refused: [] }),
          loginFirst: () => Promise.resolve(new Set()),
          records: () => [],
        },
      }),
    );
    const end = await flow.finished();
    expect(end.step).toBe('rolled-back');
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe(a);
    expect(given).toEqual([{ role: pairs[0]!.role, pooler: 'bouncer1', digest: secretDigest(a) }]);
  });

  it('baton killed between the commits, the receipt already new, then mesh rollback: the pair is finished, its .prev removed, and a later rotation of that login is not refused', async () => {
    const { m, dir } = await onA();
    await killedBetweenCommits(m, dir);
    const records = await readJournal(dir, 'r2');
    const { pairs, digests } = resumablePlan('r2', records, inventory(), dir);
    // The provisioner applied b's new secret: taking it back would be pointless, so the pair finishes.
    await vi.waitFor(
      () => expect(files(m, 'db1').get(`${P}/.applied/web1_app+b`)).toContain(digests['pg-main:web1-app']!),
      { timeout: 10_000 },
    );
    const results = await rollBackPairs(pairs, digests, previousInJournal(records), m.transportFor, {
      concurrency: 2,
      waitMs: 0,
      pollMs: 5,
    });
    expect(results[0]).toMatchObject({ result: 'finished' });
    expect(conninfoLogin(files(m, 'web1').get(C1)!)).toBe('web1_app_b');
    expect(files(m, 'db1').has(`${P}/.web1_app+b.prev`)).toBe(false);
    // The record `mesh rollback` appends, closing r2.
    const last = records.find((r) => r.phase === 'prepared')!;
    await appendJournal(dir, {
      ...last,
      at: new Date().toISOString(),
      phase: 'rolled-back',
      applied: ['pg-main:web1-app'],
      rolled_back: [{ pair: 'pg-main:web1-app', result: 'finished' }],
    });
    // Two rotations later the target is b again: no leftover is found on it.
    for (const id of ['r3', 'r4'])
      expect(
        (
          await rotate(
            await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir),
            m.transportFor,
            dir,
            id,
          )
        ).code,
      ).toBe(0);
    expect(conninfoLogin(files(m, 'web1').get(C1)!)).toBe('web1_app_b');
  });
});

describe('the words of a finished rotation', () => {
  it('the status line says window: none (alternating) unless a single pair applied, whose measured window it gives; an unconfirmed alternating pair says its consumer stays on what works', async () => {
    const m = mesh();
    const plan = await inspect(inventory(), { by: 'provider', name: 'pg-main' }, m, journalDir());
    const done = (applied: string[], windows: Record<string, number>) =>
      ({ step: 'done', id: 'r', plan, resolutions: {}, digests: {}, applied, windows }) as unknown as Extract<
        RotationState,
        { step: 'done' }
      >;
    expect(windowBadge(done(['pg-main:web1-app'], { 'pg-main:web1-app': 900 }))).toBe(
      ' · window: none (alternating)',
    );
    expect(
      windowBadge(
        done(['pg-main:web1-app', 'pg-main:web2-app'], { 'pg-main:web1-app': 900, 'pg-main:web2-app': 30 }),
      ),
    ).toBe(' · window ≤ 30 ms');
    const alt = plan.pairs.find((p) => p.consumer === 'web1-app')!;
    const single = plan.pairs.find((p) => p.consumer === 'web2-app')!;
    expect(notConfirmedText(alt)).toBe(
      "pg-main has not confirmed web1_app_a: web1-app's new file is still staged; web1-app kept its current file, which works (pg-main still has its password).",
    );
    const cancelled = { step: 'cancelled', id: 'r', plan, resolutions: {} } as unknown as Extract<
      RotationState,
      { step: 'cancelled' }
    >;
    expect(summaryLines(cancelled)).toEqual([
      'Cancelled before anything was generated. Nothing was sent.',
      '  · pg-main:web1-app: web1-app kept its current file, which works (pg-main still has its password).',
    ]);
    expect(notConfirmedText(single)).toBe(
      "pg-main has not confirmed web2_app: web2-app's file is still staged; its old password still works.",
    );
  });
});

describe('an unknown live login', () => {
  it('a consumer end that cannot be read leaves the login unknown: refused (exit 4 words), naming the pair and machine, nothing written', async () => {
    const m = mesh();
    const inv = inventory();
    m.machines.web1!.unreachable = 'ssh: connect to host web1.internal port 22: Connection timed out';
    const inspected = await inspectPlan(
      planRotation(inv, { by: 'provider', name: 'pg-main' }),
      m.transportFor,
      journalHistory([]),
      2,
      (name) => findMachine(inv, name),
    );
    expect(inspected.unknownLogins).toEqual([
      {
        pair: 'pg-main:web1-app',
        machine: 'web1',
        reason: 'ssh: connect to host web1.internal port 22: Connection timed out',
      },
    ]);
    const refusal = unknownLoginsRefusal(inspected.unknownLogins);
    expect(refusal.code).toBe('gate-closed');
    expect(refusal.what).toContain('pg-main:web1-app');
    expect(refusal.where).toContain(
      'web1 (ssh: connect to host web1.internal port 22: Connection timed out)',
    );
    expect(refusal.changed).toBe('Nothing was generated and nothing was sent.');
    expect(m.writes()).toBe(0);
  });
});

describe('switching a pair', () => {
  it('single → alternating: a rotation to slot a, then the plain provider file and its receipt are removed once the consumer end is live', async () => {
    const m = mesh();
    const dir = journalDir();
    // A single pair, live: the bare secret on both ends, and its receipt.
    files(m, 'db1').set(`${P}/web1_app`, 'old-secret');
    files(m, 'db1').set(
      `${P}/.applied/web1_app`,
      formatReceipt({
        role: 'web1_app',
        digest: secretDigest('old-secret'),
        applied_at: new Date().toISOString(),
      }),
    );
    files(m, 'web1').set(C1, 'old-secret');
    const plan = await inspect(inventory('alternating'), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(plan.pairs[0]!.login).toEqual({ slot: 'a', role: 'web1_app_a' });
    expect(plan.pairs[0]!.retire).toEqual([`${P}/web1_app`]);
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r1');
    expect(code).toBe(0);
    expect(text).toContain("then baton removes web1_app (the single role's file, switched to alternating)");
    expect(text).toContain('switched to alternating');
    expect(conninfoLogin(files(m, 'web1').get(C1)!)).toBe('web1_app_a');
    expect(files(m, 'db1').has(`${P}/web1_app`)).toBe(false);
    expect(files(m, 'db1').has(`${P}/.applied/web1_app`)).toBe(false);
    expect(m.machines.db1!.calls.indexOf('retire')).toBeGreaterThan(m.machines.web1!.calls.indexOf('commit'));
  });

  it('single → alternating that stalls: the plain file stays and the consumer keeps its bare secret, which works', async () => {
    const m = mesh();
    const dir = journalDir();
    files(m, 'db1').set(`${P}/web1_app`, 'old-secret');
    files(m, 'web1').set(C1, 'old-secret');
    m.machines.db1!.afterCommit = undefined;
    const plan = await inspect(inventory('alternating'), { by: 'consumer', name: 'web1-app' }, m, dir);
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r1', 50);
    expect(code).toBe(3);
    expect(files(m, 'db1').get(`${P}/web1_app`)).toBe('old-secret');
    expect(files(m, 'web1').get(C1)).toBe('old-secret');
    expect(m.machines.db1!.calls).not.toContain('retire');
    expect(text).toContain('web1-app kept its current file, which works');
  });

  it('a switch whose removal a crash cut short: the next rotation removes the plain file', async () => {
    const m = mesh();
    const dir = journalDir();
    await rotate(
      await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir),
      m.transportFor,
      dir,
      'r1',
    );
    files(m, 'db1').set(`${P}/web1_app`, 'old-secret'); // left behind
    const plan = await inspect(inventory(), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(plan.pairs[0]!.login?.slot).toBe('b');
    expect(plan.pairs[0]!.retire).toEqual([`${P}/web1_app`]);
    await rotate(plan, m.transportFor, dir, 'r2');
    expect(files(m, 'db1').has(`${P}/web1_app`)).toBe(false);
  });

  it('alternating → single: a single rotation of the role, then both login files go', async () => {
    const m = mesh();
    const dir = journalDir();
    await rotate(
      await inspect(inventory('alternating'), { by: 'consumer', name: 'web1-app' }, m, dir),
      m.transportFor,
      dir,
      'r1',
    );
    await rotate(
      await inspect(inventory('alternating'), { by: 'consumer', name: 'web1-app' }, m, dir),
      m.transportFor,
      dir,
      'r2',
    );
    expect(files(m, 'db1').has(`${P}/web1_app+b`)).toBe(true);
    const plan = await inspect(inventory('single'), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(plan.pairs[0]!.login).toBeUndefined();
    expect(plan.pairs[0]!.providerPath).toBe(`${P}/web1_app`);
    expect(plan.pairs[0]!.retire).toEqual([`${P}/web1_app+a`, `${P}/web1_app+b`]);
    // The consumer keeps its login (still valid) until its file names the role: no window this time.
    expect(plan.pairs[0]!.leaves).toBe('web1_app_b');
    const { code, text } = await rotate(plan, m.transportFor, dir, 'r3');
    expect(code).toBe(0);
    expect(text).toContain(
      'none (switching to one role): web1-app keeps using web1_app_b until its file names web1_app, whose new password pg-main has applied by then',
    );
    expect(text).toContain(
      "then baton removes web1_app+a and web1_app+b (the alternating logins' files, switched to single)",
    );
    expect(text).toContain(
      "pg-main applied web1_app; web1-app's file names it now (no window: it used web1_app_b until then)",
    );
    expect(text).not.toContain('the OLD password could fail');
    // The journal keeps the login left, so a resume of this rotation says the same.
    expect((await readJournal(dir, 'r3')).find((r) => r.phase === 'prepared')!.pairs[0]).toMatchObject({
      left: 'web1_app_b',
      retire: [`${P}/web1_app+a`, `${P}/web1_app+b`],
    });
    // The next rotation of the pair, one role throughout, has its window again.
    const after = await inspect(inventory('single'), { by: 'consumer', name: 'web1-app' }, m, dir);
    expect(after.pairs[0]!.leaves).toBeUndefined();
    expect(after.pairs[0]!.window).toContain('that still use the OLD password fail');
    expect(files(m, 'web1').get(C1)).toBe(files(m, 'db1').get(`${P}/web1_app`));
    for (const f of ['web1_app+a', 'web1_app+b', '.applied/web1_app+a', '.applied/web1_app+b'])
      expect(files(m, 'db1').has(`${P}/${f}`)).toBe(false);
  });
});

describe('mesh seed of an alternating pair', () => {
  it('seeds login a: provider web1_app+a the raw secret, consumer user=web1_app_a with it', async () => {
    const m = mesh();
    const plan = planRotation(inventory(), { by: 'pair', provider: 'pg-main', consumer: 'web1-app' });
    const result = await seedPair(plan, Secret.fromText('seeded-pw'), m.transportFor, { concurrency: 2 });
    expect(files(m, 'db1').get(`${P}/web1_app+a`)).toBe('seeded-pw');
    expect(files(m, 'web1').get(C1)).toBe("user=web1_app_a password='seeded-pw'");
    expect(result).toEqual({
      digest: secretDigest('seeded-pw'),
      consumerDigest: secretDigest("user=web1_app_a password='seeded-pw'"),
    });
  });
});
