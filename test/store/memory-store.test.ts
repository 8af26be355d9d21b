import { describe, expect, it } from 'vitest';
import { BatonError } from '../../src/errors.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { contentEtag } from '../../src/store/etag.js';
import { batonErrorOf } from '../helpers/baton-error.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('the in-memory store', () => {
  it('reports nothing published, then the document with its content ETag after a create-only put', async () => {
    const store = new MemoryStore();
    expect(await store.get()).toBeUndefined();
    const { etag } = await store.put(bytes('one'), { kind: 'create-only' });
    expect(etag).toBe(contentEtag(bytes('one')));
    const got = await store.get();
    expect(new TextDecoder().decode(got!.body)).toBe('one');
    expect(got!.etag).toBe(etag);
  });

  it('refuses a second create-only put as store-changed and keeps the first document', async () => {
    const store = new MemoryStore({ document: bytes('first') });
    const before = store.snapshot();
    expect(await batonErrorOf(store.put(bytes('second'), { kind: 'create-only' }))).toMatchObject({
      code: 'store-changed',
      reason: 'published-meanwhile',
    });
    expect(store.snapshot()).toEqual(before);
  });

  it('replaces only when the if-match ETag is the one stored', async () => {
    const store = new MemoryStore({ document: bytes('first') });
    const read = (await store.get())!;
    store.setDocument(bytes('someone else'));
    const before = store.snapshot();
    expect(await batonErrorOf(store.put(bytes('mine'), { kind: 'if-match', etag: read.etag }))).toMatchObject(
      { code: 'store-changed', reason: 'replaced' },
    );
    expect(store.snapshot()).toEqual(before);
    const fresh = (await store.get())!;
    await store.put(bytes('mine'), { kind: 'if-match', etag: fresh.etag });
    expect(new TextDecoder().decode(store.document!.body)).toBe('mine');
  });

  it('refuses an if-match put against a removed document', async () => {
    const store = new MemoryStore({ document: bytes('first') });
    const read = (await store.get())!;
    store.deleteDocument();
    expect(await batonErrorOf(store.put(bytes('mine'), { kind: 'if-match', etag: read.etag }))).toMatchObject(
      { code: 'store-changed', reason: 'removed' },
    );
    expect(store.document).toBeUndefined();
  });

  it('plays a store that ignores preconditions when told to', async () => {
    const store = new MemoryStore({ enforcesPreconditions: false, document: bytes('first') });
    await store.put(bytes('second'), { kind: 'create-only' });
    expect(new TextDecoder().decode(store.document!.body)).toBe('second');
    expect((await store.checkConditionalWrites()).enforced).toBe(false);
  });

  it('reports enforced conditional writes and leaves no probe object behind', async () => {
    const store = new MemoryStore({ document: bytes('doc') });
    const before = store.snapshot();
    const check = await store.checkConditionalWrites();
    expect(check.enforced).toBe(true);
    expect(check.detail).toContain('refused a second create-only write');
    expect(store.snapshot()).toEqual(before);
  });

  it('fails an operation only when a test injected the failure, and only once', async () => {
    const store = new MemoryStore();
    const error = new BatonError('failed', { what: 'injected' });
    store.failNext('put', error);
    await expect(store.put(bytes('x'))).rejects.toBe(error);
    expect(store.document).toBeUndefined();
    await store.put(bytes('x'));
    expect(store.document).toBeDefined();
  });

  it('runs a hook before the next operation so a race can be staged between read and write', async () => {
    const store = new MemoryStore();
    expect(await store.get()).toBeUndefined();
    store.beforeNext('put', (s) => void s.setDocument(bytes('the winner')));
    expect(await batonErrorOf(store.put(bytes('the loser'), { kind: 'create-only' }))).toMatchObject({
      code: 'store-changed',
      reason: 'published-meanwhile',
    });
    expect(new TextDecoder().decode(store.document!.body)).toBe('the winner');
    expect(store.calls.map((c) => c.op)).toEqual(['get', 'put']);
    expect(store.calls[1]!.precondition).toEqual({ kind: 'create-only' });
  });

  it('hands out copies, so a caller mutating bytes cannot change what is stored', async () => {
    const store = new MemoryStore({ document: bytes('abc') });
    const got = (await store.get())!;
    got.body[0] = 0x7a;
    expect(new TextDecoder().decode(store.document!.body)).toBe('abc');
  });
});
