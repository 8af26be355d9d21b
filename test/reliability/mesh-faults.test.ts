/**
 * All-or-nothing under random failure: 100 rotations on the local transport (seeded PRNG),
 * each with a random selector and a random fault — an unresolvable holder, a prepare that
 * fails part-way, a commit interrupted part-way — run through the project's own rotation flow
 * and effect runner, then `resume` for the interrupted ones. After each, EVERY pair of the
 * mesh is checked by digest on both ends: wholly old or wholly new, never one end of each,
 * and no staged file left behind. The seed is printed so a failure can be replayed.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import type { RotationDeps } from '../../src/app/rotation-run-effect.js';
import { secretDigest, type SecretDigest } from '../../src/mesh/digest.js';
import { loadInventory, type Inventory } from '../../src/mesh/inventory.js';
import { readJournal } from '../../src/mesh/journal.js';
import { resumeRotation } from '../../src/operations/resume.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { Selector } from '../../src/mesh/selector.js';
import { UNPLUGGED_MARKER, unpluggable } from '../../src/commands/drill/unplugged.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { recordsThenInTurn, TransportError, type BoundTransport } from '../../src/mesh/transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { prng } from '../helpers/prng.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { withLiveProvisioner } from '../mesh/receipt-writer.js';
import { ifSet } from '../helpers/if-set.js';

const ROTATIONS = 100;
const SEED = Number(process.env.BATON_MESH_SEED ?? 0x5eed_2026);

type Fault = 'none' | 'unresolvable' | 'prepare-fails' | 'commit-interrupted';

let tmp: { dir: string; cleanup: () => void };
let inventory: Inventory;
let journalDir: string;
const figures = {
  seed: `0x${SEED.toString(16)}`,
  rotations: 0,
  none: 0,
  unresolvable: 0,
  prepareFails: 0,
  commitInterrupted: 0,
  resumed: 0,
  unsettledBeforeResume: 0,
  halfPairsBeforeResume: 0,
  pairsChecked: 0,
  halfRotatedPairs: 0,
  leftoverStagedFiles: 0,
};

beforeAll(() => {
  tmp = makeTempDir('baton-mesh-faults-');
  const machines = ['db1', 'db2', 'web1', 'web2', 'worker1', 'batch1'];
  for (const m of machines) mkdirSync(path.join(tmp.dir, 'machines', m), { recursive: true, mode: 0o700 });
  const file = path.join(tmp.dir, 'inventory.yaml');
  writeFileSync(
    file,
    [
      'mesh_dir: /var/lib/baton/mesh',
      'machines:',
      ...machines.map((m) => `  - { name: ${m}, address: machines/${m}, transport: local }`),
      'providers:',
      '  - { name: pg-main, machine: db1, kind: postgres }',
      '  - { name: pg-aux, machine: db2, kind: postgres }',
      'consumers:',
      '  - { name: web1-app, machine: web1, reads: each-connection, uses: [pg-main, pg-aux] }',
      '  - { name: web2-app, machine: web2, reads: each-connection, uses: [pg-main] }',
      '  - { name: worker1-jobs, machine: worker1, reads: each-connection, uses: [pg-main, pg-aux] }',
      '  - { name: batch1-etl, machine: batch1, reads: each-connection, uses: [pg-aux] }',
      '  - { name: db2-replica, machine: db2, reads: each-connection, uses: [pg-main] }',
      '',
    ].join('\n'),
  );
  inventory = loadInventory(file);
  journalDir = path.join(tmp.dir, 'journal');
});

afterAll(() => {
  ifSet(tmp)?.cleanup();
  console.log(`mesh-faults figures: ${JSON.stringify(figures)}`);
});

const machineRoot = (name: string) => path.join(tmp.dir, 'machines', name);

/**
 * Wraps one machine's transport so `op` fails after doing the first `keep` items for real —
 * a holder that dies in the middle of a batch, the worst place.
 */
