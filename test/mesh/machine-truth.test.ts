/**
 * A rotation's truth lives on the machines (docs/mesh-rotation.md, "The records on the
 * machines" and "The provider lock"): the built CLI against real directories, two controllers
 * with two state dirs, rotations killed at the worst moments, and the operator following what
 * `mesh status --json` suggests, pasted as printed, until it says exit 0.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import { JOURNAL_FILE, readJournal } from '../../src/mesh/journal.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { BoundTransport, TransportFor } from '../../src/mesh/transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir, rotationRecords, snapshotDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { dyingAfterConsumerCommit, dyingAfterProviderCommit, rotationDyingIn } from './dying-baton.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { startReceiptWriter } from './receipt-writer.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');
const PAIR = 'pg-main:web1-app';
const PAIRS = ['web1', 'web2'] as const;

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-machine-truth-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => tmp.cleanup());

type Run = { code: number | null; stdout: string; stderr: string };

/** The built CLI with the given words after `baton` (global flags included), run from the test's dir. */
function batonWords(words: readonly string[]): Promise<Run> {
  const child = spawn(process.execPath, [BATON, ...words], {
    cwd: tmp.dir,
    env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

const baton = (stateDir: string, ...args: string[]) => batonWords(['--state-dir', stateDir, ...args]);
const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);
const providerEnd = () => live('db1', 'provides/pg-main/web1_app');
const consumerEnd = () => live('web1', 'consumes/pg-main/web1_app');

function seedOld(): void {
  for (const m of ['web1', 'web2'])
    for (const file of [live(m, `consumes/pg-main/${m}_app`), live('db1', `provides/pg-main/${m}_app`)]) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `old-${m}`, { mode: 0o600 });
    }
}

/** Both ends of the pair hold one password and nothing is staged: a consumer logs in. */
function expectPairWhole(): void {
  expect(readFileSync(consumerEnd(), 'utf8')).toBe(readFileSync(providerEnd(), 'utf8'));
  expect(existsSync(`${providerEnd()}.next`)).toBe(false);
  expect(existsSync(`${consumerEnd()}.next`)).toBe(false);
}

