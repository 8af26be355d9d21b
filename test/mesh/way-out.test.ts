/**
 * Every state has a way out from this host, here after a lost answer: a provider machine slower
 * than `--timeout` while the rotation record was written. The record LANDED (`phase: preparing`)
 * but its answer was lost, so prepare failed (exit 4). Before, rotate refused naming `mesh rollback`,
 * and rollback and resume answered "never finished preparing … Start a new rotation": a loop.
 * Here the operator follows `mesh status --json`'s next steps, pasted as printed, to exit 0.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { PLAIN_SUGGESTER } from '../../src/suggest-command.js';
import { rollback } from '../../src/operations/rollback.js';
import { resume } from '../../src/operations/resume.js';
import type { OperationPorts } from '../../src/operations/operation-ports.js';
import { runRotationPlain } from '../../src/app/rotation-plain.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { formatReceipt, RECEIPTS_DIR, secretDigest } from '../../src/mesh/digest.js';
import { meshIdentity } from '../../src/mesh/mesh-identity.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { BoundTransport, MachineRecord, TransportFor } from '../../src/mesh/transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { makeTempDir, rotationRecords, snapshotDir, withoutRotationRecords } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { writeLocalMesh } from './mesh-fixture.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');
const PAIR = 'pg-main:web1-app';

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-way-out-');
  inventory = writeLocalMesh(tmp.dir);
});
afterEach(() => tmp.cleanup());

type Run = { code: number | null; stdout: string; stderr: string };

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

const live = (machine: string, file: string) =>
  path.join(tmp.dir, 'machines', machine, '/var/lib/baton/mesh', file);

function seedOld(): void {
  for (const m of ['web1', 'web2'])
    for (const file of [live(m, `consumes/pg-main/${m}_app`), live('db1', `provides/pg-main/${m}_app`)]) {
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, `old-${m}`, { mode: 0o600 });
    }
  // The provisioner applied them: each pair reads as applied before the rotation.
  for (const m of ['web1', 'web2']) {
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

/**
 * A transport whose machine `slow` performs a record write and then answers as a timeout would:
 * the record landed, the answer was lost. `phase` picks the first write to lose (a provider
 * intent at that phase); `every` loses every later write's answer too (the machine stays slow).
 */
function answerLostAfterWrite(
  transportFor: TransportFor,
  slow: string,
  phase: string,
  every: boolean,
): TransportFor {
  let losing = false;
  let lostOnce = false;
  const wrapped = new Map<string, BoundTransport>();
  const loseAnswer = (machine: string, records: readonly MachineRecord[]) => {
    const phases = records.map((r) => (JSON.parse(r.text) as { phase?: string }).phase);
    if (!lostOnce && phases.includes(phase)) losing = true;
    if (!losing) return;
    lostOnce = true;
    if (!every) losing = false;
    throw new Error(`${machine}: no answer within 15 s`);
  };
  return (machine) => {
    let t = wrapped.get(machine);
    if (!t) {
      const inner = transportFor(machine);
      t =
        machine !== slow
          ? inner
          : {
              ...inner,
              machine: inner.machine,
              writeRecords: async (records) => {
                await inner.writeRecords(records);
                loseAnswer(machine, records);
              },
              // The records and the step they announce are one request: both done, its answer lost.
              writeRecordsThen: async (records, step) => {
                const answer = await inner.writeRecordsThen(records, step);
                loseAnswer(machine, records);
                return answer;
              },
            };
      wrapped.set(machine, t);
    }
    return t;
  };
}

const CASES: readonly { phase: string; every: boolean; exit: number }[] = [
  { phase: 'preparing', every: false, exit: 4 },
  { phase: 'preparing', every: true, exit: 4 },
  { phase: 'prepared', every: false, exit: 4 },
  { phase: 'prepared', every: true, exit: 4 },
  { phase: 'committing', every: false, exit: 3 },
  { phase: 'committing', every: true, exit: 3 },
];

