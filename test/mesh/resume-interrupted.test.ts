/**
 * `mesh resume <id>` cut short at each of its steps (issue 43), then the world moves on: the
 * provisioner comes back and the operator runs what baton printed, EXACTLY as printed, until
 * the pairs are finished and `mesh status` exits 0.
 *
 * Rotation rot-cut of both pairs is killed once its providers said `committing` (both ends of
 * every pair staged), so its resume has every step to take: its own `committing` intents, the
 * provider renames, each consumer's rename after its receipt, the `finished` intents, its
 * `resumed` record, the kept files dropped. At each step the resume is
 * - killed (SIGKILL, power: interruptedAt, every later call unanswered on every machine), and
 *   status must say, per pair, what the machines hold (applied, or `mesh resume rot-cut`);
 * - met by a machine slower than `--timeout` (that one call fails, done or not), and what the
 *   resume printed is run as printed (a resume's Next, a refusal's `…` command);
 * and with the built CLI, SIGINT/SIGHUP while it waits for its receipts (it goes on and
 * finishes) and a real SIGKILL there. The stand-in provisioner writes receipts
 * (receipt-writer.ts); the real-PostgreSQL case is resume-postgres.test.ts. Run `npm run build` first.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { readJournal } from '../../src/mesh/journal.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { resume, resumeRotation } from '../../src/operations/resume.js';
import { suggester } from '../../src/suggest-command.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton, startBaton } from '../helpers/run-baton.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { type CallPoint, interruptedAt, pathsUnder, recordsAt, rotationDyingIn } from './dying-baton.js';
import { followStatus } from './follow-status.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { standInProvisioner } from './receipt-writer.js';

const ID = 'rot-cut';
const MESH = '/var/lib/baton/mesh';
const WEBS = ['web1', 'web2'] as const;

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeAll(() => assertBuilt());
beforeEach(() => {
  tmp = makeTempDir('baton-resume-cut-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => {
  provisionerGone();
  tmp.cleanup();
});

const stateDir = () => path.join(tmp.dir, 'state');
const machines = () => path.join(tmp.dir, 'machines');
const live = (machine: string, file: string) => path.join(machines(), machine, MESH, file);
const consumerEnd = (m: string) => live(m, `consumes/pg-main/${m}_app`);
const providerEnd = (m: string) => live('db1', `provides/pg-main/${m}_app`);
const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : undefined);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The provisioner, as the stand-in that writes a receipt for every live provider end. */
const { back: provisionerBack, gone: provisionerGone } = standInProvisioner(() =>
  live('db1', 'provides/pg-main'),
);

const baton = (args: readonly string[]) =>
  runBaton(args, { cwd: tmp.dir, env: { NO_COLOR: '1', BATON_CONFIG: '' }, timeoutMs: 60_000 });
const statusArgs = () => ['--state-dir', stateDir(), 'mesh', 'status', '--json', '--inventory', inventory];

/** Both pairs delivered once and applied: the old passwords are real. */
function seedOld(): void {
  for (const m of WEBS)
    for (const file of [consumerEnd(m), providerEnd(m)]) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `old-${m}`, { mode: 0o600 });
    }
  for (const m of WEBS) {
    const receipt = live('db1', `provides/pg-main/${RECEIPTS_DIR}/${m}_app`);
    mkdirSync(path.dirname(receipt), { recursive: true });
    writeFileSync(
      receipt,
      formatReceipt({
        role: `${m}_app`,
        digest: secretDigest(Buffer.from(`old-${m}`)),
        applied_at: new Date().toISOString(),
      }),
    );
  }
}

/** rot-cut of both pairs, killed once its providers said `committing`: every end staged, nothing live. */
async function cutShortRotation(): Promise<void> {
  seedOld();
  const inv = loadInventory(inventory);
  const dying = interruptedAt(
    transportsFor(inv.machines, TEST_BOUNDS),
    { method: 'writeRecords', matches: recordsAt('committing'), when: 'after' },
    'killed',
  );
  rotationDyingIn(dying, {
    id: ID,
    plan: planRotation(inv, { by: 'provider', name: 'pg-main' }),
    inventory: inv,
    journalDir: stateDir(),
  });
  await dying.dead;
  expect((await readJournal(stateDir(), ID)).map((r) => r.phase)).toEqual(['resolved', 'prepared']);
  for (const m of WEBS) {
    expect(read(`${providerEnd(m)}.next`)).toBeDefined();
    expect(read(`${consumerEnd(m)}.next`)).toBeDefined();
  }
}

