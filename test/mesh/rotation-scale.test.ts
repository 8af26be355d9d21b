/**
 * The rotation at the scale of hundreds of holders: planning is indexed, the flow's per-holder
 * bookkeeping is an append-only log, and the summary after the TTY view is brief — each of
 * which must give exactly the results of the straightforward version.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { fakeMesh } from './fake-transport.js';
import { parseInventory, pairKey, type Inventory, type Machine } from '../../src/mesh/inventory.js';
import {
  planIndex,
  planRotation,
  windowText,
  type Delivery,
  type RotationPlan,
} from '../../src/mesh/rotation-plan.js';
import { MARKS } from '../../src/app/marks.js';
import { describeSelector, selectPairs, type Selector } from '../../src/mesh/selector.js';
import { emptyLog, logAdd, logGet, logHas, logKeys } from '../../src/app/rotation-log.js';
import {
  isTerminal,
  progress,
  rotation,
  startRotation,
  type RotationEvent,
  type RotationState,
  type Step,
} from '../../src/app/rotation-flow.js';
import { SUMMARY_FULL_FILES, SUMMARY_ROWS, summaryLines } from '../../src/app/rotation-text.js';
import type { SecretDigest } from '../../src/mesh/digest.js';
import { meshInventory } from './mesh-fixture.js';

/** The planner as first written: a linear search per lookup and path.posix.join per file. */
function referencePlan(inventory: Inventory, selector: Selector): RotationPlan {
  const find = (name: string): Machine => inventory.machines.find((m) => m.name === name)!;
  const holders = new Map<string, { machine: Machine; receives: Delivery[] }>();
  const receive = (name: string, delivery: Delivery) => {
    const entry = holders.get(name) ?? { machine: find(name), receives: [] };
    entry.receives.push(delivery);
    holders.set(name, entry);
  };
  const pairs = selectPairs(inventory, selector).map((pair) => {
    const key = pairKey(pair);
    const providerPath = path.posix.join(
      find(pair.providerMachine).meshDir,
      'provides',
      pair.provider,
      pair.role,
    );
    const consumerPath = path.posix.join(
      find(pair.consumerMachine).meshDir,
      'consumes',
      pair.provider,
      pair.role,
    );
    receive(pair.providerMachine, {
      end: 'provides',
      pair: key,
      provider: pair.provider,
      role: pair.role,
      path: providerPath,
    });
    receive(pair.consumerMachine, {
      end: 'consumes',
      pair: key,
      provider: pair.provider,
      role: pair.role,
      path: consumerPath,
    });
    const receiptPath = path.posix.join(
      find(pair.providerMachine).meshDir,
      'provides',
      pair.provider,
      '.applied',
      pair.role,
    );
    return { ...pair, key, providerPath, consumerPath, receiptPath, window: windowText(pair) };
  });
  return {
    selector,
    selectorText: describeSelector(selector),
    pairs,
    holders: [...holders.values()].map(({ machine, receives }) => ({
      machine: machine.name,
      transport: machine.transport,
      address: machine.address,
      receives,
    })),
  };
}

/** Machines with untidy mesh_dirs (trailing slash, "/", dot segments), shared by several pairs. */
function untidyInventory(): Inventory {
  const yaml = [
    'mesh_dir: /var/lib/baton/mesh/',
    'machines:',
    '  - { name: db1, address: db1.internal, transport: ssh, mesh_dir: "/" }',
    '  - { name: db2, address: db2.internal, transport: ssh, mesh_dir: "/srv/./mesh//x/" }',
    '  - { name: web1, address: web1.internal, transport: ssh }',
    '  - { name: web2, address: /srv/web2, transport: local, mesh_dir: /opt/mesh/../mesh }',
    'providers:',
    '  - { name: pg-main, machine: db1, kind: postgres }',
    '  - { name: pg.audit, machine: db2, kind: postgres }',
    'consumers:',
    '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main, pg.audit] }',
    '  - { name: Web2.App, machine: web2, reads: each-connection, uses: [pg.audit, pg-main] }',
    '  - { name: backup, machine: db1, reads: each-connection, uses: [pg-main, pg.audit] }',
  ].join('\n');
  return parseInventory(`${yaml}\n`, '/srv/mesh.yaml');
}

