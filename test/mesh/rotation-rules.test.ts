import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { confirmationText, rotationFlow, startRotation } from '../../src/app/rotation-flow.js';
import { finishAfterLeaving } from '../../src/app/rotation-leave.js';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { rotationRunner, type RotationDeps } from '../../src/app/rotation-run-effect.js';
import { formatReceipt, secretDigest } from '../../src/mesh/digest.js';
import { JOURNAL_FILE, readJournal, type JournalRecord } from '../../src/mesh/journal.js';
import { resumeRotation } from '../../src/operations/resume.js';
import { planRotation, type RotationPlan } from '../../src/mesh/rotation-plan.js';
import { EXIT_CODES, type BatonError } from '../../src/errors.js';
import type { TransportFor } from '../../src/mesh/transport.js';
import { fakeMesh, provisionerOn, filesWithoutRecords, intentPhasesOf } from './fake-transport.js';
import { dyingAfterProviderCommit } from './dying-baton.js';
import { meshInventory } from './mesh-fixture.js';
import { withinBounds } from '../../src/transport/bound-transport.js';
import { abortedError, TransportError } from '../../src/mesh/transport.js';
import { suggester } from '../../src/suggest-command.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function journalDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-journal-'));
  dirs.push(dir);
  return dir;
}

function deps(transportFor: TransportFor, dir: string, waitMs = 0): RotationDeps {
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

async function rotate(plan: RotationPlan, transportFor: TransportFor, dir: string, waitMs = 0) {
  const lines: string[] = [];
  const result = await runRotationPlain({
    id: 'rot-1',
    plan,
    deps: deps(transportFor, dir, waitMs),
    yes: true,
    write: (l) => lines.push(l),
  });
  return { ...result, lines };
}

/** `mesh resume rot-1` on the two-consumer mesh, from the records read back. */
function resumeRot1(
  records: readonly JournalRecord[],
  transportFor: TransportFor,
  dir: string,
  waitMs: number,
) {
  return resumeRotation({
    id: 'rot-1',
    records,
    inventory: meshInventory(2),
    transportFor,
    concurrency: 2,
    waitMs,
    pollMs: 5,
    journalDir: dir,
    operator: 'test',
  });
}

/** Every holder starts with an old secret in each file it will receive. */
function seedOld(plan: RotationPlan, machines: ReturnType<typeof fakeMesh>['machines']) {
  for (const h of plan.holders)
    for (const d of h.receives) machines[h.machine]!.files.set(d.path, `old-${d.pair}`);
}

const allMachines = ['db1', 'db2', 'web1', 'web2', 'web3'];

describe('the all-or-nothing gate', () => {
  it('any single unresolved holder among all of them closes the gate: exit 4, zero files written anywhere, each named', async () => {
    const plan = planRotation(meshInventory(3), { by: 'provider', name: 'pg-main' });
    expect(plan.holders.length).toBe(4);
    for (const down of plan.holders.map((h) => h.machine)) {
      const mesh = fakeMesh(allMachines, plan);
      seedOld(plan, mesh.machines);
      const before = JSON.stringify(Object.entries(mesh.machines).map(([n, m]) => [n, [...m.files]]));
      mesh.machines[down]!.unreachable = 'ssh: connect to host port 22: Connection refused';
      const dir = journalDir();
      const { code, lines } = await rotate(plan, mesh.transportFor, dir);
      expect(code).toBe(4);
      expect(mesh.writes()).toBe(0);
      for (const m of Object.values(mesh.machines))
        expect(m.calls.filter((c) => c !== 'resolve')).toEqual([]);
      expect(filesWithoutRecords(mesh)).toBe(before);
      // Nothing was prepared: not even an intent was written.
      expect(intentPhasesOf(mesh)).toEqual({});
      expect(lines.join('\n')).toContain(`${down}: ssh: connect to host port 22: Connection refused`);
      expect(lines.join('\n')).toContain('Nothing was generated and nothing was sent');
      const records = await readJournal(dir, 'rot-1');
      expect(records.map((r) => r.phase)).toEqual(['gate-closed']);
      expect(records[0]!.results.find((r) => r.machine === down)).toEqual({
        machine: down,
        ok: false,
        reason: 'ssh: connect to host port 22: Connection refused',
      });
    }
  });

  it('a holder that never answers is unresolved after its timeout, and the gate closes', async () => {
    const plan = planRotation(meshInventory(1), { by: 'consumer', name: 'web1-app' });
    const mesh = fakeMesh(allMachines, plan);
    // db2 answers nothing; only the bound (the command's --timeout, here 0.1 s) ends its resolve.
    const never = (signal: AbortSignal) =>
      new Promise<void>((_, reject) =>
        signal.addEventListener('abort', () => reject(abortedError('db2', 'resolve', signal))),
      );
    const hanging: TransportFor = (name) =>
      name === 'db2'
        ? { ...mesh.transportFor(name), resolve: () => withinBounds({ timeoutMs: 100 }, never) }
        : mesh.transportFor(name);
    const lines: string[] = [];
    const { code } = await runRotationPlain({
      id: 'rot-1',
      plan,
      yes: true,
      write: (l) => lines.push(l),
      deps: { ...deps(hanging, journalDir()), resolve: { concurrency: 2 } },
    });
    expect(code).toBe(4);
    expect(mesh.writes()).toBe(0);
    expect(lines.join('\n')).toContain('db2: resolve: no answer within 0.1 s');
  });
});

describe('prepare', () => {
  it('a failure on one holder removes every staged file on every holder and leaves the live files as they were', async () => {
    const plan = planRotation(meshInventory(3), { by: 'provider', name: 'pg-main' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    mesh.machines.web3!.failOn = 'stage';
    const { code, lines } = await rotate(plan, mesh.transportFor, journalDir());
    expect(code).toBe(4);
    for (const h of plan.holders) {
      const files = mesh.machines[h.machine]!.files;
      expect([...files.keys()].filter((k) => k.endsWith('.next'))).toEqual([]);
      for (const d of h.receives) expect(files.get(d.path)).toBe(`old-${d.pair}`);
      expect(mesh.machines[h.machine]!.calls).toContain('unstage');
      expect(mesh.machines[h.machine]!.calls).not.toContain('commit');
    }
    expect(lines.join('\n')).toContain('web3: stage failed (injected)');
    expect(lines.join('\n')).toContain('Every staged file was removed.');
  });

  it('a holder that did not answer while staging is not waited on a second time: clean-up skips it, and it is named once', async () => {
    const plan = planRotation(meshInventory(3), { by: 'provider', name: 'pg-main' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    const asked: string[] = [];
    const transportFor: TransportFor = (name) => {
      const real = mesh.transportFor(name);
      return {
        ...real,
        unstage: async (paths) => {
          asked.push(name);
          return real.unstage(paths);
        },
        ...(name === 'web3'
          ? {
              stage: async () =>
                Promise.reject(new TransportError('web3', 'staging: no answer within 15 s', true)),
            }
          : {}),
      };
    };
    const { code, lines } = await rotate(plan, transportFor, journalDir());
    expect(code).toBe(4);
    expect(asked).not.toContain('web3');
    expect(new Set(asked)).toEqual(new Set(plan.holders.map((h) => h.machine).filter((m) => m !== 'web3')));
    for (const h of plan.holders)
      expect([...mesh.machines[h.machine]!.files.keys()].filter((k) => k.endsWith('.next'))).toEqual([]);
    const text = lines.join('\n');
    expect(text).toContain(
      'web3: staging: no answer within 15 s — not asked again to remove what it staged: it holds nothing new if staging failed before writing',
    );
    const outcome = text.slice(text.indexOf('Prepare failed'));
    expect(outcome.match(/web3/g)).toHaveLength(1);
    expect(text).toContain('Every staged file was removed.');
  });
});

/**
 * Wraps every consumer machine's commit to record, per renamed path, whether its provider's
 * receipt already carried the staged digest at that moment.
 */
function watchConsumerCommits(
  plan: RotationPlan,
  mesh: ReturnType<typeof fakeMesh>,
): { transportFor: TransportFor; seen: { path: string; receipted: boolean }[] } {
  const seen: { path: string; receipted: boolean }[] = [];
  const transportFor: TransportFor = (name) => {
    const real = mesh.transportFor(name);
    return {
      ...real,
      commit: async (paths) => {
        for (const p of paths) {
          const pair = plan.pairs.find((x) => x.consumerMachine === name && x.consumerPath === p);
          if (!pair) continue;
          const staged = mesh.machines[name]!.files.get(`${p}.next`);
          const receipt = mesh.machines[pair.providerMachine]!.files.get(pair.receiptPath);
          seen.push({
            path: p,
            receipted:
              staged !== undefined && receipt !== undefined && receipt.includes(secretDigest(staged)),
          });
        }
        return real.commit(paths);
      },
    };
  };
  return { transportFor, seen };
}

describe('commit and resume', () => {
  it('commits the provider ends, each consumer end only after its receipt; an unconfirmed pair is rolled back (exit 3) and nothing is left for a person', async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web2-app' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    provisionerOn(mesh.machines.db1!); // pg-main's provisioner runs; pg-audit's (db2) is stopped
    const audit = plan.pairs.find((p) => p.provider === 'pg-audit')!;
    // pg-audit's receipt still shows the old password: its provisioner never applied the new one.
    mesh.machines.db2!.files.set(
      audit.receiptPath,
      formatReceipt({
        role: audit.role,
        digest: secretDigest(`old-${audit.key}`),
        applied_at: '2026-11-30T00:00:00Z',
      }),
    );
    const watched = watchConsumerCommits(plan, mesh);
    const dir = journalDir();
    const { code, lines, state } = await rotate(plan, watched.transportFor, dir, 150);
    expect(code).toBe(3);
    expect(state.step === 'rolled-back' && state.applied).toEqual(['pg-main:web2-app']);
    expect(state.step === 'rolled-back' && state.windows['pg-main:web2-app']).toBeGreaterThanOrEqual(0);
    const text = lines.join('\n');
    expect(text).toContain(
      'Rotation rot-1 rolled back (not every provider confirmed in time): 1 of 2 credentials finished, 1 rolled back.',
    );
    expect(text).toContain(
      "pg-audit:web2-app: rolled back; db2:/var/lib/baton/mesh/provides/pg-audit/web2_app holds what it held before this rotation (no file, if it had none) and web2-app's staged file was removed; no receipt confirms the old password yet: the provisioner sets it again on its next cycle; if it had applied the new one, new connections of web2-app fail until then.",
    );
    expect(lines.at(-1)).toBe(
      'Nothing is left to do: every pair is finished or rolled back. Once the provisioner runs, rotate again with baton mesh rotate --pair pg-audit:web2-app',
    );
    expect(text).not.toContain('mesh resume');
    expect(watched.seen).toEqual([
      { path: plan.pairs.find((p) => p.provider === 'pg-main')!.consumerPath, receipted: true },
    ]);
    const records = await readJournal(dir, 'rot-1');
    expect(records.map((r) => r.phase)).toEqual(['resolved', 'prepared', 'committed', 'rolled-back']);
    expect(records.at(-1)!.applied).toEqual(['pg-main:web2-app']);
    expect(records.at(-1)!.rolled_back).toEqual([
      { pair: 'pg-audit:web2-app', result: 'rolled-back', receipt: 'unknown' },
    ]);
    // The receipt is removed with the roll-back: the provisioner sets the old password again and confirms it.
    expect(mesh.machines.db2!.files.has(audit.receiptPath)).toBe(false);
    expect(records[2]!.pairs.find((p) => p.key === audit.key)!.previous).toBe(
      secretDigest(`old-${audit.key}`),
    );
    // Every end as it was for pg-audit, no staged or kept file anywhere; pg-main's pair finished.
    expect(mesh.machines.db2!.files.get(audit.providerPath)).toBe(`old-${audit.key}`);
    expect(mesh.machines.web2!.files.get(audit.consumerPath)).toBe(`old-${audit.key}`);
    for (const m of Object.values(mesh.machines))
      expect([...m.files.keys()].filter((k) => k.endsWith('.next') || k.endsWith('.prev'))).toEqual([]);
    // Resume has nothing to finish from: it refuses and renames nothing.
    await expect(
      resumeRotation({
        id: 'rot-1',
        records,
        inventory: meshInventory(2),
        transportFor: mesh.transportFor,
        concurrency: 2,
        waitMs: 0,
        pollMs: 5,
        journalDir: dir,
        operator: 'test',
      }),
    ).rejects.toMatchObject({ code: 'refused' });
  });

  it('a consumer end that cannot be renamed after its receipt is never rolled back (the database has the new password): its live password is said to be refused, exit 3, resume or rollback named', async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web2-app' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    provisionerOn(mesh.machines.db1!);
    provisionerOn(mesh.machines.db2!);
    mesh.machines.web2!.failOn = 'commit';
    const dir = journalDir();
    const { code, lines } = await rotate(plan, mesh.transportFor, dir, 100);
    expect(code).toBe(3);
    const text = lines.join('\n');
    expect(text).toContain('web2: commit failed (injected)');
    expect(text).toContain(
      "web2 could not be reached (commit failed (injected)); its provider end stays live with the new password, so if pg-main applied it, web2-app's live password is now refused",
    );
    expect(text).not.toContain('still works');
    expect(lines.at(-1)).toBe(
      'Next: once the machines are reachable, finish with baton mesh resume rot-1 or take it back with baton mesh rollback rot-1',
    );
    const records = await readJournal(dir, 'rot-1');
    expect(records.map((r) => r.phase)).toEqual(['resolved', 'prepared', 'committed', 'rolled-back']);
    // The providers stay live with the new passwords; the consumer's new end waits staged for resume.
    const prepared = records[1]!;
    for (const p of prepared.pairs) {
      expect(secretDigest(mesh.machines[p.provider_machine]!.files.get(p.provider_path)!)).toBe(p.digest);
      expect(secretDigest(mesh.machines.web2!.files.get(`${p.consumer_path}.next`)!)).toBe(p.digest);
    }
    mesh.machines.web2!.failOn = undefined;
    const result = await resumeRot1(records, mesh.transportFor, dir, 100);
    expect([...result.applied].sort()).toEqual(['pg-audit:web2-app', 'pg-main:web2-app']);
    expect(result.resume.failures).toEqual([]);
  });

  it('a provider unreachable after its commit is told as unknown, never "old password still works", and names resume and rollback', async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    const partitioned: TransportFor = (machine) => {
      const t = mesh.transportFor(machine);
      if (machine !== 'db1') return t;
      // db1 answers the commit, then drops off the network.
      let committed = false;
      return {
        ...t,
        commit: async (paths) => (await t.commit(paths), (committed = true), undefined),
        readTexts: async (p) =>
          committed ? Promise.reject(new Error('db1: no route to host')) : t.readTexts(p),
        digests: async (p) => (committed ? Promise.reject(new Error('db1: no route to host')) : t.digests(p)),
      };
    };
    const cached = new Map<string, ReturnType<TransportFor>>();
    const transportFor: TransportFor = (m) =>
      cached.get(m) ?? (cached.set(m, partitioned(m)), cached.get(m)!);
    const { code, lines } = await rotate(plan, transportFor, journalDir(), 50);
    expect(code).toBe(3);
    const text = lines.join('\n');
    expect(text).toContain(
      'pg-main:web1-app: db1 could not be rolled back (db1: no route to host): whether pg-main took the new password is unknown; if it did, new connections of web1-app',
    );
    expect(text).not.toMatch(/old password still works/);
    expect(lines.at(-1)).toBe(
      'Next: once the machines are reachable, finish with baton mesh resume rot-1 or take it back with baton mesh rollback rot-1',
    );
    // web1's new end stays staged: both ways out remain possible.
    const main = plan.pairs.find((p) => p.provider === 'pg-main')!;
    expect(mesh.machines.web1!.files.has(`${main.consumerPath}.next`)).toBe(true);
  });

  it('resume refuses, renaming nothing, when a staged file is missing — it never invents a secret', async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
    const mesh = fakeMesh(allMachines, plan);
    const dir = journalDir();
    const dying = dyingAfterProviderCommit(mesh.transportFor);
    void rotate(plan, dying.transportFor, dir, 1000);
    await dying.dead;
    await vi.waitFor(
      async () => expect((await readJournal(dir, 'rot-1')).map((r) => r.phase)).toContain('committed'),
      { timeout: 10_000 },
    );
    const staged = [...mesh.machines.web1!.files.keys()].find((k) => k.endsWith('.next'))!;
    mesh.machines.web1!.files.delete(staged);
    const snapshot = JSON.stringify([...mesh.machines.web1!.files]);
    const records = await readJournal(dir, 'rot-1');
    const callsBefore = mesh.machines.web1!.calls.length;
    let error: BatonError | undefined;
    try {
      await resumeRot1(records, mesh.transportFor, dir, 0);
    } catch (e) {
      error = e as BatonError;
    }
    expect(error?.code).toBe('refused');
    expect(error?.where).toContain(`${staged} is missing`);
    expect(error?.changed).toBe('Nothing was renamed.');
    expect(JSON.stringify([...mesh.machines.web1!.files])).toBe(snapshot);
    expect(mesh.machines.web1!.calls.slice(callsBefore)).toEqual(['digests']);
    // One record says so, naming the machine and why; nothing is applied.
    const after = await readJournal(dir, 'rot-1');
    expect(after.map((r) => r.phase)).toEqual([...records.map((r) => r.phase), 'resume-failed']);
    expect(after.at(-1)!.results.find((r) => r.machine === 'web1')).toEqual({
      machine: 'web1',
      ok: false,
      reason: `web1: ${staged} is missing`,
    });
    expect(after.at(-1)!.applied).toBeUndefined();
  });
  it('resume whose intent cannot be recorded renames nothing and writes no record: gate-closed (exit 4), resume again once reachable', async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
    const mesh = fakeMesh(allMachines, plan);
    const dir = journalDir();
    const dying = dyingAfterProviderCommit(mesh.transportFor);
    void rotate(plan, dying.transportFor, dir, 1000);
    await dying.dead;
    await vi.waitFor(async () =>
      expect((await readJournal(dir, 'rot-1')).map((r) => r.phase)).toContain('committed'),
    );
    const records = await readJournal(dir, 'rot-1');
    const snapshot = JSON.stringify([...mesh.machines.web1!.files]);
    // db2 (pg-audit's provider) takes no record: its intent cannot be written.
    const noRecords: TransportFor = (machine) => {
      const t = mesh.transportFor(machine);
      return machine === 'db2'
        ? { ...t, writeRecords: () => Promise.reject(new Error('db2: read-only file system')) }
        : t;
    };
    let error: BatonError | undefined;
    try {
      await resumeRot1(records, noRecords, dir, 0);
    } catch (e) {
      error = e as BatonError;
    }
    expect(error?.code).toBe('gate-closed');
    expect(error && EXIT_CODES[error.code]).toBe(4);
    expect(error?.what).toContain('its intent could not be recorded on db2 (db2: read-only file system)');
    expect(error?.changed).toBe('Nothing was renamed.');
    expect(JSON.stringify([...mesh.machines.web1!.files])).toBe(snapshot);
    expect((await readJournal(dir, 'rot-1')).map((r) => r.phase)).toEqual(records.map((r) => r.phase));
  });
});