/** A pair is whole when its consumer holds the new password its provider holds, nothing of it staged. */
const whole = (m: string) =>
  read(consumerEnd(m)) === read(providerEnd(m)) &&
  read(providerEnd(m)) !== `old-${m}` &&
  !existsSync(`${consumerEnd(m)}.next`) &&
  !existsSync(`${providerEnd(m)}.next`);

type StatusDoc = {
  pairs: {
    consumer: string;
    state: string;
    resume_id: string | null;
    last_rotation: { id: string; outcome: string } | null;
    next_steps: { args: string[] }[];
  }[];
};

/**
 * What status says now, held against the machines: a whole pair is applied with nothing to do,
 * any other names `mesh resume rot-cut`; exit 0 only when both are whole. Status changes nothing.
 */
async function statusTellsTheTruth(): Promise<StatusDoc> {
  const before = snapshotDir(machines());
  const status = await baton(statusArgs());
  expect(snapshotDir(machines())).toEqual(before);
  const doc = JSON.parse(status.stdout) as StatusDoc;
  for (const m of WEBS) {
    const pair = doc.pairs.find((p) => p.consumer === `${m}-app`)!;
    if (whole(m)) expect([m, pair.state, pair.next_steps], status.stdout).toEqual([m, 'applied', []]);
    else {
      expect([m, pair.resume_id], status.stdout).toEqual([m, ID]);
      expect(pair.next_steps.map((s) => s.args.join(' '))).toContainEqual(
        expect.stringContaining(`mesh resume ${ID}`),
      );
    }
  }
  expect(status.exitCode, status.stdout).toBe(WEBS.every(whole) ? 0 : 3);
  return doc;
}

/**
 * The end every interruption must reach: both pairs whole, nothing staged anywhere, rot-cut's
 * records saying both pairs applied and its last word `resumed` (or, killed between its
 * `finished` intents and that record, no word after `prepared`, status taking the machines'
 * `finished`), status exit 0 naming it, and a new rotation of both pairs starting (and
 * finishing) as if nothing had happened.
 */
async function finishedForGood(journal: 'resumed' | 'unrecorded' = 'resumed'): Promise<void> {
  for (const m of WEBS) expect(whole(m), m).toBe(true);
  expect(
    (readdirSync(machines(), { recursive: true }) as string[]).filter((f) => f.endsWith('.next')),
  ).toEqual([]);
  const records = await readJournal(stateDir(), ID);
  if (journal === 'resumed') {
    expect(new Set(records.flatMap((r) => r.applied ?? []))).toEqual(
      new Set(WEBS.map((m) => `pg-main:${m}-app`)),
    );
    expect(records.at(-1)!.phase).toBe('resumed');
  } else expect(records.map((r) => r.phase)).toEqual(['resolved', 'prepared']);
  const status = await baton(statusArgs());
  expect(status.exitCode, status.stdout).toBe(0);
  const outcome = journal === 'resumed' ? 'resumed' : 'finished';
  for (const p of (JSON.parse(status.stdout) as StatusDoc).pairs)
    expect([p.state, p.last_rotation]).toEqual(['applied', { id: ID, outcome }]);
  provisionerBack();
  const again = await baton([
    '--state-dir',
    stateDir(),
    'mesh',
    'rotate',
    '--provider',
    'pg-main',
    '--inventory',
    inventory,
    '--yes',
    '--wait',
    '20',
  ]);
  expect(again.exitCode, again.all).toBe(0);
}

/** resume's steps, in its order (rotation-run-effect.ts `commit`, the wait, `finish-apply`, the record, `discard-previous`). */
const STEPS: readonly {
  readonly step: string;
  readonly at: CallPoint;
  /** Which receipts the provisioner writes while the resume runs (web1's alone: one consumer moves, the other waits). */
  readonly receipts?: (role: string) => boolean;
  readonly journal?: 'unrecorded';
}[] = [
  {
    step: 'before its committing intents',
    at: { method: 'writeRecords', matches: recordsAt('committing'), when: 'before' },
  },
  {
    step: 'after its committing intents',
    at: { method: 'writeRecords', matches: recordsAt('committing'), when: 'after' },
  },
  {
    step: 'after the provider renames',
    at: { method: 'commit', matches: pathsUnder('/provides/'), when: 'after' },
  },
  {
    step: 'after a consumer rename',
    at: { method: 'commit', matches: pathsUnder('/consumes/'), when: 'after' },
    receipts: (role) => role === 'web1_app',
  },
  {
    step: 'after its finished intents, before its record',
    at: { method: 'writeRecords', matches: recordsAt('finished'), when: 'after' },
    journal: 'unrecorded',
  },
  { step: 'after its record, before the kept files go', at: { method: 'discardPrevious', when: 'before' } },
];