describe('planning a large mesh', () => {
  const selectors: Selector[] = [
    { by: 'provider', name: 'pg-main' },
    { by: 'provider', name: 'pg.audit' },
    { by: 'consumer', name: 'Web2.App' },
    { by: 'machine', name: 'db1' },
    { by: 'machine', name: 'db2' },
    { by: 'pair', provider: 'pg.audit', consumer: 'backup' },
  ];

  it.each(selectors)(
    'gives exactly the plan of a linear search and path.posix.join, order included (%o)',
    (selector) => {
      const inventory = untidyInventory();
      expect(planRotation(inventory, selector)).toEqual(referencePlan(inventory, selector));
    },
  );

  it('gives the same plan for a mesh of hundreds of machines, with every holder once in first-seen order', () => {
    const inventory = meshInventory(300);
    const plan = planRotation(inventory, { by: 'provider', name: 'pg-main' });
    expect(plan).toEqual(referencePlan(inventory, { by: 'provider', name: 'pg-main' }));
    expect(plan.holders.map((h) => h.machine)).toEqual([
      'db1',
      ...Array.from({ length: 300 }, (_, i) => `web${i + 1}`),
    ]);
    expect(planIndex(plan).files).toBe(2 * plan.pairs.length);
  });
});

describe('the keyed log behind the flow', () => {
  it('an older version never sees what a newer one added, and adding to it branches off without touching the newer', () => {
    const a = logAdd(logAdd(emptyLog<number>(), 'x', 1), 'y', 2);
    const b = logAdd(a, 'z', 3);
    expect([logHas(a, 'z'), logHas(b, 'z'), a.size, b.size]).toEqual([false, true, 2, 3]);
    const c = logAdd(a, 'w', 4); // a is no longer the newest: c copies
    expect(logKeys(b)).toEqual(['x', 'y', 'z']);
    expect(logKeys(c)).toEqual(['x', 'y', 'w']);
    expect([logHas(b, 'w'), logHas(c, 'z'), logGet(c, 'w'), logGet(b, 'z')]).toEqual([false, false, 4, 3]);
    expect(logKeys(a)).toEqual(['x', 'y']);
  });

  it('the first entry for a key wins and adding it again returns the same version', () => {
    const a = logAdd(emptyLog<string>(), 'x', 'first');
    expect(logAdd(a, 'x', 'second')).toBe(a);
    expect(logGet(a, 'x')).toBe('first');
  });
});

