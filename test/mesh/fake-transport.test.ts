import { describe, expect, it } from 'vitest';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { Secret } from '../../src/mesh/secret.js';
import { fakeMesh, UnarrangedCall } from './fake-transport.js';
import { meshInventory } from './mesh-fixture.js';

// The rule tests trust this fake to fail them when a rotation strays; these prove it does.
describe('the fake transport is strict', () => {
  const plan = planRotation(meshInventory(2), { by: 'consumer', name: 'web1-app' });
  const names = meshInventory(2).machines.map((m) => m.name);
  const holder = plan.holders[0]!;
  const outsider = names.find((n) => !plan.holders.some((h) => h.machine === n))!;

  it('throws on a path the plan does not deliver to that holder, and writes nothing', async () => {
    const mesh = fakeMesh(names, plan);
    const stray = `${holder.receives[0]!.path}-elsewhere`;
    await expect(
      mesh.transportFor(holder.machine).stage([{ path: stray, secret: Secret.fromText('x') }]),
    ).rejects.toBeInstanceOf(UnarrangedCall);
    expect(mesh.writes()).toBe(0);
    expect(mesh.machines[holder.machine]!.files.size).toBe(0);
    expect(mesh.unarranged).toEqual([
      `stage of ${stray} on ${holder.machine}, which the plan does not deliver there`,
    ]);
  });

  it('throws on any call to a machine the plan does not name as a holder, and on a machine that does not exist', async () => {
    const mesh = fakeMesh(names, plan);
    await expect(mesh.transportFor(outsider).resolve()).rejects.toBeInstanceOf(UnarrangedCall);
    expect(() => mesh.transportFor('nowhere')).toThrow(UnarrangedCall);
    expect(mesh.machines[outsider]!.calls).toEqual([]);
  });

  it('answers the calls the plan arranges', async () => {
    const mesh = fakeMesh(names, plan);
    const paths = holder.receives.map((d) => d.path);
    await mesh.transportFor(holder.machine).resolve();
    await mesh
      .transportFor(holder.machine)
      .stage(paths.map((path) => ({ path, secret: Secret.fromText('s') })));
    await mesh.transportFor(holder.machine).commit(paths);
    expect(mesh.machines[holder.machine]!.calls).toEqual(['resolve', 'stage', 'commit']);
    expect(mesh.unarranged).toEqual([]);
  });
});