describe('mesh resume killed at each of its steps', () => {
  it.each(STEPS)(
    'killed $step: status says what the machines hold, and followed as printed it ends with both pairs finished',
    async ({ at, receipts, journal }) => {
      await cutShortRotation();
      const inv = loadInventory(inventory);
      const dying = interruptedAt(transportsFor(inv.machines, TEST_BOUNDS), at, 'killed');
      provisionerBack(receipts);
      const run = resumeRotation({
        id: ID,
        records: await readJournal(stateDir(), ID),
        inventory: inv,
        transportFor: dying.transportFor,
        concurrency: 2,
        waitMs: 30_000,
        pollMs: 10,
        journalDir: stateDir(),
        operator: 't',
        mesh: meshIdentity(inv),
      });
      const how = await Promise.race([
        dying.dead.then(() => 'killed'),
        run.then(
          (end) => `ended ${end.step}`,
          (e: unknown) => `threw ${String(e)}`,
        ),
      ]);
      expect(how).toBe('killed');
      provisionerGone();
      // A rename another machine was already doing when baton died lands (a machine finishes what it was sent).
      await sleep(200);
      await statusTellsTheTruth();
      provisionerBack();
      const ran = await followStatus({ baton, statusArgs: statusArgs() });
      for (const r of ran) expect(r).toMatch(/mesh resume rot-cut → 0$|wait\)$/);
      await finishedForGood(journal);
    },
    60_000,
  );
});

