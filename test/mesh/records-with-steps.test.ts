/**
 * A machine's intent records travel in the request of the step they announce
 * (Transport.writeRecordsThen): the rotation's order still holds across machines — no end is
 * staged before its provider holds the rotation's `preparing` intent, no provider end renamed
 * before its `committing` one — and a machine whose intents cannot be written does nothing of its
 * step while the others go on, as after any one machine's failed commit.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { intentPath } from '../../src/mesh/intent.js';
import { readJournal } from '../../src/mesh/journal.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { previousPath, type BoundTransport, type TransportFor } from '../../src/mesh/transport.js';
import { fakeMesh, intentPhasesOf, provisionerOn, type FakeMesh } from './fake-transport.js';
import { meshInventory } from './mesh-fixture.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const allMachines = ['db1', 'db2', 'web1', 'web2', 'web3'];

function seeded(plan: RotationPlan): FakeMesh {
  const mesh = fakeMesh(allMachines, plan);
  for (const h of plan.holders)
    for (const d of h.receives) mesh.machines[h.machine]!.files.set(d.path, `old-${d.pair}`);
  return mesh;
}

async function rotate(plan: RotationPlan, transportFor: TransportFor, waitMs = 0) {
  const journalDir = mkdtempSync(path.join(os.tmpdir(), 'baton-journal-'));
  dirs.push(journalDir);
  const lines: string[] = [];
  const result = await runRotationPlain({
    id: 'rot-1',
    plan,
    deps: {
      transportFor,
      journalDir,
      operator: 't',
      resolve: { concurrency: 3 },
      concurrency: 3,
      waitMs,
      pollMs: 5,
    },
    yes: true,
    write: (l) => lines.push(l),
  });
  return { ...result, lines, journalDir };
}

const phaseOf = (text: string | undefined) =>
  text === undefined ? undefined : (JSON.parse(text) as { rotation?: string; phase?: string });

describe('records in the request of their step', () => {
  it('every end is staged only once its provider holds the preparing intent, every provider end renamed only under committing; each machine makes one request for its records and its ends', async () => {
    const plan = planRotation(meshInventory(3), { by: 'provider', name: 'pg-main' });
    const mesh = seeded(plan);
    provisionerOn(mesh.machines.db1!);
    const violations: string[] = [];
    const requests: string[] = [];
    const intentOf = (pairKey: string) => {
      const pair = plan.pairs.find((p) => p.key === pairKey)!;
      return phaseOf(mesh.machines[pair.providerMachine]!.files.get(intentPath(pair)));
    };
    const watched: TransportFor = (machine) => {
      const t = mesh.transportFor(machine);
      const pairOf = (file: string) =>
        plan.pairs.find((p) => p.providerPath === file || p.consumerPath === file)?.key;
      const wrapped: BoundTransport = {
        ...t,
        writeRecordsThen: (records, step) => {
          requests.push(`${machine} ${'stage' in step ? 'records+stage' : 'records+keep'}`);
          return t.writeRecordsThen.call(wrapped, records, step);
        },
        stage: async (files) => {
          for (const f of files) {
            const intent = intentOf(pairOf(f.path)!);
            if (intent?.rotation !== 'rot-1' || intent.phase !== 'preparing')
              violations.push(`${machine} staged ${f.path} under ${JSON.stringify(intent)}`);
          }
          return t.stage(files);
        },
        commit: async (paths) => {
          for (const p of paths.filter((q) => q.includes('/provides/'))) {
            const intent = intentOf(pairOf(p)!);
            if (intent?.phase !== 'committing')
              violations.push(`${machine} renamed ${p} under ${JSON.stringify(intent)}`);
          }
          return t.commit(paths);
        },
      };
      return wrapped;
    };
    const { code, state } = await rotate(plan, watched, 2_000);
    expect(code).toBe(0);
    expect(state.step).toBe('done');
    expect(violations).toEqual([]);
    // db1 provides pg-main (and consumes it as backup): its provider ends with its records, then its
    // consumer end; each web machine its record with its end; db1's committing intents with its keep.
    expect(requests.filter((r) => r.endsWith('records+stage')).sort()).toEqual([
      'db1 records+stage',
      'web1 records+stage',
      'web2 records+stage',
      'web3 records+stage',
    ]);
    expect(requests.filter((r) => r.endsWith('records+keep'))).toEqual(['db1 records+keep']);
    // No `preparing` or `committing` record went out on its own.
    for (const m of Object.values(mesh.machines))
      expect(m.calls.filter((c) => c === 'writeRecords').length).toBeLessThanOrEqual(4);
    expect(Object.values(intentPhasesOf(mesh))).toEqual(plan.pairs.map(() => 'finished'));
  });

  it("a provider machine whose committing intents cannot be written renames nothing and keeps nothing; the other provider's ends go live and finish; the refused pair is taken back whole", async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
    const mesh = seeded(plan);
    provisionerOn(mesh.machines.db1!);
    provisionerOn(mesh.machines.db2!);
    const refusing: TransportFor = (machine) => {
      const t = mesh.transportFor(machine);
      if (machine !== 'db2') return t;
      return {
        ...t,
        writeRecords: async (records) => {
          if (records.some((r) => phaseOf(r.text)?.phase === 'committing'))
            throw new Error('db2: read-only file system');
          return t.writeRecords(records);
        },
      };
    };
    const { code, lines, journalDir } = await rotate(plan, refusing, 2_000);
    const text = lines.join('\n');
    expect(text).toContain('db2: read-only file system');
    const audit = plan.pairs.find((p) => p.providerMachine === 'db2')!;
    const main = plan.pairs.find((p) => p.providerMachine === 'db1')!;
    const db2 = mesh.machines.db2!.files;
    // Nothing of db2's step ran: its provider end is the old one, nothing was kept beside it, and
    // its intent never said `committing`.
    expect(db2.get(audit.providerPath)).toBe(`old-${audit.key}`);
    expect(db2.has(previousPath(audit.providerPath))).toBe(false);
    expect(phaseOf(db2.get(intentPath(audit)))?.phase).not.toBe('committing');
    // The pair whose provider could record went live and finished, both ends the same new secret.
    const records = await readJournal(journalDir, 'rot-1');
    const prepared = records.find((r) => r.phase === 'prepared')!;
    const mainPrepared = prepared.pairs.find((p) => p.key === main.key)!;
    expect(secretDigest(mesh.machines.db1!.files.get(main.providerPath)!)).toBe(mainPrepared.digest);
    expect(secretDigest(mesh.machines.web1!.files.get(main.consumerPath)!)).toBe(mainPrepared.digest);
    expect(intentPhasesOf(mesh)[main.key]).toBe('finished');
    // The refused pair: both ends old, nothing of it staged anywhere.
    expect(mesh.machines.web1!.files.get(audit.consumerPath)).toBe(`old-${audit.key}`);
    expect(mesh.machines.web1!.files.has(`${audit.consumerPath}.next`)).toBe(false);
    expect(db2.has(`${audit.providerPath}.next`)).toBe(false);
    // Taken back, as after any machine's failed commit: exit 3, the failure and each pair named.
    expect(code, text).toBe(3);
    expect(text).toContain("rolled back (a machine's commit failed)");
    expect(text).toContain('pg-main:web1-app: finished');
    expect(text).toContain('pg-audit:web1-app: rolled back');
  });
});