async function waitUntil(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Follows `mesh status --json`'s first next step, pasted exactly as printed (its `command`),
 * until status exits 0; returns what was run. A suggestion that is refused fails the test.
 */
async function followStatus(stateDir: string, limit = 6): Promise<string[]> {
  const ran: string[] = [];
  for (let i = 0; i < limit; i++) {
    const status = await baton(stateDir, 'mesh', 'status', '--inventory', inventory, '--json');
    if (status.code === 0) return ran;
    const doc = JSON.parse(status.stdout) as {
      pairs: { consumer: string; state: string; next_steps: { command: string }[] }[];
    };
    const step = doc.pairs.find((p) => p.next_steps.length > 0)?.next_steps[0];
    if (!step) throw new Error(`status exits ${status.code} and suggests nothing: ${status.stdout}`);
    const words = step.command.split(' ').slice(1);
    const r = await batonWords(words);
    ran.push(`${step.command} → ${r.code}`);
    if (r.code !== 0 && r.code !== 3) throw new Error(`${step.command} exited ${r.code}: ${r.stderr}`);
  }
  throw new Error(`status never reached exit 0: ${ran.join('; ')}`);
}

/** A transport under which baton "dies" (every call hangs) once the provider end is staged, before the consumer's is. */
function dyingDuringPrepare(transportFor: TransportFor): { transportFor: TransportFor; dead: Promise<void> } {
  let dead = false;
  let died: () => void = () => undefined;
  const deadPromise = new Promise<void>((resolve) => (died = resolve));
  const never = new Promise<never>(() => undefined);
  const wrapped = new Map<string, BoundTransport>();
  return {
    dead: deadPromise,
    transportFor: (machine) => {
      let t = wrapped.get(machine);
      if (!t) {
        const inner = transportFor(machine);
        t = new Proxy(inner, {
          get(target, key, receiver) {
            const value = Reflect.get(target, key, receiver) as unknown;
            if (typeof value !== 'function') return value;
            return async (...args: unknown[]) => {
              if (dead) return never;
              // The consumer's stage, which carries its record (writeRecordsThen).
              if ((key === 'stage' || key === 'writeRecordsThen') && machine !== 'db1') {
                dead = true;
                died();
                return never;
              }
              return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            };
          },
        });
        wrapped.set(machine, t);
      }
      return t;
    },
  };
}

describe('a rotation whose truth lives on the machines (the built CLI, local transport)', () => {
  it('two state dirs rotating one pair at once, 6 races: in every race one is exit 5 naming the holder, and the pair ends whole', async () => {
    seedOld();
    const outcomes: string[] = [];
    for (let race = 0; race < 6; race++) {
      // The provisioner answers only once one of the two has ended: the refused one ends at once,
      // so the other is still waiting for its receipt, holding the lock. Without a lock neither
      // ends before the fallback, and both rotate (the test then fails).
      let writer: { stop(): void } | undefined;
      const answer = () => (writer ??= startReceiptWriter(live('db1', 'provides/pg-main')));
      const fallback = setTimeout(answer, 8000);
      const args = ['mesh', 'rotate', '--pair', PAIR, '--inventory', inventory, '--yes', '--wait', '20'];
      const runs: [Promise<Run>, Promise<Run>] = [
        baton(path.join(tmp.dir, 'state-a'), ...args),
        baton(path.join(tmp.dir, 'state-b'), ...args),
      ];
      void Promise.race(runs).then(answer);
      const [a, b] = await Promise.all(runs);
      clearTimeout(fallback);
      writer?.stop();
      const codes = [a.code, b.code].sort();
      outcomes.push(codes.join('/'));
      expect(codes).toEqual([0, 5]);
      const refused = a.code === 5 ? a : b;
      expect(refused.stderr).toMatch(/mesh rotate --pair pg-main:web1-app \(pid \d+ on \S+ since \S+\)/);
      expect(refused.stderr).toContain('Nothing was generated and nothing was sent.');
      expectPairWhole();
    }
    console.log(`two controllers, 6 races: ${outcomes.join(', ')} (exit codes; one 5 in each)`);
  }, 120_000);

  it('rotation X stalls and rolls back, rotation Y is killed between its commits: mesh rollback X leaves Y untouched, and status --json, followed as printed, ends at exit 0', async () => {
    seedOld();
    const stateDir = path.join(tmp.dir, 'state');
    // X: no provisioner answers within its wait, so it rolls back (exit 3).
    const x = await baton(
      stateDir,
      'mesh',
      'rotate',
      '--pair',
      PAIR,
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '0.3',
    );
    expect(x.code).toBe(3);
    const idX = /Rotation (\S+):/.exec(x.stdout)![1]!;
    // Y: the provisioner applies, and baton dies right after the provider commit.
    const writer = startReceiptWriter(live('db1', 'provides/pg-main'));
    const inv = loadInventory(inventory);
    const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(dying, {
      id: 'rot-y',
      plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
      inventory: inv,
      journalDir: stateDir,
    });
    await dying.dead;
    await waitUntil(async () => (await readJournal(stateDir, 'rot-y')).some((r) => r.phase === 'committed'));
    writer.stop();
    const machines = path.join(tmp.dir, 'machines');
    const before = snapshotDir(machines);
    // Pasted from scrollback: the older id. Refused, naming the unfinished one; nothing touched.
    const rollbackX = await baton(
      stateDir,
      'mesh',
      'rollback',
      idX,
      '--inventory',
      inventory,
      '--wait',
      '0.2',
    );
    expect(rollbackX.code).toBe(2);
    expect(rollbackX.stderr).toContain(`${PAIR} belongs to rotation rot-y, which has not finished`);
    expect(rollbackX.stderr).toMatch(/mesh resume rot-y/);
    expect(snapshotDir(machines)).toEqual(before);
    expect(existsSync(`${consumerEnd()}.next`)).toBe(true);
    // The provider's intent names Y, committing.
    const intent = Object.values(rotationRecords(machines)).find(
      (r) => r.pair === PAIR && r.end === 'provides',
    )!;
    expect([intent.rotation, intent.phase]).toEqual(['rot-y', 'committing']);
    // The operator now follows status, as printed.
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const ran = await followStatus(stateDir);
      expect(ran.length).toBeGreaterThan(0);
      expect(ran[0]).toMatch(/mesh resume rot-y/);
      console.log(`followed status: ${ran.join(' ; ')}`);
    } finally {
      provisioner.stop();
    }
    expectPairWhole();
  }, 60_000);

  it('mesh rollback under SIGHUP and a double Ctrl-C, while it waits for the provisioner: it goes on, says so, and the pair ends whole', async () => {
    seedOld();
    const stateDir = path.join(tmp.dir, 'state');
    // Y is killed between its commits with no provisioner running: the provider is on the new
    // password, no receipt names the old one, so taking Y back waits for the provisioner.
    const inv = loadInventory(inventory);
    const dying = dyingAfterProviderCommit(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(dying, {
      id: 'rot-y',
      plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
      inventory: inv,
      journalDir: stateDir,
    });
    await dying.dead;
    await waitUntil(async () => (await readJournal(stateDir, 'rot-y')).some((r) => r.phase === 'committed'));
    const child = spawn(
      process.execPath,
      [BATON, '--state-dir', stateDir, 'mesh', 'rollback', 'rot-y', '--inventory', inventory, '--wait', '20'],
      {
        cwd: tmp.dir,
        env: { ...process.env, NO_COLOR: '1', BATON_CONFIG: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on('close', (code, signal) => resolve({ code, signal })),
    );
    // Signalled only once it holds the provider's lock (it is taking Y back), never before its handlers are on.
    const holder = path.join(path.dirname(providerEnd()), '.baton.lock.holder');
    await waitUntil(() => existsSync(holder) && readFileSync(holder, 'utf8').includes('mesh rollback rot-y'));
    let told = 0;
    for (const signal of ['SIGHUP', 'SIGINT', 'SIGINT'] as const) {
      child.kill(signal);
      told += 1;
      await waitUntil(
        () =>
          stderr.split('goes on to the end').length > told ||
          child.exitCode !== null ||
          child.signalCode !== null,
      );
    }
    expect(child.signalCode).toBeNull();
    // The provisioner starts once the roll-back has put the old password back (each of its
    // steps is an agent run, slower than a file call under load): it confirms the old one.
    await waitUntil(() => readFileSync(providerEnd(), 'utf8') === 'old-web1' || child.exitCode !== null);
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const { code, signal } = await ended;
      expect(signal).toBeNull();
      expect([0, 3]).toContain(code);
      expect(stderr).toContain('SIGINT: mesh rollback rot-y goes on to the end');
      expect(await followStatus(stateDir)).toEqual([]);
    } finally {
      provisioner.stop();
    }
    expectPairWhole();
    expect(readFileSync(consumerEnd(), 'utf8')).toBe('old-web1');
  }, 60_000);

  /**
   * Rotation rot-z of both pairs, killed in the gap the consumer renames now run in: one
   * consumer end renamed after its receipt, the other still staged, and the journal's
   * 'committed' record not on disk (the renames no longer wait for its fsync; a kill during
   * that write leaves the journal at 'prepared'). The machines hold the truth: both providers'
   * intents say `committing`. Returns the pair that was renamed and the one that was not.
   */
  async function killedBeforeCommittedRecord(stateDir: string): Promise<{ moved: string; staged: string }> {
    seedOld();
    const writer = startReceiptWriter(live('db1', 'provides/pg-main'));
    const inv = loadInventory(inventory);
    const dying = dyingAfterConsumerCommit(transportsFor(inv.machines, TEST_BOUNDS), 'after-consumer-commit');
    void runRotationPlain({
      id: 'rot-z',
      plan: planRotation(inv, { by: 'provider', name: 'pg-main' }),
      yes: true,
      write: () => undefined,
      deps: {
        transportFor: dying.transportFor,
        journalDir: stateDir,
        operator: 't',
        resolve: { concurrency: 1 },
        // One rename at a time: the second consumer's waits for the first, which is where baton dies.
        concurrency: 1,
        waitMs: 60_000,
        pollMs: 10,
        mesh: meshIdentity(inv),
      },
    });
    await dying.dead;
    writer.stop();
    await waitUntil(async () => (await readJournal(stateDir, 'rot-z')).some((r) => r.phase === 'committed'));
    const journal = path.join(stateDir, JOURNAL_FILE);
    const lines = readFileSync(journal, 'utf8').trim().split('\n');
    writeFileSync(
      journal,
      lines
        .filter((l) => {
          const r = JSON.parse(l) as { id: string; phase: string };
          return !(r.id === 'rot-z' && r.phase === 'committed');
        })
        .map((l) => `${l}\n`)
        .join(''),
    );
    expect((await readJournal(stateDir, 'rot-z')).map((r) => r.phase)).toEqual(['resolved', 'prepared']);
    const intents = Object.values(rotationRecords(path.join(tmp.dir, 'machines'))).filter(
      (r) => r.end === 'provides',
    );
    expect(intents.map((r) => [r.rotation, r.phase])).toEqual([
      ['rot-z', 'committing'],
      ['rot-z', 'committing'],
    ]);
    const movedNow = PAIRS.filter(
      (m) =>
        readFileSync(live(m, `consumes/pg-main/${m}_app`), 'utf8') ===
        readFileSync(live('db1', `provides/pg-main/${m}_app`), 'utf8'),
    );
    expect(movedNow).toHaveLength(1);
    const moved = movedNow[0]!;
    const staged = PAIRS.find((m) => m !== moved)!;
    expect(existsSync(live(staged, `consumes/pg-main/${staged}_app.next`))).toBe(true);
    return { moved, staged };
  }

  it('baton killed after a consumer rename, before the committed record reached the disk: status changes nothing and names the resume; followed as printed it ends at exit 0 with both pairs whole', async () => {
    const stateDir = path.join(tmp.dir, 'state');
    const { moved, staged } = await killedBeforeCommittedRecord(stateDir);
    const machines = path.join(tmp.dir, 'machines');
    const before = snapshotDir(machines);
    const status = await baton(stateDir, 'mesh', 'status', '--inventory', inventory, '--json');
    expect(status.code).toBe(3);
    expect(snapshotDir(machines)).toEqual(before);
    const pairs = (
      JSON.parse(status.stdout) as {
        pairs: {
          consumer: string;
          state: string;
          resume_id: string | null;
          next_steps: { command: string }[];
        }[];
      }
    ).pairs;
    const movedPair = pairs.find((p) => p.consumer === `${moved}-app`)!;
    const stagedPair = pairs.find((p) => p.consumer === `${staged}-app`)!;
    // The renamed pair is finished on the machines, whatever the journal's last word.
    expect([movedPair.state, movedPair.resume_id, movedPair.next_steps]).toEqual(['applied', null, []]);
    expect(stagedPair.resume_id).toBe('rot-z');
    expect(stagedPair.next_steps.map((s) => s.command)).toContainEqual(
      expect.stringMatching(/mesh resume rot-z/),
    );
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const ran = await followStatus(stateDir);
      expect(ran).toEqual([expect.stringMatching(/mesh resume rot-z .*→ 0$/)]);
    } finally {
      provisioner.stop();
    }
    for (const m of PAIRS) {
      expect(readFileSync(live(m, `consumes/pg-main/${m}_app`), 'utf8')).toBe(
        readFileSync(live('db1', `provides/pg-main/${m}_app`), 'utf8'),
      );
      expect(readFileSync(live(m, `consumes/pg-main/${m}_app`), 'utf8')).not.toBe(`old-${m}`);
    }
    expect(
      Object.keys(snapshotDir(machines)).filter((f) => f.endsWith('.next') || f.endsWith('.prev')),
    ).toEqual([]);
  }, 60_000);

  it('the same kill before the provisioner applied the other pair, taken back with mesh rollback: the renamed pair stays finished, the other is back on its old password and the old receipt is recognised, though no committed record named the kept file', async () => {
    const stateDir = path.join(tmp.dir, 'state');
    const { moved, staged } = await killedBeforeCommittedRecord(stateDir);
    // The provisioner had not applied the staged pair yet: its receipt still shows the old password.
    const receipt = live('db1', `provides/pg-main/${RECEIPTS_DIR}/${staged}_app`);
    writeFileSync(
      receipt,
      formatReceipt({
        role: `${staged}_app`,
        digest: secretDigest(Buffer.from(`old-${staged}`)),
        applied_at: new Date().toISOString(),
      }),
    );
    const rollback = baton(stateDir, 'mesh', 'rollback', 'rot-z', '--inventory', inventory, '--wait', '10');
    // It follows the files: once the kept file is live again, the old password gets its receipt.
    await waitUntil(
      () => readFileSync(live('db1', `provides/pg-main/${staged}_app`), 'utf8') === `old-${staged}`,
    );
    const provisioner = startReceiptWriter(live('db1', 'provides/pg-main'));
    try {
      const r = await rollback;
      expect([0, 3]).toContain(r.code);
      const last = (await readJournal(stateDir, 'rot-z')).at(-1)!;
      const results = Object.fromEntries((last.rolled_back ?? []).map((x) => [x.pair, x]));
      expect(results[`pg-main:${moved}-app`]).toMatchObject({ result: 'finished' });
      expect(results[`pg-main:${staged}-app`]).toMatchObject({ result: 'rolled-back', receipt: 'old' });
      expect(await followStatus(stateDir)).toEqual([]);
    } finally {
      provisioner.stop();
    }
    expect(readFileSync(live(staged, `consumes/pg-main/${staged}_app`), 'utf8')).toBe(`old-${staged}`);
    expect(existsSync(live(staged, `consumes/pg-main/${staged}_app.next`))).toBe(false);
    expect(readFileSync(live(moved, `consumes/pg-main/${moved}_app`), 'utf8')).toBe(
      readFileSync(live('db1', `provides/pg-main/${moved}_app`), 'utf8'),
    );
    expect(readFileSync(live(moved, `consumes/pg-main/${moved}_app`), 'utf8')).not.toBe(`old-${moved}`);
  }, 60_000);

  it('baton killed during prepare: the leftover names that rotation (not an older finished one), rotate refuses naming it, and its rollback takes it back', async () => {
    seedOld();
    const stateDir = path.join(tmp.dir, 'state');
    // An older rotation that finished.
    const writer = startReceiptWriter(live('db1', 'provides/pg-main'));
    const first = await baton(
      stateDir,
      'mesh',
      'rotate',
      '--pair',
      PAIR,
      '--inventory',
      inventory,
      '--yes',
      '--wait',
      '5',
    );
    writer.stop();
    expect(first.code).toBe(0);
    const inv = loadInventory(inventory);
    const dying = dyingDuringPrepare(transportsFor(inv.machines, TEST_BOUNDS));
    rotationDyingIn(
      dying,
      {
        id: 'rot-p',
        plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
        inventory: inv,
        journalDir: stateDir,
      },
      { waitMs: 5_000 },
    );
    await dying.dead;
    await waitUntil(() => existsSync(`${providerEnd()}.next`) || existsSync(`${consumerEnd()}.next`));
    const status = await baton(stateDir, 'mesh', 'status', '--inventory', inventory, '--json');
    expect(status.code).toBe(3);
    const pair = (
      JSON.parse(status.stdout) as {
        pairs: { consumer: string; resume_id: string | null; next_steps: { command: string }[] }[];
      }
    ).pairs.find((p) => p.consumer === 'web1-app')!;
    expect(pair.resume_id).toBe('rot-p');
    // Only the way out that works now: resume would be refused (nothing of it was prepared whole).
    expect(pair.next_steps.map((s) => s.command)).toEqual([expect.stringMatching(/mesh rollback rot-p/)]);
    const rotate = await baton(stateDir, 'mesh', 'rotate', '--pair', PAIR, '--inventory', inventory, '--yes');
    expect(rotate.code).toBe(3);
    expect(rotate.stderr).toContain('rotation rot-p');
    const ran = await followStatus(stateDir);
    expect(ran).toEqual([expect.stringMatching(/mesh rollback rot-p .*→ 0$/)]);
    expectPairWhole();
  }, 60_000);
});
