/**
 * A journal record that cannot be written stops the rotation. After prepare (the 'prepared'
 * record fails) every staged file is taken back — without that record `mesh resume` could
 * never find them — and the failure names the journal and the next step, exit 1. Tested on
 * the strict fake transport, then on the real local transport and over a real sshd.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXIT_CODES } from '../../src/errors.js';
import {
  isTerminal,
  rotation,
  rotationExitCode,
  rotationFlow,
  startRotation,
  type RotationState,
} from '../../src/app/rotation-flow.js';
import { rotationRunner, type RotationDeps } from '../../src/app/rotation-run-effect.js';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { summaryLines } from '../../src/app/rotation-text.js';
import type { Inventory } from '../../src/mesh/inventory.js';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { Secret } from '../../src/mesh/secret.js';
import { STAGED_SUFFIX, type TransportFor } from '../../src/mesh/transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { fakeMesh } from './fake-transport.js';
import { meshInventory, sshMeshInventory } from './mesh-fixture.js';
import { ifSet } from '../helpers/if-set.js';

const SELECTOR = { by: 'provider', name: 'pg-main' } as const;

function deps(transportFor: TransportFor, journalDir: string): RotationDeps {
  return {
    transportFor,
    journalDir,
    operator: 'tester',
    resolve: { concurrency: 3 },
    concurrency: 3,
    waitMs: 0,
    pollMs: 5,
  };
}

/** A path under a file: `mkdir -p` and every append there fail, for root too (chmod would not stop root). */
function breakJournal(dir: string): void {
  renameSync(dir, `${dir}.moved`);
  writeFileSync(dir, 'a file where the journal directory was\n');
}

/**
 * Resolves and journals 'resolved' normally, then breaks the journal and confirms: prepare
 * stages every file, and the 'prepared' record fails. `stagedAtFailure` lists the staged files
 * there were when the flow turned to taking them back (so the test is never vacuous).
 */
async function rotateWithJournalBrokenAfterResolve(
  plan: RotationPlan,
  transportFor: TransportFor,
  journalDir: string,
  staged: () => readonly string[],
) {
  const flow = rotationFlow(startRotation('rot-jf', plan), rotationRunner(deps(transportFor, journalDir)));
  let stagedAtFailure: readonly string[] | undefined;
  flow.subscribe((state) => {
    if (state.step === 'unstaging') stagedAtFailure = staged();
  });
  await vi.waitFor(() => expect(flow.getState().step).toBe('confirming'), { timeout: 20_000 });
  await flow.idle();
  expect(readFileSync(path.join(journalDir, JOURNAL_FILE), 'utf8')).toContain('"phase":"resolved"');
  breakJournal(journalDir);
  flow.dispatch({ type: 'typed', text: String(plan.pairs.length) });
  flow.dispatch({ type: 'confirmed' });
  const state = await flow.finished();
  if (!isTerminal(state)) throw new Error(`not terminal: ${state.step}`);
  return {
    state,
    stagedAtFailure,
    code: rotationExitCode(state),
    lines: summaryLines(state, 0, { full: true }),
  };
}

function expectJournalFailureReport(
  lines: readonly string[],
  journalDir: string,
  files: 'unstaged' | 'nothing-staged',
) {
  const text = lines.join('\n');
  expect(text).toContain('The rotation journal could not be written');
  expect(text).toContain(`Journal: ${path.join(journalDir, JOURNAL_FILE)}`);
  if (files === 'unstaged')
    expect(text).toContain(
      'Every staged file was removed: nothing took effect, the old credentials keep working.',
    );
  else expect(text).toContain('No new credential took effect.');
  expect(lines[lines.length - 1]).toBe(
    'Next: Set journal_dir in baton.yaml to a writable directory, or pass --state-dir. Then run the rotation again.',
  );
}