describe('the rotation flow over hundreds of holders', () => {
  const plan = planRotation(meshInventory(400), { by: 'provider', name: 'pg-main' }); // 401 pairs, 401 holders
  const digests = Object.fromEntries(plan.pairs.map((p) => [p.key, 'sha256:00'])) as unknown as Record<
    string,
    SecretDigest
  >;

  function run(step: Step, events: readonly RotationEvent[]): RotationState {
    let state = step.state;
    for (const e of events) state = rotation(state, e).state;
    return state;
  }

  it('counts each holder once, ignores machines outside the plan, and leaves every earlier state as it was', () => {
    const start = startRotation('big', plan);
    const resolved = plan.holders.map((h): RotationEvent => ({
      type: 'holder-resolved',
      machine: h.machine,
      resolution: { status: 'resolved' },
    }));
    const half = run(start, [
      ...resolved.slice(0, 200),
      resolved[0]!,
      { type: 'holder-resolved', machine: 'elsewhere', resolution: { status: 'resolved' } },
    ]);
    expect(half.step).toBe('resolving');
    expect(progress(half).resolved).toBe(200);
    // Two different answers from the same state: each sees only its own.
    const left = rotation(half, resolved[200]!).state;
    const right = rotation(half, {
      type: 'holder-resolved',
      machine: plan.holders[300]!.machine,
      resolution: { status: 'unresolved', reason: 'refused' },
    }).state;
    expect([progress(half).resolved, progress(left).resolved, progress(right).resolved]).toEqual([
      200, 201, 201,
    ]);
    const closed = run({ state: right, effects: [] }, resolved.slice(200));
    expect(closed.step).toBe('gate-closed');
    expect(closed.step === 'gate-closed' && closed.resolutions[plan.holders[300]!.machine]).toEqual({
      status: 'unresolved',
      reason: 'refused',
    });
    const open = run({ state: left, effects: [] }, resolved.slice(201));
    expect(open.step).toBe('confirming');
    expect(open.step !== 'resolving' && Object.keys(open.resolutions)).toEqual(
      plan.holders.map((h) => h.machine),
    );
  });

  it('walks every phase with exact counts and ends with the arrays the journal reads, in arrival order', () => {
    const resolved = plan.holders.map((h): RotationEvent => ({
      type: 'holder-resolved',
      machine: h.machine,
      resolution: { status: 'resolved' },
    }));
    const confirming = run(startRotation('big', plan), [
      ...resolved,
      { type: 'typed', text: String(plan.pairs.length) },
    ]);
    const preparing = rotation(confirming, { type: 'confirmed' }).state;
    const staged = run(
      { state: preparing, effects: [] },
      [...plan.holders.slice(0, 3), plan.holders[0]!].map((h): RotationEvent => ({
        type: 'staged',
        machine: h.machine,
      })),
    );
    expect(progress(staged).staged).toBe(plan.holders.slice(0, 3).reduce((n, h) => n + h.receives.length, 0));
    const committing = rotation(staged, { type: 'prepared', digests }).state;
    const steps = plan.holders.slice(0, 5).map((h): RotationEvent => ({
      type: 'committed-step',
      machine: h.machine,
      end: 'provides',
      paths: h.receives.map((d) => d.path),
    }));
    const partly = run({ state: committing, effects: [] }, [...steps, steps[1]!]);
    const filesCommitted = plan.holders.slice(0, 5).reduce((n, h) => n + h.receives.length, 0);
    expect(progress(partly).committed).toBe(filesCommitted);
    const failedProviders = rotation(partly, {
      type: 'commit-failed',
      failures: [{ machine: 'web9', reason: 'gone' }],
    }).state;
    expect(failedProviders.step === 'applying' && failedProviders.committed).toEqual(
      plan.holders.slice(0, 5).flatMap((h) => h.receives.map((d) => `${h.machine}\0${d.path}`)),
    );
    expect(progress(failedProviders).committed).toBe(filesCommitted);
    // Nothing confirmed: every pair is rolled back, none left waiting.
    const failed = rotation(failedProviders, { type: 'apply-finished', failures: [] });
    expect(failed.state.step).toBe('rolling-back');
    expect(failed.effects).toEqual([{ type: 'roll-back', pairs: plan.pairs.map((p) => p.key) }]);

    // Every provider end live: each pair's consumer moves once its receipt is seen.
    const everyProvider = run(
      { state: committing, effects: [] },
      plan.holders.map((h): RotationEvent => ({
        type: 'committed-step',
        machine: h.machine,
        end: 'provides',
        paths: h.receives.filter((d) => d.end === 'provides').map((d) => d.path),
      })),
    );
    const applying = rotation(rotation(everyProvider, { type: 'committed' }).state, {
      type: 'committed',
    }).state;
    const keys = [plan.pairs[7]!.key, plan.pairs[2]!.key, plan.pairs[7]!.key, plan.pairs[5]!.key];
    const applied = run(
      { state: applying, effects: [] },
      keys.flatMap((pair, i): RotationEvent[] => [
        { type: 'receipt-seen', pair, digest: digests[pair]!, appliedAt: 0, at: 0 },
        {
          type: 'consumer-renamed',
          machine: plan.pairs.find((p) => p.key === pair)!.consumerMachine,
          applied: [{ pair, windowMs: i }],
        },
      ]),
    );
    expect(progress(applied).applied).toBe(3);
    const rolling = rotation(applied, { type: 'apply-finished', failures: [] }).state;
    const done = rotation(rolling, {
      type: 'rolled-back',
      results: plan.pairs
        .filter((_, i) => ![7, 2, 5].includes(i))
        .map((p) => ({ pair: p.key, result: 'rolled-back' as const, receipt: 'old' as const })),
    }).state;
    expect(done.step === 'rolled-back' && done.applied).toEqual([
      plan.pairs[7]!.key,
      plan.pairs[2]!.key,
      plan.pairs[5]!.key,
    ]);
    // Every provider end and the three consumer ends whose receipts came.
    expect(progress(done)).toMatchObject({
      resolved: 401,
      staged: 802,
      committed: 401 + 3,
      applied: 3,
      pairs: 401,
    });
    expect(progress(applying).applied).toBe(0); // the state before the receipts is unchanged
  });
});