function faulty(base: TransportFor, machine: string, op: 'stage' | 'commit', keep: number): TransportFor {
  return (name) => {
    const real = base(name);
    if (name !== machine) return real;
    const wrapped: BoundTransport = {
      ...real,
      machine: real.machine,
      resolve: () => real.resolve(),
      digests: (paths) => real.digests(paths),
      readTexts: (paths) => real.readTexts(paths),
      unstage: (paths) => real.unstage(paths),
      stage: async (files) => {
        if (op !== 'stage') return real.stage(files);
        if (keep > 0) await real.stage(files.slice(0, keep));
        throw new TransportError(machine, 'injected: the connection dropped while staging');
      },
      commit: async (paths) => {
        if (op !== 'commit') return real.commit(paths);
        if (keep > 0) await real.commit(paths.slice(0, keep));
        throw new TransportError(machine, 'injected: the connection dropped while committing');
      },
      // The records' request runs its step through the faulty one above.
      writeRecordsThen: (records, step) => recordsThenInTurn(wrapped, records, step),
    };
    return wrapped;
  };
}

/**
 * The digest of a live file as it is on the machine's disk (undefined when there is none), read
 * here rather than through the transport under test: the check does not ask the agent that
 * wrote the files what they hold, and it costs no agent and no sha256sum per end (24 of each
 * per check, twice a rotation, were most of this file's time).
 */