describe('a journal failure, as the flow decides it', () => {
  const plan = planRotation(meshInventory(1), SELECTOR);
  const digests = Object.fromEntries(plan.pairs.map((p) => [p.key, 'SHA256:x' as never]));
  const walk = (events: Parameters<typeof rotation>[1][]) => {
    let step = startRotation('r', plan);
    for (const event of events) step = rotation(step.state, event);
    return step;
  };
  const resolvedAll = plan.holders.map((h) => ({
    type: 'holder-resolved' as const,
    machine: h.machine,
    resolution: { status: 'resolved' as const },
  }));
  const confirmed = [
    ...resolvedAll,
    { type: 'typed' as const, text: String(plan.pairs.length) },
    { type: 'confirmed' as const },
  ];
  const journal = {
    what: 'The rotation journal could not be written (EEXIST).',
    where: '/j/mesh-journal.jsonl',
    next: 'Fix it.',
  };

  it('the commit waits for the prepared record; when that record fails, every staged file is taken back and nothing commits', () => {
    const prepared = walk([...confirmed, { type: 'prepared', digests }]);
    expect(prepared.state.step).toBe('committing');
    expect(prepared.effects.map((e) => e.type)).toEqual(['journal']);
    const failed = rotation(prepared.state, { type: 'journal-failed', phase: 'prepared', journal });
    expect(failed.state.step).toBe('unstaging');
    expect(failed.effects).toEqual([{ type: 'unstage' }]);
    // A late 'committed' (or anything but 'unstaged') changes nothing while taking files back.
    expect(rotation(failed.state, { type: 'committed' })).toEqual({ state: failed.state, effects: [] });
    const done = rotation(failed.state, { type: 'unstaged', failures: [] });
    expect(done.state.step === 'journal-failed' && done.state.files).toBe('unstaged');
    expect(isTerminal(done.state) && rotationExitCode(done.state)).toBe(EXIT_CODES.failed);
  });

  it('a failed resolved record stops before anything is generated; once ends are live, what is left stays for resume', () => {
    const early = walk([...confirmed, { type: 'journal-failed', phase: 'resolved', journal }]);
    expect(early.state.step === 'journal-failed' && early.state.files).toBe('nothing-staged');
    expect(early.effects).toEqual([]);
    const live = walk([
      ...confirmed,
      { type: 'prepared', digests },
      { type: 'journaled', phase: 'prepared' },
      { type: 'committed' },
      { type: 'journal-failed', phase: 'committed', journal },
    ]);
    expect(live.state.step === 'journal-failed' && live.state.files).toBe('live');
    expect(live.effects).toEqual([]);
    expect(summaryLines(live.state as Extract<RotationState, { step: 'journal-failed' }>).at(-1)).toBe(
      'Next: Fix it. Then run: baton mesh resume r',
    );
  });
});

describe('the rotation run-effect never rejects', () => {
  it('each effect that throws becomes its own named failure event; a broken resolve closes the gate before a secret exists', () => {
    const plan = planRotation(meshInventory(1), SELECTOR);
    const runner = rotationRunner(
      deps(() => {
        throw new Error('unused');
      }, '/nonexistent/journal'),
    );
    const boom = new Error('connection pool exhausted');
    const journalState = startRotation('r', plan).state;
    expect(runner.failed({ type: 'journal', phase: 'prepared', state: journalState }, boom)).toMatchObject({
      type: 'journal-failed',
      phase: 'prepared',
      journal: {
        where: path.join('/nonexistent/journal', JOURNAL_FILE),
        what: expect.stringContaining('connection pool exhausted'),
      },
    });
    expect(runner.failed({ type: 'prepare' }, boom)).toEqual({
      type: 'prepare-failed',
      failures: [{ machine: '(all)', reason: expect.stringContaining('connection pool exhausted') }],
      unstageFailures: [],
    });
    expect(runner.failed({ type: 'commit' }, boom).type).toBe('commit-failed');
    expect(runner.failed({ type: 'unstage' }, boom).type).toBe('unstaged');
    const resolveFailed = runner.failed({ type: 'resolve' }, boom);
    const closed = rotation(journalState, resolveFailed);
    expect(closed.state.step).toBe('gate-closed');
    expect(closed.effects.map((e) => e.type)).toEqual(['journal']);
  });
});