/** The first command baton printed for the operator to run next (a bare Next, or a `…` one in a refusal). */
function printedCommand(text: string): string[] | undefined {
  const found =
    /`(baton [^`]+)`/.exec(text)?.[1] ??
    /(baton (?:--\S+ \S+ )*mesh (?:resume|rollback) [^;\s]+[^;\n]*)/.exec(text)?.[1];
  if (!found) return undefined;
  // Temp paths need no quoting: the words are the argv.
  expect(found).not.toMatch(/['"\\]/);
  return found.trim().split(' ').slice(1);
}

/** A machine slower than --timeout at one call of the resume: that call fails, done on the machine or not. */
const TIMEOUTS: readonly {
  readonly step: string;
  readonly at: CallPoint;
  readonly exit: number;
  /** What the resume says of the machine (the bound's words unless told). */
  readonly says?: string;
}[] = [
  {
    step: 'its committing intents, not written',
    at: { method: 'writeRecords', matches: recordsAt('committing'), when: 'before' },
    exit: 4,
  },
  {
    step: 'its committing intents, written',
    at: { method: 'writeRecords', matches: recordsAt('committing'), when: 'after' },
    exit: 4,
  },
  {
    step: 'the provider renames, not done',
    at: { method: 'commit', matches: pathsUnder('/provides/'), when: 'before' },
    exit: 1,
  },
  {
    step: 'the provider renames, done',
    at: { method: 'commit', matches: pathsUnder('/provides/'), when: 'after' },
    exit: 1,
  },
  // The rename was done, its answer lost: the retry reads the end back, finds it live with the
  // rotation's digest and nothing staged, and counts it moved (asked again, it would fail on its
  // missing staged file until the wait ended and be reported "still staged" over a live file).
  {
    step: 'a consumer rename, done',
    at: { method: 'commit', matches: pathsUnder('/consumes/'), when: 'after' },
    exit: 0,
  },
  {
    step: 'its finished intents, written',
    at: { method: 'writeRecords', matches: recordsAt('finished'), when: 'after' },
    exit: 0,
  },
];

describe('mesh resume meets a machine slower than --timeout at each of its steps', () => {
  it.each(TIMEOUTS)(
    'no answer at $step: it exits $exit saying so, and what it printed, run as printed, ends with both pairs finished',
    async ({ at, exit, says }) => {
      await cutShortRotation();
      provisionerBack();
      const inv = loadInventory(inventory);
      const slow = interruptedAt(transportsFor(inv.machines, TEST_BOUNDS), at, 'timed-out');
      const lines: string[] = [];
      // The suggester the CLI builds from the flags given: its commands carry them.
      const s = suggester({ stateDir: stateDir(), inventory, mesh: { timeout: '10', wait: '5' } }, false);
      const transportFor: TransportFor = slow.transportFor;
      const code = await resume(
        {
          inventory: inv,
          journal: { dir: stateDir(), mesh: meshIdentity(inv) },
          transports: { transportFor, close: () => Promise.resolve() },
          operator: 't',
          suggester: s,
          out: (line) => lines.push(line),
        },
        { id: ID, concurrency: 2, waitMs: 5_000 },
      ).catch((e: unknown) => {
        if (!(e instanceof BatonError)) throw e;
        lines.push(...e.lines(s));
        return e.exitCode;
      });
      let said = lines.join('\n');
      expect(code, said).toBe(exit);
      if (exit !== 0) expect(said).toContain(says ?? 'no answer within 15 s');
      else expect(said).not.toMatch(/still staged|no staged file/);
      // What baton printed, run as printed, until a command exits 0.
      const ran: string[] = [];
      for (let step = 0; code !== 0 && step < 4; step++) {
        const args = printedCommand(said);
        if (!args) throw new Error(`exit ${code} and nothing to run: ${said}`);
        const r = await baton(args);
        ran.push(`${args.slice(args.indexOf('mesh'), args.indexOf('mesh') + 3).join(' ')} → ${r.exitCode}`);
        said = r.all;
        if (r.exitCode === 0) break;
      }
      if (exit !== 0) expect(ran.at(-1)).toMatch(/→ 0$/);
      expect(
        ran.every((r) => r.startsWith(`mesh resume ${ID}`)),
        ran.join('; '),
      ).toBe(true);
      await statusTellsTheTruth();
      await followStatus({ baton, statusArgs: statusArgs() });
      await finishedForGood();
    },
    60_000,
  );
});

describe('the built CLI interrupted while mesh resume waits for its receipts', () => {
  /** `mesh resume rot-cut` of the built CLI, started with no provisioner: it renames the provider ends and waits. */
  async function resumeWaiting() {
    await cutShortRotation();
    provisionerGone();
    const child = startBaton(
      ['--state-dir', stateDir(), 'mesh', 'resume', ID, '--inventory', inventory, '--wait', '30'],
      { cwd: tmp.dir, env: { NO_COLOR: '1', BATON_CONFIG: '' } },
    );
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    // In its wait: both provider ends renamed, no consumer moved (no receipt can come).
    while (WEBS.some((m) => existsSync(`${providerEnd(m)}.next`))) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`resume ended before its wait: ${String((await child).all)}`);
      await sleep(10);
    }
    return { child, stderr: () => stderr };
  }

  it('SIGINT twice and a SIGHUP: each is answered, the resume goes on and finishes once the provisioner is back (exit 0)', async () => {
    const { child, stderr } = await resumeWaiting();
    for (const signal of ['SIGINT', 'SIGINT', 'SIGHUP'] as const) {
      const said = stderr().split('\n').length;
      child.kill(signal);
      while (stderr().split('\n').length === said && child.exitCode === null && child.signalCode === null)
        await sleep(10);
    }
    expect([child.exitCode, child.signalCode]).toEqual([null, null]);
    provisionerBack();
    const r = await child;
    expect([r.exitCode, r.signal], String(r.all)).toEqual([0, undefined]);
    expect(String(r.stderr)).toContain(`SIGINT: mesh resume ${ID} goes on to the end`);
    expect(String(r.stderr)).toContain(`SIGHUP: mesh resume ${ID} goes on to the end`);
    expect(String(r.stdout)).toContain(`Resumed rotation ${ID}: all 2 credentials applied`);
    await finishedForGood();
  }, 60_000);

  it('SIGKILL: status names the resume for both pairs, and followed as printed it ends with both finished', async () => {
    const { child } = await resumeWaiting();
    child.kill('SIGKILL');
    const r = await child;
    expect(r.signal).toBe('SIGKILL');
    // Its lock's agent outlives it until it sees its stdin close, then removes the holder file (a
    // holder never outlives its lock): status's before/after snapshot must not race that removal.
    await vi.waitFor(
      () => expect(existsSync(live('db1', 'provides/pg-main/.baton.lock.holder'))).toBe(false),
      { timeout: 10_000 },
    );
    await statusTellsTheTruth();
    provisionerBack();
    const ran = await followStatus({ baton, statusArgs: statusArgs() });
    expect(
      ran.some((x) => /mesh resume rot-cut → 0$/.test(x)),
      ran.join('; '),
    ).toBe(true);
    await finishedForGood();
  }, 60_000);
});
