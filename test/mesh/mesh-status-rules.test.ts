import { describe, expect, it } from 'vitest';
import { classifyPair } from '../../src/mesh/mesh-status.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { meshInventory } from './mesh-fixture.js';

describe('mesh status: an unreadable holder', () => {
  const plan = planRotation(meshInventory(1), { by: 'provider', name: 'pg-main' });
  const onDb1 = plan.pairs.find((p) => p.consumer === 'backup')!;
  const toWeb1 = plan.pairs.find((p) => p.consumer === 'web1-app')!;
  const down = { read: false as const, reason: 'ssh failed: Connection timed out' };

  it('names a machine holding both ends once', () => {
    expect(onDb1.providerMachine).toBe(onDb1.consumerMachine);
    expect(classifyPair(onDb1, { provider: down, consumer: down, receipt: undefined })).toEqual({
      state: 'unreachable',
      detail: 'could not read db1 (ssh failed: Connection timed out)',
    });
  });

  it('names each of two machines', () => {
    expect(
      classifyPair(toWeb1, {
        provider: down,
        consumer: { ...down, reason: 'no answer within 15 s' },
        receipt: undefined,
      }).detail,
    ).toBe('could not read db1 (ssh failed: Connection timed out) and web1 (no answer within 15 s)');
  });
});