describe('applied', () => {
  it('counts a provider as applied only when its receipt carries the digest that was delivered', async () => {
    const plan = planRotation(meshInventory(2), { by: 'provider', name: 'pg-audit' });
    const mesh = fakeMesh(allMachines, plan);
    // pg-audit's provisioner applies web1's credential and reports a stale digest for web2's.
    mesh.machines.db2!.afterCommit = (paths, files) => {
      for (const p of paths) {
        const role = path.basename(p);
        const digest = role === 'web1_app' ? secretDigest(files.get(p)!) : secretDigest('stale');
        files.set(
          path.join(path.dirname(p), '.applied', role),
          formatReceipt({ role, digest, applied_at: '2026-11-30T00:00:00Z' }),
        );
      }
    };
    const dir = journalDir();
    const { code, state } = await rotate(plan, mesh.transportFor, dir, 200);
    expect(state.step).toBe('rolled-back');
    expect(code).toBe(3);
    expect(state.step === 'rolled-back' && state.applied).toEqual(['pg-audit:web1-app']);
    const last = (await readJournal(dir, 'rot-1')).at(-1) as JournalRecord;
    expect(last.phase).toBe('rolled-back');
    expect(last.applied).toEqual(['pg-audit:web1-app']);
    expect(last.rolled_back?.map((r) => r.pair)).toEqual(['pg-audit:web2-app']);
    expect(readFileSync(path.join(dir, JOURNAL_FILE), 'utf8')).not.toContain('[secret]');
  });

  it('a consumer rename done on the machine whose answer was lost is read back on the retry: applied, not "still staged" over a live file', async () => {
    const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web2-app' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    provisionerOn(mesh.machines.db1!);
    provisionerOn(mesh.machines.db2!);
    // web2's first consumer rename is done, then its answer is lost.
    let lost = false;
    const transportFor: TransportFor = (name) => {
      const real = mesh.transportFor(name);
      if (name !== 'web2') return real;
      return {
        ...real,
        commit: async (paths) => {
          await real.commit(paths);
          if (lost) return;
          lost = true;
          throw new TransportError('web2', 'no answer within 15 s');
        },
      };
    };
    const dir = journalDir();
    const { code, state, lines } = await rotate(plan, transportFor, dir, 2_000);
    expect(lost).toBe(true);
    expect(code, lines.join('\n')).toBe(0);
    expect(state.step).toBe('done');
    expect([...(state.step === 'done' ? state.applied : [])].sort()).toEqual([
      'pg-audit:web2-app',
      'pg-main:web2-app',
    ]);
    expect(lines.join('\n')).not.toMatch(/still staged|no staged file/);
    // Both consumer ends are live with what their providers hold, and nothing is left staged.
    for (const p of plan.pairs) {
      const web2 = mesh.machines.web2!.files;
      expect(web2.get(p.consumerPath)).toBe(mesh.machines[p.providerMachine]!.files.get(p.providerPath));
      expect(web2.has(`${p.consumerPath}.next`)).toBe(false);
    }
  });
});