describe('the summary of a rotation', () => {
  function doneState(
    consumers: number,
    applied: (key: string, i: number) => boolean,
  ): Extract<RotationState, { step: 'done' }> {
    const plan = planRotation(meshInventory(consumers), { by: 'provider', name: 'pg-main' });
    const digests = Object.fromEntries(
      plan.pairs.map((p) => [p.key, `sha256:${'ab'.repeat(32)}`]),
    ) as unknown as Record<string, SecretDigest>;
    const resolutions = Object.fromEntries(
      plan.holders.map((h) => [h.machine, { status: 'resolved' as const }]),
    );
    const keys = plan.pairs.map((p) => p.key).filter(applied);
    return {
      id: 'rot-1',
      plan,
      resolutions,
      step: 'done',
      digests,
      applied: keys,
      windows: Object.fromEntries(keys.map((k, i) => [k, 20 + i])),
    };
  }

  it('a small rotation lists every file and every pair, and the window it measured', () => {
    const state = doneState(3, (_k, i) => i === 0);
    expect(progress(state).files).toBeLessThanOrEqual(SUMMARY_FULL_FILES);
    const lines = summaryLines(state, 30);
    expect(lines).toEqual(summaryLines(state, 30, { full: true }));
    expect(lines[0]).toBe('Applied 1 of 4 credentials, 3 pending (rotation rot-1).');
    expect(lines.filter((l) => / (replaced|still staged) \(/.test(l))).toHaveLength(progress(state).files);
    expect(lines.filter((l) => l.includes(' still staged ('))).toHaveLength(3);
    expect(lines.filter((l) => /^ {2}[✓!] /.test(l))).toHaveLength(state.plan.pairs.length);
    expect(lines).toContain(
      "  ✓ pg-main applied web1_app; web1-app's file replaced 20 ms later (the window)",
    );
    expect(lines.join('\n')).toContain(
      "new connections that still used the OLD password could fail from the database applying the new one until the consumer's file was replaced — 20 ms.",
    );
    const all = doneState(1, () => true);
    expect(summaryLines(all)[0]).toBe('Rotated 2 credentials (rotation rot-1).');
    const one = planRotation(meshInventory(1), { by: 'pair', provider: 'pg-main', consumer: 'web1-app' });
    expect(summaryLines({ ...all, plan: one, applied: ['pg-main:web1-app'] })[0]).toBe(
      'Rotated 1 credential (rotation rot-1).',
    );
  });

  it('a rotation of hundreds of holders gives counts, the first rows and where the full list is — and every unconfirmed pair is counted', () => {
    const state = doneState(500, (_k, i) => i % 2 === 0);
    const journal = '/var/lib/baton/d1/mesh-journal.jsonl';
    const lines = summaryLines(state, 30, { journal });
    const text = lines.join('\n');
    expect(lines[0]).toBe('Applied 251 of 501 credentials, 250 pending (rotation rot-1).');
    expect(text).toContain(`  ${501 + 251} of 1002 files replaced on 501 machines.`);
    expect(lines.filter((l) => / (replaced|still staged) \(/.test(l))).toHaveLength(SUMMARY_ROWS);
    expect(text).toContain(
      `…and ${1002 - SUMMARY_ROWS} more files: the journal (${journal}) records every file and digest of rotation rot-1`,
    );
    expect(text).toContain('`baton mesh plan --provider pg-main --json` lists every holder');
    expect(text).toContain('  Receipts: 251 of 501 applied, 250 not confirmed within 30 s.');
    expect(lines.filter((l) => l.startsWith('  ! '))).toHaveLength(SUMMARY_ROWS);
    expect(text).toContain(`…and ${250 - SUMMARY_ROWS} more not confirmed`);
    expect(text).toContain('at most 270 ms (median 145 ms) over 251 pairs');
    expect(Buffer.byteLength(text)).toBeLessThan(6 * 1024);
    // Plain output (scripts, logs) stays complete.
    const full = summaryLines(state, 30, { full: true });
    expect(full.filter((l) => / (replaced|still staged) \(/.test(l))).toHaveLength(1002);
    expect(full.filter((l) => l.startsWith('  ! '))).toHaveLength(250);
  });

  it('a large interrupted commit lists what is still staged first, names every failed machine, and gives the resume command', () => {
    const plan = planRotation(meshInventory(300), { by: 'provider', name: 'pg-main' });
    const resolutions = Object.fromEntries(
      plan.holders.map((h) => [h.machine, { status: 'resolved' as const }]),
    );
    const committed = plan.holders[0]!.receives.map((d) => `db1\0${d.path}`);
    const failures = Array.from({ length: 30 }, (_, i) => ({ machine: `web${i + 1}`, reason: 'ssh failed' }));
    const state: RotationState = {
      id: 'rot-2',
      plan,
      resolutions,
      step: 'commit-failed',
      digests: {},
      committed,
      failures,
      applied: [],
      windows: {},
    };
    if (!isTerminal(state)) throw new Error('not terminal');
    const lines = summaryLines(state);
    expect(lines[1]).toBe(
      `  ${committed.length} of 602 files replaced, ${602 - committed.length} still staged.`,
    );
    expect(lines[2]).toBe('  web1: consumes/pg-main/web1_app still staged');
    expect(lines.filter((l) => l.endsWith('still staged'))).toHaveLength(SUMMARY_ROWS);
    for (const f of failures) expect(lines).toContain(`  ${f.machine}: ssh failed`);
    expect(lines[lines.length - 1]).toBe('Next: fix the machine, then run: baton mesh resume rot-2');
  });

  it('a closed gate names every unresolved machine, however many', () => {
    const plan = planRotation(meshInventory(300), { by: 'provider', name: 'pg-main' });
    const resolutions = Object.fromEntries(
      plan.holders.map((h) => [h.machine, { status: 'unresolved' as const, reason: 'no route' }]),
    );
    const lines = summaryLines({ id: 'rot-3', plan, resolutions, step: 'gate-closed' });
    expect(lines.filter((l) => l.endsWith(': no route'))).toHaveLength(301);
  });
});

describe('plain output of a large rotation', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it('--yes still prints every file and every pair, because scripts and logs keep nothing else', async () => {
    const plan = planRotation(meshInventory(30), { by: 'provider', name: 'pg-main' }); // 31 pairs, 62 files
    expect(progress(startRotation('x', plan).state).files).toBeGreaterThan(SUMMARY_FULL_FILES);
    const mesh = fakeMesh(
      plan.holders.map((h) => h.machine),
      plan,
    );
    const journalDir = mkdtempSync(path.join(os.tmpdir(), 'baton-journal-'));
    dirs.push(journalDir);
    const lines: string[] = [];
    const { code } = await runRotationPlain({
      id: 'rot-plain',
      plan,
      yes: true,
      write: (l) => lines.push(l),
      deps: {
        transportFor: mesh.transportFor,
        journalDir,
        operator: 'tester',
        resolve: { concurrency: 4 },
        concurrency: 4,
        waitMs: 0,
        pollMs: 5,
      },
    });
    // No provisioner wrote a receipt: every pair is rolled back, exit 3, and each is named.
    expect(code).toBe(3);
    for (const p of plan.pairs)
      expect(lines.some((l) => l.startsWith(`  ${MARKS.info.glyph} ${p.key}: rolled back; `))).toBe(true);
    expect(lines.join('\n')).not.toContain('more');
  });
});
