/**
 * Baton dies while writing a provider-wide rotation's `prepared` intents: one machine's records
 * are written one after another, so some pairs already say `prepared` (with what was staged)
 * and the last still says `preparing`, while every pair's ends are staged and the journal has
 * no `prepared` record. Found by the provider-wide SIGKILL test: `mesh rollback X` took back
 * the `prepared` pairs only and said "Nothing is left to do" over the staged one, and status
 * named the same roll-back again. Now one `mesh rollback X` takes back every pair.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runMeshRollback } from '../../src/commands/rotation-cli.js';
import { loadInventory } from '../../src/mesh/inventory.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import type { BoundTransport, MachineRecord, TransportFor } from '../../src/mesh/transport.js';
import { transportsFor } from '../../src/transport/make-transport.js';
import { capturingContext } from '../helpers/cli-context.js';
import { intentPhases, makeTempDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { rotationDyingIn } from './dying-baton.js';

let tmp: { dir: string; cleanup: () => void };
let inventory: string;
beforeEach(() => {
  tmp = makeTempDir('baton-rollback-strays-');
  inventory = writeLocalMesh(tmp.dir, { webs: 3 });
});
afterEach(() => tmp.cleanup());

/** A transport under which baton dies after writing `keep` of the records of its `prepared` write. */
function dyingInPreparedRecords(
  transportFor: TransportFor,
  keep: number,
): { transportFor: TransportFor; dead: Promise<void> } {
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
              const records = args[0] as MachineRecord[];
              if (key === 'writeRecords' && records.some((r) => r.text.includes('"phase":"prepared"'))) {
                await inner.writeRecords(records.slice(0, keep));
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

const staged = () =>
  (readdirSync(path.join(tmp.dir, 'machines'), { recursive: true }) as string[]).filter((f) =>
    f.endsWith('.next'),
  );

describe('a rotation killed while its providers were told "prepared"', () => {
  it('mesh rollback X takes back every pair, the one still "preparing" too, in one run', async () => {
    const inv = loadInventory(inventory);
    const state = path.join(tmp.dir, 'state');
    const dying = dyingInPreparedRecords(transportsFor(inv.machines, TEST_BOUNDS), 2);
    rotationDyingIn(dying, {
      id: 'rot-strays',
      plan: planRotation(inv, { by: 'provider', name: 'pg-main' }),
      inventory: inv,
      journalDir: state,
    });
    await dying.dead;
    const machines = path.join(tmp.dir, 'machines');
    const phases = Object.values(intentPhases(machines)).sort();
    expect(phases).toEqual(['prepared', 'prepared', 'preparing']);
    expect(staged()).toHaveLength(6);
    const { ctx, output } = capturingContext(state);
    const code = await runMeshRollback(ctx, 'rot-strays', {
      inventory,
      concurrency: '2',
      wait: '0.2',
      timeout: '5',
    });
    const stray = Object.entries(intentPhases(machines)).find(([, phase]) => phase !== 'rolled-back');
    expect(stray).toBeUndefined();
    expect(staged()).toEqual([]);
    expect(output()).toMatch(/pg-main:web\d-app: never finished preparing; its staged files were removed/);
    expect(code, output()).toBe(0);
  });
});
