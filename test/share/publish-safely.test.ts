/**
 * The rules of docs/publishing.md ("Conditional writes") on the in-memory store: replace-unreadable is conditional on the bad
 * object's ETag, a sealed document is never replaced in the clear without --unseal, and a
 * write whose answer was lost is recognised as this host's own.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rotateAuthority, systemClock } from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import { storeChangedError } from '../../src/store/store-changed.js';
import { firstController, look, publish, replaceUnreadable } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { makeAuthority } from '../helpers/authority.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { cpSync } from 'node:fs';
import { batonErrorOf } from '../helpers/baton-error.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function host(store: MemoryStore, name: string, extra: Partial<ShareContext> = {}): ShareContext {
  const { dir, cleanup } = makeTempDir(`baton-safe-${name}-`);
  cleanups.push(cleanup);
  return {
    stateDir: path.join(dir, 'state'),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    ...extra,
    noSeal: extra.noSeal ?? true,
  };
}

describe('replace-unreadable', () => {
  it('writes if-match on the ETag of the bad object it read', async () => {
    const store = new MemoryStore();
    const ctx = host(store, 'a');
    await makeAuthority({ deployment: DEPLOYMENT, stateDir: ctx.stateDir, clock: systemClock });
    const bad = store.setDocument(new TextEncoder().encode('{"format":"baton.authority/1","deployment":"'));
    await replaceUnreadable(ctx);
    expect(store.calls.filter((c) => c.op === 'put')).toEqual([
      { op: 'put', precondition: { kind: 'if-match', etag: bad } },
    ]);
  });

  it('never overwrites a document another controller put there after the bad one was read', async () => {
    const store = new MemoryStore();
    const ctx = host(store, 'a');
    await makeAuthority({ deployment: DEPLOYMENT, stateDir: ctx.stateDir, clock: systemClock });
    store.setDocument(new TextEncoder().encode('garbage'));
    const repaired = new TextEncoder().encode('repaired by someone else');
    store.beforeNext('put', (s) => void s.setDocument(repaired));
    const error = await batonErrorOf(replaceUnreadable(ctx));
    expect(error).toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
      changed: 'Nothing was overwritten.',
    });
    expect(new TextDecoder().decode(store.document!.body)).toBe('repaired by someone else');
  });

  it('is refused for a host without an authority, saying that no command here fixes it, and nothing changes', async () => {
    const store = new MemoryStore();
    const ctx = host(store, 'fresh');
    store.setDocument(new TextEncoder().encode('garbage'));
    const seen = await look(ctx);
    expect(seen.verdict.kind === 'blocked' && seen.verdict.next).toContain(
      'No baton command fixes it from this host',
    );
    const before = store.snapshot();
    const error = await batonErrorOf(replaceUnreadable(ctx));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'nothing-to-publish',
      changed: expect.stringContaining('Nothing was written.'),
    });
    expect(error.next).toContain('No baton command fixes it from this host');
    expect(store.snapshot()).toEqual(before);
  });

  it('a damaged sealed document is replaced in the clear by a keyless host only with unseal; a host with the key replaces it sealed', async () => {
    const store = new MemoryStore();
    const key = new Uint8Array(randomBytes(32));
    const sealedHost = host(store, 'sealed', { sealKey: key });
    await firstController(sealedHost);
    // Damage the sealed part's structure (a nonce that is not base64): unusable for every host.
    const damaged = new TextDecoder()
      .decode(store.document!.body)
      .replace(/"nonce": "[^"]+"/, '"nonce": "!!!"');
    store.setDocument(new TextEncoder().encode(damaged));
    const keyless = host(store, 'keyless');
    cpSync(sealedHost.stateDir, keyless.stateDir, { recursive: true });
    expect((await look(keyless)).verdict).toMatchObject({ kind: 'blocked', unreadable: 'unusable' });
    const before = store.snapshot();
    const error = await batonErrorOf(replaceUnreadable(keyless));
    expect(error).toMatchObject({ code: 'refused', reason: 'would-unseal', where: store.location });
    expect(error.what).toContain('in the clear');
    expect(error.next).toContain('--unseal');
    expect(store.snapshot()).toEqual(before);

    const withKey = host(store, 'with-key', { sealKey: key });
    cpSync(sealedHost.stateDir, withKey.stateDir, { recursive: true });
    await replaceUnreadable(withKey);
    expect(new TextDecoder().decode(store.document!.body)).toContain('"sealed"');
    expect((await look(withKey)).verdict.kind).toBe('in-sync');
  });

  it('a keyless host that unseals on purpose replaces the damaged sealed document in the clear', async () => {
    const store = new MemoryStore();
    const sealedHost = host(store, 'sealed', { sealKey: new Uint8Array(randomBytes(32)) });
    await firstController(sealedHost);
    store.setDocument(
      new TextEncoder().encode(
        new TextDecoder().decode(store.document!.body).replace(/"nonce": "[^"]+"/, '"nonce": "!!!"'),
      ),
    );
    const keyless = host(store, 'keyless');
    cpSync(sealedHost.stateDir, keyless.stateDir, { recursive: true });
    await replaceUnreadable(keyless, { unseal: true });
    expect(new TextDecoder().decode(store.document!.body)).toContain('"files"');
  });
});

describe('once sealed, stays sealed', () => {
  it('a keyless host that rotated is refused a push over the sealed document; the store and its disk are unchanged', async () => {
    const store = new MemoryStore();
    const key = new Uint8Array(randomBytes(32));
    const sealed = host(store, 'sealed', { sealKey: key });
    await firstController(sealed);
    const keyless = host(store, 'keyless');
    cpSync(sealed.stateDir, keyless.stateDir, { recursive: true });
    await rotateAuthority(keyless.stateDir, DEPLOYMENT, { clock: systemClock });
    const seen = await look(keyless);
    const disk = snapshotDir(keyless.stateDir);
    const before = store.snapshot();
    const error = await batonErrorOf(publish(keyless, { seen: seen.verdict }));
    expect(error).toMatchObject({ code: 'refused', reason: 'would-unseal', where: store.location });
    expect(error.next).toContain('seal_key_file');
    expect(store.snapshot()).toEqual(before);
    expect(snapshotDir(keyless.stateDir)).toEqual(disk);
  });
});

describe('a lost response', () => {
  it("a 412 from the retry of this host's own create-only write is success on the first-controller path", async () => {
    const store = new MemoryStore();
    const ctx = host(store, 'a');
    // The write lands, then its answer is lost and the retry meets it: play that as a put
    // that stores the body and then fails its precondition.
    const realPut = store.put.bind(store);
    let first = true;
    store.put = async (body, precondition) => {
      const result = await realPut(body, precondition);
      if (first) {
        first = false;
        throw storeChangedError(store.location, 'published-meanwhile');
      }
      return result;
    };
    const outcome = await firstController(ctx);
    expect(outcome).toMatchObject({ kind: 'first-controller', wonRace: true });
  });

  it('a write that timed out after the store applied it is read back and counts as published: the reason field decides, not the words', async () => {
    const store = new MemoryStore();
    const ctx = host(store, 'a');
    await firstController(ctx);
    await rotateAuthority(ctx.stateDir, DEPLOYMENT, { clock: systemClock });
    const realPut = store.put.bind(store);
    store.put = async (body, precondition) => {
      await realPut(body, precondition);
      // Worded unlike any store on purpose: only `reason` may say the write could have landed.
      throw new BatonError('failed', { what: 'No answer.', where: store.location, reason: 'timed-out' });
    };
    const outcome = await publish(ctx);
    expect(outcome).toMatchObject({ kind: 'published' });
    expect((await look(ctx)).verdict.kind).toBe('in-sync');
  });

  it('a write the store refused (denied) is reported as it is, with no re-read taken for success', async () => {
    const store = new MemoryStore();
    const ctx = host(store, 'a');
    await firstController(ctx);
    await rotateAuthority(ctx.stateDir, DEPLOYMENT, { clock: systemClock });
    const denied = new BatonError('failed', {
      what: 'The connection closed before the answer; access was denied.',
      where: store.location,
      reason: 'denied',
    });
    store.failNext('put', denied);
    const before = store.snapshot();
    const calls = store.calls.length;
    const error = await batonErrorOf(publish(ctx));
    expect(error).toBe(denied);
    // The look under the lock reads once, then the put: no second get hunting for our own bytes.
    expect(store.calls.slice(calls).map((c) => c.op)).toEqual(['get', 'put']);
    expect(store.snapshot()).toEqual(before);
  });
});