describe('a journal failure after prepare, on the strict fake transport', () => {
  it('removes every staged file, leaves the old credentials, names the journal, exit 1', async () => {
    const tmp = makeTempDir('baton-jf-fake-');
    try {
      const plan = planRotation(meshInventory(2), SELECTOR);
      const mesh = fakeMesh(['db1', 'db2', 'web1', 'web2'], plan);
      for (const h of plan.holders)
        for (const d of h.receives) mesh.machines[h.machine]!.files.set(d.path, `old-${d.pair}`);
      const before = JSON.stringify(Object.entries(mesh.machines).map(([n, m]) => [n, [...m.files]]));
      const journalDir = path.join(tmp.dir, 'journal');
      const stagedNow = () =>
        Object.values(mesh.machines).flatMap((m) =>
          [...m.files.keys()].filter((k) => k.endsWith(STAGED_SUFFIX)),
        );
      const result = await rotateWithJournalBrokenAfterResolve(
        plan,
        mesh.transportFor,
        journalDir,
        stagedNow,
      );
      expect(result.stagedAtFailure?.length).toBe(plan.holders.reduce((n, h) => n + h.receives.length, 0));
      expect(result.state.step).toBe('journal-failed');
      expect(result.code).toBe(EXIT_CODES.failed);
      expectJournalFailureReport(result.lines, journalDir, 'unstaged');
      expect(stagedNow()).toEqual([]);
      expect(JSON.stringify(Object.entries(mesh.machines).map(([n, m]) => [n, [...m.files]]))).toBe(before);
      for (const m of Object.values(mesh.machines)) expect(m.calls).not.toContain('commit');
      expect(mesh.unarranged).toEqual([]);
    } finally {
      tmp.cleanup();
    }
  });

  it('a journal that cannot be written at all stops the plain rotation before anything is staged', async () => {
    const tmp = makeTempDir('baton-jf-plain-');
    try {
      const plan = planRotation(meshInventory(1), SELECTOR);
      const mesh = fakeMesh(['db1', 'db2', 'web1'], plan);
      const journalDir = path.join(tmp.dir, 'journal');
      writeFileSync(journalDir, 'a file, not a directory\n');
      const lines: string[] = [];
      const { code, state } = await runRotationPlain({
        id: 'rot-p',
        plan,
        deps: deps(mesh.transportFor, journalDir),
        yes: true,
        write: (l) => lines.push(l),
      });
      expect(state.step === 'journal-failed' && state.files).toBe('nothing-staged');
      expect(code).toBe(EXIT_CODES.failed);
      expectJournalFailureReport(lines, journalDir, 'nothing-staged');
      for (const m of Object.values(mesh.machines))
        expect(m.calls.filter((c) => c !== 'resolve')).toEqual([]);
    } finally {
      tmp.cleanup();
    }
  });
});

/** Every holder gets an old credential through the transport itself, as `mesh seed` would. */
async function seedOld(plan: RotationPlan, transportFor: TransportFor): Promise<void> {
  for (const h of plan.holders) {
    const paths = h.receives.map((d) => d.path);
    await transportFor(h.machine).stage(paths.map((p) => ({ path: p, secret: Secret.generate() })));
    await transportFor(h.machine).commit(paths);
  }
}

function stagedUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith(STAGED_SUFFIX));
}

async function expectUnstagedEverywhere(inventory: Inventory, machinesDir: string, journalDir: string) {
  const plan = planRotation(inventory, SELECTOR);
  const transportFor = transportsFor(inventory.machines, TEST_BOUNDS);
  await seedOld(plan, transportFor);
  const before = snapshotDir(machinesDir);
  const result = await rotateWithJournalBrokenAfterResolve(plan, transportFor, journalDir, () =>
    stagedUnder(machinesDir),
  );
  expect(result.stagedAtFailure?.length).toBe(plan.holders.reduce((n, h) => n + h.receives.length, 0));
  expect(result.state.step === 'journal-failed' && result.state.files).toBe('unstaged');
  expect(result.code).toBe(EXIT_CODES.failed);
  expectJournalFailureReport(result.lines, journalDir, 'unstaged');
  expect(stagedUnder(machinesDir)).toEqual([]);
  expect(snapshotDir(machinesDir)).toEqual(before);
}

describe('a journal failure after prepare, on the real local transport', () => {
  it('removes every staged file from every machine directory; the old credentials are byte-for-byte as before', async () => {
    const tmp = makeTempDir('baton-jf-local-');
    try {
      const machinesDir = path.join(tmp.dir, 'machines');
      for (const m of ['db1', 'db2', 'web1', 'web2'])
        mkdirSync(path.join(machinesDir, m), { recursive: true });
      await expectUnstagedEverywhere(
        meshInventory(2, 'local', machinesDir),
        machinesDir,
        path.join(tmp.dir, 'journal'),
      );
    } finally {
      tmp.cleanup();
    }
  });
});

const unavailable = sshdUnavailable();

describeWithPart(unavailable, 'a journal failure after prepare, over a real sshd', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    sshd = await startSshd();
    tmp = makeTempDir('baton-jf-ssh-');
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  it('removes every staged file over ssh; the old credentials are byte-for-byte as before', async () => {
    const machinesDir = path.join(tmp.dir, 'machines');
    rmSync(machinesDir, { recursive: true, force: true });
    const inventory = sshMeshInventory(sshd, machinesDir);
    await expectUnstagedEverywhere(inventory, machinesDir, path.join(tmp.dir, 'journal'));
  }, 60_000);
});