describe('leaving an interactive rotation', () => {
  it('leaving while receipts are awaited ends the wait and rolls back, naming the next command with the flags the operator gave', async () => {
    const plan = planRotation(meshInventory(2), { by: 'provider', name: 'pg-main' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    // No provisioner answers: the provider ends are live and every consumer end waits staged.
    const rotationDeps = {
      ...deps(mesh.transportFor, journalDir(), 60_000),
      rollbackWaitMs: 50,
      stop: new AbortController(),
      suggester: suggester({ stateDir: '/srv/ctl a', inventory: '/etc/baton/mesh.yaml' }, true),
    };
    const flow = rotationFlow(startRotation('rot-1', plan), rotationRunner(rotationDeps));
    await vi.waitFor(() => expect(flow.getState().step).toBe('confirming'), { timeout: 10_000 });
    flow.dispatch({ type: 'typed', text: confirmationText(plan) });
    flow.dispatch({ type: 'confirmed' });
    await vi.waitFor(() => expect(flow.getState().step).toBe('applying'), { timeout: 10_000 });
    const lines: string[] = [];
    const started = Date.now();
    const code = await finishAfterLeaving(flow, rotationDeps, undefined, (line) => lines.push(line));
    // The 60 s wait ended at once (half of it is the bound, so a loaded machine cannot fail this).
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(code).toBe(3);
    expect(lines.join('\n')).toContain('rolled back (cancelled by the operator)');
    expect(lines.at(-1)).toContain(
      "baton --state-dir '/srv/ctl a' mesh rotate --pair pg-main:web1-app --pair pg-main:web2-app --pair pg-main:backup --inventory /etc/baton/mesh.yaml",
    );
    for (const p of plan.pairs)
      expect(mesh.machines[p.providerMachine]!.files.get(p.providerPath)).toBe(`old-${p.key}`);
  });

  it('a prepare the operator left before its commit started is taken back: every staged file removed, nothing live changed, exit 3', async () => {
    const plan = planRotation(meshInventory(2), { by: 'provider', name: 'pg-main' });
    const mesh = fakeMesh(allMachines, plan);
    seedOld(plan, mesh.machines);
    const before = JSON.stringify(Object.entries(mesh.machines).map(([n, m]) => [n, [...m.files]]));
    const rotationDeps = deps(mesh.transportFor, journalDir());
    const run = rotationRunner(rotationDeps);
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The commit would follow the "prepared" journal record; holding that record keeps the
    // operator's leaving strictly before the commit could start.
    const store = rotationFlow(startRotation('rot-1', plan), {
      async run(effect, context) {
        const event = await run.run(effect, context);
        if (effect.type === 'journal' && effect.phase === 'prepared') await held;
        return event;
      },
      failed: run.failed,
    });
    await vi.waitFor(() => expect(store.getState().step).toBe('confirming'), { timeout: 10_000 });
    store.dispatch({ type: 'typed', text: confirmationText(plan) });
    store.dispatch({ type: 'confirmed' });
    await vi.waitFor(() => expect(store.getState().step).toBe('committing'), { timeout: 10_000 });
    const lines: string[] = [];
    const code = finishAfterLeaving(store, rotationDeps, undefined, (line) => lines.push(line));
    release();
    expect(await code).toBe(3);
    expect(lines).toEqual([
      'Interrupted before the commit: every staged file was removed; nothing took effect.',
    ]);
    for (const m of Object.values(mesh.machines)) expect(m.calls).not.toContain('commit');
    expect(filesWithoutRecords(mesh)).toBe(before);
    expect(new Set(Object.values(intentPhasesOf(mesh)))).toEqual(new Set(['rolled-back']));
  });
});
