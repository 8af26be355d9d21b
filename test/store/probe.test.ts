import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { probeConditionalWrites } from '../../src/store/probe.js';

describe('the conditional-write probe', () => {
  it('says so when the probe object could not be removed, keeping the answer', async () => {
    const created: string[] = [];
    const check = await probeConditionalWrites({
      location: 'test://store',
      createOnly: async (name) => {
        if (created.includes(name)) throw new BatonError('store-changed', { what: 'exists' });
        created.push(name);
      },
      remove: async () => {
        throw new Error('EACCES');
      },
    });
    expect(check.enforced).toBe(true);
    expect(check.detail).toContain(`The probe object ${created[0]} could not be removed`);
  });

  it('removes its probe and passes on a failure that is not a refused precondition', async () => {
    const removed: string[] = [];
    const failure = new BatonError('failed', { what: 'The bucket does not exist.' });
    await expect(
      probeConditionalWrites({
        location: 'test://store',
        createOnly: async () => {
          throw failure;
        },
        remove: async (name) => void removed.push(name),
      }),
    ).rejects.toBe(failure);
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatch(/^\.baton-probe-[0-9a-f]{16}$/);
  });
});