describe('every state has a way out from this host', () => {
  it.each(CASES)(
    'the $phase record landed but its answer was lost (every later answer too: $every): status, followed as printed, ends at exit 0 and nothing else changed',
    async ({ phase, every, exit }) => {
      seedOld();
      const stateDir = path.join(tmp.dir, 'state');
      const machines = path.join(tmp.dir, 'machines');
      const status0 = await batonWords(['--state-dir', stateDir, 'mesh', 'status', '--inventory', inventory]);
      expect(status0.code, status0.stdout).toBe(0);
      const before = snapshotDir(machines);
      const inv = loadInventory(inventory);
      const inner = transportsFor(inv.machines, TEST_BOUNDS);
      const lines: string[] = [];
      const { code } = await runRotationPlain({
        id: 'rot-lost',
        plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
        yes: true,
        write: (line) => lines.push(line),
        deps: {
          transportFor: answerLostAfterWrite(inner, 'db1', phase, every),
          journalDir: stateDir,
          operator: 't',
          resolve: { concurrency: 2 },
          concurrency: 2,
          waitMs: 2_000,
          pollMs: 10,
          mesh: meshIdentity(inv),
        },
      });
      expect(code, lines.join('\n')).toBe(exit);
      expect(lines.join('\n')).toContain('no answer within 15 s');
      const intent = Object.values(rotationRecords(machines)).find(
        (r) => r.pair === PAIR && r.end === 'provides',
      )!;
      console.log(
        `${phase}${every ? ' (every answer lost)' : ''}: exit ${code}, the provider's record says ${String(intent.phase)}`,
      );

      const ran: string[] = [];
      let last = -1;
      for (let i = 0; i < 5; i++) {
        const status = await batonWords([
          '--state-dir',
          stateDir,
          'mesh',
          'status',
          '--inventory',
          inventory,
          '--json',
        ]);
        last = status.code ?? -1;
        if (status.code === 0) break;
        const doc = JSON.parse(status.stdout) as { pairs: { next_steps: { command: string }[] }[] };
        const step = doc.pairs.find((p) => p.next_steps.length > 0)?.next_steps[0];
        if (!step) throw new Error(`status exits ${status.code} and suggests nothing: ${status.stdout}`);
        const r = await batonWords(step.command.split(' ').slice(1));
        // The command without its global flags (the suggester puts --state-dir first): `mesh rollback <id>`.
        ran.push(`${step.command.replace(/^baton (--\S+ \S+ )*/, '').replace(/ --.*/, '')} → ${r.code}`);
        expect(r.code, `${step.command}: ${r.stdout}${r.stderr}`).toBe(0);
      }
      console.log(`  followed status: ${ran.join(' ; ') || '(nothing to do)'}`);
      expect(last).toBe(0);
      // Nothing else changed: the same files with the same contents; only the rotation's records differ.
      expect(withoutRotationRecords(snapshotDir(machines))).toEqual(withoutRotationRecords(before));
      const after = Object.values(rotationRecords(machines)).find(
        (r) => r.pair === PAIR && r.end === 'provides',
      )!;
      expect([after.rotation, after.phase]).toEqual(['rot-lost', 'rolled-back']);
      expect(existsSync(`${live('web1', 'consumes/pg-main/web1_app')}.next`)).toBe(false);
      expect(readFileSync(live('web1', 'consumes/pg-main/web1_app'), 'utf8')).toBe('old-web1');
      // And a rotation may start again.
      const again = await batonWords([
        '--state-dir',
        stateDir,
        'mesh',
        'plan',
        '--pair',
        PAIR,
        '--inventory',
        inventory,
      ]);
      expect(again.code, again.stdout + again.stderr).toBe(0);
    },
    60_000,
  );

  it('case 1 with the provider still slow when the operator acts: rollback says it cannot tell and changes nothing (exit 3, the same command again), resume names the rollback, and once the machine answers status leads to exit 0', async () => {
    seedOld();
    const stateDir = path.join(tmp.dir, 'state');
    const machines = path.join(tmp.dir, 'machines');
    const inv = loadInventory(inventory);
    const inner = transportsFor(inv.machines, TEST_BOUNDS);
    const before = snapshotDir(machines);
    const { code } = await runRotationPlain({
      id: 'rot-lost',
      plan: planRotation(inv, { by: 'pair', provider: 'pg-main', consumer: 'web1-app' }),
      yes: true,
      write: () => undefined,
      deps: {
        transportFor: answerLostAfterWrite(inner, 'db1', 'preparing', false),
        journalDir: stateDir,
        operator: 't',
        resolve: { concurrency: 2 },
        concurrency: 2,
        waitMs: 2_000,
        pollMs: 10,
        mesh: meshIdentity(inv),
      },
    });
    expect(code).toBe(4);
    const stuck = snapshotDir(machines);
    const slowReads: TransportFor = (machine) => {
      const t = inner(machine);
      return machine === 'db1'
        ? { ...t, machine: t.machine, digests: () => Promise.reject(new Error('no answer within 15 s')) }
        : t;
    };
    const out: string[] = [];
    const ports = (transportFor: TransportFor): OperationPorts => ({
      inventory: inv,
      journal: { dir: stateDir, mesh: meshIdentity(inv) },
      transports: { transportFor, close: () => Promise.resolve() },
      operator: 't',
      suggester: PLAIN_SUGGESTER,
      out: (line) => out.push(line),
    });
    const blind = await rollback(ports(slowReads), { id: 'rot-lost', concurrency: 2, waitMs: 1_000 }).catch(
      (e: unknown) => e,
    );
    expect(blind).toBeInstanceOf(BatonError);
    const e = blind as BatonError;
    expect(e.exitCode).toBe(3);
    expect(e.what).toContain('cannot tell what rotation rot-lost left on db1 (no answer within 15 s)');
    expect(e.next ?? '').toContain('baton mesh rollback rot-lost');
    expect(e.changed).toBe('Nothing was changed on any machine.');
    expect(snapshotDir(machines)).toEqual(stuck);
    // Resume cannot finish what never prepared: it names the way out, not "start a new rotation".
    const resumed = await resume(ports(inner), { id: 'rot-lost', concurrency: 2, waitMs: 1_000 }).catch(
      (x: unknown) => x,
    );
    expect(resumed).toBeInstanceOf(BatonError);
    expect((resumed as BatonError).exitCode).toBe(3);
    expect((resumed as BatonError).what).toContain('Rotation rot-lost never finished preparing');
    expect((resumed as BatonError).next ?? '').toContain('baton mesh rollback rot-lost');
    expect(snapshotDir(machines)).toEqual(stuck);
    // The machine answers again: the rollback takes it back, and a second one finds nothing left.
    expect(await rollback(ports(inner), { id: 'rot-lost', concurrency: 2, waitMs: 1_000 })).toBe(0);
    expect(withoutRotationRecords(snapshotDir(machines))).toEqual(withoutRotationRecords(before));
    out.length = 0;
    expect(await rollback(ports(inner), { id: 'rot-lost', concurrency: 2, waitMs: 1_000 })).toBe(0);
    expect(out.join('\n')).toContain('nothing is left to take back');
    const status = await batonWords(['--state-dir', stateDir, 'mesh', 'status', '--inventory', inventory]);
    expect(status.code, status.stdout).toBe(0);
  }, 60_000);
});