function liveDigest(machine: string, file: string): SecretDigest | undefined {
  try {
    return secretDigest(readFileSync(path.join(machineRoot(machine), file)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** Every pair's live digest on both ends, plus every staged/temp file anywhere. */
function meshState(): {
  pairs: Map<string, { provider?: SecretDigest; consumer?: SecretDigest }>;
  staged: string[];
} {
  const plan = planRotation(inventory, { by: 'provider', name: 'pg-main' });
  const planAux = planRotation(inventory, { by: 'provider', name: 'pg-aux' });
  const pairs = new Map<string, { provider?: SecretDigest; consumer?: SecretDigest }>();
  for (const p of [...plan.pairs, ...planAux.pairs])
    pairs.set(p.key, {
      provider: liveDigest(p.providerMachine, p.providerPath),
      consumer: liveDigest(p.consumerMachine, p.consumerPath),
    });
  const staged: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const abs = path.join(dir, name);
      if (statSync(abs).isDirectory()) walk(abs);
      else if (/\.next$|\.tmp\./.test(name)) staged.push(path.relative(tmp.dir, abs));
    }
  };
  walk(path.join(tmp.dir, 'machines'));
  return { pairs, staged };
}

function deps(transportFor: TransportFor): RotationDeps {
  return {
    transportFor: withLiveProvisioner(transportFor, machineRoot),
    journalDir,
    operator: 'mesh-faults',
    resolve: { concurrency: 4 },
    concurrency: 4,
    waitMs: 0,
    pollMs: 50,
  };
}

async function resume(id: string): Promise<void> {
  await resumeRotation({
    id,
    records: await readJournal(journalDir, id),
    inventory,
    transportFor: withLiveProvisioner(transportsFor(inventory.machines, TEST_BOUNDS), machineRoot),
    concurrency: 4,
    waitMs: 0,
    pollMs: 50,
    journalDir,
    operator: 'mesh-faults',
  });
}

describe('random failure injection over rotations on the local transport', () => {
  it(`leaves every pair wholly old or wholly new after each of ${ROTATIONS} rotations (once resume has run)`, async () => {
    const random = prng(SEED);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const selectors: Selector[] = [
      ...inventory.consumers.map((c) => ({ by: 'consumer' as const, name: c.name })),
      ...inventory.providers.map((p) => ({ by: 'provider' as const, name: p.name })),
      ...inventory.machines.map((m) => ({ by: 'machine' as const, name: m.name })),
      ...inventory.pairs.map((p) => ({ by: 'pair' as const, provider: p.provider, consumer: p.consumer })),
    ];
    const faults: Fault[] = ['none', 'unresolvable', 'prepare-fails', 'commit-interrupted'];

    // Generation 0: every pair delivered once, cleanly, so "old" is a real secret everywhere.
    for (const provider of inventory.providers) {
      const plan = planRotation(inventory, { by: 'provider', name: provider.name });
      const { code } = await runRotationPlain({
        id: `init-${provider.name}`,
        plan,
        deps: deps(transportsFor(inventory.machines, TEST_BOUNDS)),
        yes: true,
        write: () => undefined,
      });
      expect(code).toBe(0);
    }

    for (let n = 0; n < ROTATIONS; n += 1) {
      const selector = pick(selectors);
      const fault = pick(faults);
      const plan = planRotation(inventory, selector);
      const before = meshState();
      const id = `r${String(n).padStart(3, '0')}-${fault}`;
      const context = `rotation ${n} (seed 0x${SEED.toString(16)}): ${plan.selectorText}, fault ${fault}`;
      const victim = pick(plan.holders);
      let transportFor = transportsFor(inventory.machines, TEST_BOUNDS, { wrap: unpluggable });
      if (fault === 'unresolvable')
        writeFileSync(path.join(machineRoot(victim.machine), UNPLUGGED_MARKER), '');
      if (fault === 'prepare-fails')
        transportFor = faulty(
          transportFor,
          victim.machine,
          'stage',
          Math.floor(random() * victim.receives.length),
        );
      if (fault === 'commit-interrupted') {
        // Only a provider-end or consumer-end commit step exists per holder; cut it part-way.
        transportFor = faulty(
          transportFor,
          victim.machine,
          'commit',
          Math.floor(random() * victim.receives.length),
        );
      }

      const { code, state } = await runRotationPlain({
        id,
        plan,
        deps: deps(transportFor),
        yes: true,
        write: () => undefined,
      });
      rmSync(path.join(machineRoot(victim.machine), UNPLUGGED_MARKER), { force: true });

      if (fault === 'none') expect(state.step, context).toBe('done');
      if (fault === 'unresolvable') expect([state.step, code], context).toEqual(['gate-closed', 4]);
      if (fault === 'prepare-fails') expect(state.step, context).toBe('prepare-failed');
      // A pair past its commit is finished or rolled back; only one whose machine could not be
      // reached again is left, for resume.
      const unfinished =
        state.step === 'rolled-back' &&
        state.results.some((r) => r.result === 'provider-unknown' || r.result === 'consumer-unknown');
      if (unfinished) {
        // The fault really bit: before resume the mesh is NOT settled (staged files, or a
        // pair whose ends differ) — proof the check below can see a half-rotation.
        const interrupted = meshState();
        const halves = [...interrupted.pairs.values()].filter((e) => e.provider !== e.consumer).length;
        if (halves > 0 || interrupted.staged.length > 0) figures.unsettledBeforeResume += 1;
        figures.halfPairsBeforeResume += halves;
        await resume(id);
        figures.resumed += 1;
      }

      const after = meshState();
      const journal = await readJournal(journalDir, id);
      const prepared = journal.find((r) => r.phase === 'prepared');
      const newDigest = new Map(prepared?.pairs.map((p) => [p.key, p.digest]) ?? []);
      const selected = new Set(plan.pairs.map((p) => p.key));
      for (const [key, ends] of after.pairs) {
        figures.pairsChecked += 1;
        const old = before.pairs.get(key)!;
        const whole = ends.provider !== undefined && ends.provider === ends.consumer;
        if (!whole) figures.halfRotatedPairs += 1;
        expect(whole, `${context}: pair ${key} ends differ ${JSON.stringify(ends)}`).toBe(true);
        const rolledBack =
          state.step === 'rolled-back' &&
          state.results.some((r) => r.pair === key && r.result === 'rolled-back');
        const rotated = state.step === 'done' || (state.step === 'rolled-back' && !rolledBack);
        if (selected.has(key) && rotated)
          expect(ends.provider, `${context}: ${key} should be new`).toBe(newDigest.get(key));
        else expect(ends.provider, `${context}: ${key} should be unchanged`).toBe(old.provider);
      }
      figures.leftoverStagedFiles += after.staged.length;
      expect(after.staged, context).toEqual([]);
      figures.rotations += 1;
      if (fault === 'none') figures.none += 1;
      if (fault === 'unresolvable') figures.unresolvable += 1;
      if (fault === 'prepare-fails') figures.prepareFails += 1;
      if (fault === 'commit-interrupted') figures.commitInterrupted += 1;
    }
    expect(figures.halfRotatedPairs).toBe(0);
    // A pair left for resume is usually half-rotated until it runs (not always: a commit cut
    // after the rename but before its answer leaves it whole, and unknown to baton).
    expect(figures.unsettledBeforeResume).toBeGreaterThan(0);
    expect(figures.unsettledBeforeResume).toBeLessThanOrEqual(figures.resumed);
    expect(figures.halfPairsBeforeResume).toBeGreaterThan(0);
    // Every kind of fault was drawn at least once.
    expect(
      Math.min(figures.none, figures.unresolvable, figures.prepareFails, figures.commitInterrupted),
    ).toBeGreaterThan(0);
  }, 240_000);
});
