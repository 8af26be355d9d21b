import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { probeConditionalWrites } from '../../src/store/probe.js';

describe('the conditional-write probe', () => {
  it('says so when the probe object could not be removed, keeping the answer', async () => {
    const etags = new Map<string, string>();
    let n = 0;
    const check = await probeConditionalWrites({
      location: 'test://store',
      write: async (name, _body, precondition) => {
        const current = etags.get(name);
        if (precondition.kind === 'create-only' && current)
          throw new BatonError('store-changed', { what: 'exists' });
        if (precondition.kind === 'if-match' && current !== precondition.etag)
          throw new BatonError('store-changed', { what: 'stale' });
        const etag = `"${++n}"`;
        etags.set(name, etag);
        return { etag };
      },
      remove: async () => {
        throw new Error('EACCES');
      },
    });
    expect(check.enforced).toBe(true);
    expect(check.failed).toEqual([]);
    expect(check.detail).toContain(`The probe object ${[...etags.keys()][0]} could not be removed`);
  });

  it('removes its probe and passes on a failure that is not a refused precondition', async () => {
    const removed: string[] = [];
    const failure = new BatonError('failed', { what: 'The bucket does not exist.' });
    await expect(
      probeConditionalWrites({
        location: 'test://store',
        write: async () => {
          throw failure;
        },
        remove: async (name) => void removed.push(name),
      }),
    ).rejects.toBe(failure);
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatch(/^\.baton-probe-[0-9a-f]{16}$/);
  });

  it('reports a store that honours create-only but drops If-Match as not enforcing, naming the replace probe', async () => {
    const store = new MemoryStore({ dropsIfMatch: true });
    const check = await store.checkConditionalWrites();
    expect(check.enforced).toBe(false);
    expect(check.failed).toEqual(['replace-if-unchanged']);
    expect(check.detail).toContain('a replace with a stale ETag (If-Match) was accepted');
    expect(store.snapshot()).toEqual({});
  });

  it('reports a store that drops only If-None-Match as failing the create-only probe alone, not If-Match', async () => {
    const store = new MemoryStore({ dropsIfNoneMatch: true });
    const check = await store.checkConditionalWrites();
    expect(check.enforced).toBe(false);
    expect(check.failed).toEqual(['create-only']);
    expect(check.detail).toContain('If-None-Match');
    expect(check.detail).not.toContain('If-Match)');
    expect(store.snapshot()).toEqual({});
  });

  it('reports a store that ignores every precondition as failing both probes', async () => {
    const check = await new MemoryStore({ enforcesPreconditions: false }).checkConditionalWrites();
    expect(check.failed).toEqual(['create-only', 'replace-if-unchanged']);
  });

  it('passes a store that enforces both and leaves nothing behind', async () => {
    const store = new MemoryStore();
    const check = await store.checkConditionalWrites();
    expect(check).toMatchObject({ enforced: true, failed: [] });
    expect(store.snapshot()).toEqual({});
  });
});
