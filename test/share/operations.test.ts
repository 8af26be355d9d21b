import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, statSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  readLocalAuthority,
  retireAuthority,
  rotateAuthority,
  withAuthorityLock,
  type Clock,
  type LocalAuthority,
} from '../../src/authority/index.js';
import { BatonError, isBatonError } from '../../src/errors.js';
import { confirmationPrefix, type Fingerprint } from '../../src/pki/fingerprint-type.js';
import { decodeDocument } from '../../src/share/document.js';
import { adopt, firstController, force, leave, look, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import type { Verdict } from '../../src/share/types.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';

// A clock that moves one second per reading: every superseded stamp is distinct, and no
// test depends on wall time.
function steppingClock(start = Date.UTC(2026, 10, 30, 10, 0, 0)): Clock {
  let t = start;
  return { now: () => new Date((t += 1000)) };
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

/**
 * A host whose state dir exists (with its ca.lock, as after any earlier command) and holds no
 * authority: "nothing changed" then means nothing at all, not even the lock file appearing.
 */
async function host(store: MemoryStore, name: string): Promise<ShareContext> {
  const { dir, cleanup } = makeTempDir(`baton-ops-${name}-`);
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  await withAuthorityLock(stateDir, async () => undefined);
  return { stateDir, deployment: DEPLOYMENT, store, clock: steppingClock(), host: name, noSeal: true };
}

async function local(ctx: ShareContext): Promise<LocalAuthority> {
  return readLocalAuthority(ctx.stateDir, ctx.deployment);
}

async function fingerprintOf(ctx: ShareContext): Promise<Fingerprint> {
  const l = await local(ctx);
  if (l.state !== 'whole') throw new Error(`expected a whole authority in ${ctx.stateDir}, got ${l.state}`);
  return l.current.fingerprint;
}

/** A controller that is the first of its deployment on `store`. */
async function firstOn(
  store: MemoryStore,
  name: string,
): Promise<{ ctx: ShareContext; fingerprint: Fingerprint }> {
  const ctx = await host(store, name);
  const outcome = await firstController(ctx);
  if (outcome.kind !== 'first-controller') throw new Error(outcome.kind);
  return { ctx, fingerprint: outcome.fingerprint };
}

/** Runs `fn`, expecting a BatonError, and asserts neither the state dir nor the store changed. */
async function refusedWithoutChange(
  ctx: ShareContext,
  store: MemoryStore,
  fn: () => Promise<unknown>,
): Promise<BatonError> {
  const diskBefore = snapshotDir(ctx.stateDir);
  const storeBefore = store.snapshot();
  const bodyBefore = store.document?.body;
  let caught: unknown;
  try {
    await fn();
  } catch (error) {
    caught = error;
  }
  expect(isBatonError(caught), `expected a BatonError, got ${String(caught)}`).toBe(true);
  expect(snapshotDir(ctx.stateDir)).toEqual(diskBefore);
  expect(store.snapshot()).toEqual(storeBefore);
  expect(store.document?.body).toEqual(bodyBefore);
  return caught as BatonError;
}

function documentOf(store: MemoryStore) {
  const stored = store.document;
  if (!stored) throw new Error('nothing published');
  return JSON.parse(new TextDecoder().decode(stored.body)) as Record<string, unknown> & { files: unknown };
}

describe('first controller', () => {
  it('a fresh host with nothing published mints, publishes create-only, then installs the same authority with its key 0600', async () => {
    const store = new MemoryStore();
    const ctx = await host(store, 'ctl-a');
    const outcome = await firstController(ctx);
    expect(outcome).toMatchObject({ kind: 'first-controller', wonRace: true });
    if (outcome.kind !== 'first-controller') return;
    expect(store.calls.filter((c) => c.op === 'put')).toEqual([
      { op: 'put', precondition: { kind: 'create-only' } },
    ]);
    expect(documentOf(store)).toMatchObject({
      fingerprint: outcome.fingerprint,
      previous_fingerprint: null,
      deployment: DEPLOYMENT,
      published_by: 'ctl-a',
    });
    expect(await fingerprintOf(ctx)).toBe(outcome.fingerprint);
    expect(statSync(path.join(ctx.stateDir, 'ca', 'ca.key')).mode & 0o777).toBe(0o600);
  });

  it('installs nothing when the publish fails: the host stays fresh and can try again', async () => {
    const store = new MemoryStore();
    const ctx = await host(store, 'ctl-a');
    store.failNext(
      'put',
      new BatonError('failed', { what: 'The store is unreachable.', where: store.location }),
    );
    const error = await firstController(ctx).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'failed' });
    expect((await local(ctx)).state).toBe('fresh');
    expect(store.document).toBeUndefined();
    expect((await firstController(ctx)).kind).toBe('first-controller');
  });

  it('a controller that loses the race at the put discards its mint and adopts the winner: one authority, held by both', async () => {
    const store = new MemoryStore();
    const a = await host(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    let bOutcome: unknown;
    // B runs its whole first-controller walk between A's decision and A's put.
    store.beforeNext('put', async () => {
      bOutcome = await firstController(b);
    });
    const aOutcome = await firstController(a);
    expect(bOutcome).toMatchObject({ kind: 'first-controller', wonRace: true });
    expect(aOutcome).toMatchObject({ kind: 'first-controller', wonRace: false });
    const published = documentOf(store).fingerprint;
    expect(await fingerprintOf(a)).toBe(published);
    expect(await fingerprintOf(b)).toBe(published);
    expect(statSync(path.join(a.stateDir, 'ca', 'ca.key')).mode & 0o777).toBe(0o600);
  });

  it('two controllers racing at once on a fresh deployment end with exactly one document, both holding its fingerprint', async () => {
    const store = new MemoryStore();
    const a = await host(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    const outcomes = await Promise.all([firstController(a), firstController(b)]);
    expect(outcomes.map((o) => o.kind)).toEqual(['first-controller', 'first-controller']);
    expect(outcomes.filter((o) => o.kind === 'first-controller' && o.wonRace)).toHaveLength(1);
    expect(Object.keys(store.snapshot())).toEqual(['authority.json']);
    const published = documentOf(store).fingerprint;
    expect(await fingerprintOf(a)).toBe(published);
    expect(await fingerprintOf(b)).toBe(published);
  });

  it('a host that already holds an authority is not a first controller, and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    const error = await refusedWithoutChange(ctx, store, () => firstController(ctx));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'not-allowed',
      changed: 'Nothing was written.',
      where: path.join(ctx.stateDir, 'ca'),
    });
    expect(error.what).toContain('in sync');
  });
});

describe('adopt: three outcomes, never two', () => {
  it('says nothing-published when the store is empty, and writes nothing', async () => {
    const store = new MemoryStore();
    const ctx = await host(store, 'ctl-b');
    const before = snapshotDir(ctx.stateDir);
    expect(await adopt(ctx)).toEqual({ kind: 'nothing-published' });
    expect(snapshotDir(ctx.stateDir)).toEqual(before);
    expect(store.document).toBeUndefined();
  });

  it('installs the published authority on a fresh host: same fingerprint, key 0600', async () => {
    const store = new MemoryStore();
    const { fingerprint } = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    const storeBefore = store.snapshot();
    expect(await adopt(b)).toEqual({ kind: 'installed', fingerprint });
    expect(await fingerprintOf(b)).toBe(fingerprint);
    expect(statSync(path.join(b.stateDir, 'ca', 'ca.key')).mode & 0o777).toBe(0o600);
    expect(store.snapshot()).toEqual(storeBefore);
  });

  it('says already-held when this host holds the published authority, and changes nothing', async () => {
    const store = new MemoryStore();
    const { ctx, fingerprint } = await firstOn(store, 'ctl-a');
    const before = snapshotDir(ctx.stateDir);
    const storeBefore = store.snapshot();
    expect(await adopt(ctx)).toEqual({ kind: 'already-held', fingerprint });
    expect(snapshotDir(ctx.stateDir)).toEqual(before);
    expect(store.snapshot()).toEqual(storeBefore);
  });

  it('a host that lost its files (marker present) adopts the published authority rather than minting', async () => {
    const store = new MemoryStore();
    const { fingerprint } = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    await adopt(b);
    rmSync(path.join(b.stateDir, 'ca'), { recursive: true });
    expect((await local(b)).state).toBe('lost');
    expect((await look(b)).verdict).toEqual({ kind: 'adopt', published: fingerprint, lostMarker: true });
    expect(await adopt(b)).toEqual({ kind: 'installed', fingerprint });
    expect(await fingerprintOf(b)).toBe(fingerprint);
  });

  it('a host that lost its files with nothing published is blocked, never minted over, and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    store.deleteDocument();
    rmSync(path.join(ctx.stateDir, 'ca'), { recursive: true });
    for (const act of [() => adopt(ctx), () => firstController(ctx), () => publish(ctx), () => force(ctx)]) {
      const error = await refusedWithoutChange(ctx, store, act);
      expect(error).toMatchObject({ code: 'refused', reason: 'blocked', changed: 'Nothing was written.' });
      expect(error.what).toContain('authority-created');
    }
  });

  it('an expired published authority is refused before anything is installed, naming its expiry and what to do, and nothing changes', async () => {
    const store = new MemoryStore();
    const ancient = await host(store, 'ctl-old');
    // Minted 11 years before the adopting host's clock: the 10-year certificate has expired.
    const outcome = await firstController({ ...ancient, clock: steppingClock(Date.UTC(2015, 10, 30)) });
    expect(outcome.kind).toBe('first-controller');
    const fresh = await host(store, 'ctl-new');
    const error = await refusedWithoutChange(fresh, store, () => adopt(fresh));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'expired',
      where: store.location,
      changed: 'Nothing was written.',
    });
    expect(error.what).toContain('expired on 2025-11-');
    expect(error.next).toContain('baton ca rotate');
    expect((await local(fresh)).state).toBe('fresh');
  });

  it("a published authority that is not valid yet (the publisher's clock runs a day ahead) is refused naming both times, and nothing changes", async () => {
    const store = new MemoryStore();
    const ahead = await host(store, 'ctl-ahead');
    await firstController({ ...ahead, clock: steppingClock(Date.UTC(2026, 11, 1, 10, 0, 0)) });
    const fresh = await host(store, 'ctl-now');
    const error = await refusedWithoutChange(fresh, store, () => adopt(fresh));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'not-yet-valid',
      where: store.location,
      changed: 'Nothing was written.',
    });
    expect(error.what).toContain('is not valid until 2026-12-01T09:00');
    expect(error.what).toContain("this host's clock says 2026-11-30T10:00");
    expect((await local(fresh)).state).toBe('fresh');
  });
});

describe('re-deciding inside the lock', () => {
  it('a first controller whose store was published to after it looked adopts the winner instead of minting a second authority', async () => {
    const store = new MemoryStore();
    const late = await host(store, 'ctl-late');
    const seen = (await look(late)).verdict;
    expect(seen).toEqual({ kind: 'first-controller' });
    const winner = await firstOn(store, 'ctl-early');
    const outcome = await firstController(late, { seen });
    expect(outcome).toEqual({ kind: 'first-controller', fingerprint: winner.fingerprint, wonRace: false });
    expect(await fingerprintOf(late)).toBe(winner.fingerprint);
    expect(store.calls.filter((c) => c.op === 'put')).toHaveLength(1);
  });

  it('an adopt whose host meanwhile came to hold an authority is refused with what changed on this host, and nothing changes', async () => {
    const store = new MemoryStore();
    const { fingerprint } = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    const seen = (await look(b)).verdict;
    expect(seen).toEqual({ kind: 'adopt', published: fingerprint, lostMarker: false });
    await adopt(b); // another process on this host adopted first
    const error = await refusedWithoutChange(b, store, () => adopt(b, { seen }));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'local-changed',
      where: path.join(b.stateDir, 'ca'),
      changed: 'Nothing was overwritten.',
    });
    expect(error.what).toContain(`Now: This host holds the published authority ${fingerprint}`);
  });
});

describe('a sealed document', () => {
  it('is adopted by a host with the seal key, and refused — nothing installed — without it', async () => {
    const store = new MemoryStore();
    const sealKey = new Uint8Array(randomBytes(32));
    const a = { ...(await host(store, 'ctl-a')), sealKey };
    const first = await firstController(a);
    expect(documentOf(store)).not.toHaveProperty('files');
    const keyless = await host(store, 'ctl-b');
    expect((await look(keyless)).verdict).toMatchObject({ kind: 'blocked', sealedWithoutKey: true });
    const error = await refusedWithoutChange(keyless, store, () => adopt(keyless));
    expect(error).toMatchObject({ code: 'refused', reason: 'blocked' });
    expect(error.what).toContain('sealed');
    const withKey = { ...keyless, sealKey };
    expect(await adopt(withKey)).toEqual({
      kind: 'installed',
      fingerprint: (first as { fingerprint: Fingerprint }).fingerprint,
    });
  });
});

describe('publish', () => {
  it('a whole host with nothing published publishes create-only and the document names its fingerprint', async () => {
    const store = new MemoryStore();
    const { ctx, fingerprint } = await firstOn(store, 'ctl-a');
    store.deleteDocument();
    const outcome = await publish(ctx);
    expect(outcome).toMatchObject({ kind: 'published', fingerprint });
    expect(store.calls.at(-1)).toEqual({ op: 'put', precondition: { kind: 'create-only' } });
    expect(documentOf(store).fingerprint).toBe(fingerprint);
  });

  it('publishing when in sync is refused as not allowed, naming the verdict, and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    const error = await refusedWithoutChange(ctx, store, () => publish(ctx));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'not-allowed',
      where: path.join(ctx.stateDir, 'ca'),
    });
    expect(error.what).toContain('publish');
    expect(error.what).toContain('in sync');
  });

  it('a host AHEAD of the store (it rotated) publishes over it with if-match on the ETag it read, and the previous pair travels in the document', async () => {
    const store = new MemoryStore();
    const { ctx, fingerprint: old } = await firstOn(store, 'ctl-a');
    const readEtag = store.document!.etag;
    await rotateAuthority(ctx.stateDir, ctx.deployment, { clock: ctx.clock });
    const rotated = await fingerprintOf(ctx);
    const seen = (await look(ctx)).verdict;
    expect(seen).toMatchObject({ kind: 'refuse', lineage: { kind: 'ahead' } });
    expect(await publish(ctx, { seen })).toMatchObject({ kind: 'published', fingerprint: rotated });
    expect(store.calls.at(-1)).toEqual({ op: 'put', precondition: { kind: 'if-match', etag: readEtag } });
    const doc = await decodeDocument(store.document!.body, { deployment: DEPLOYMENT, where: store.location });
    expect(doc.header.fingerprint).toBe(rotated);
    expect(doc.header.previousFingerprint).toBe(old);
    expect(Object.keys(doc.files).sort()).toEqual([
      'authority-created',
      'ca-previous.crt',
      'ca-previous.key',
      'ca.crt',
      'ca.key',
    ]);
  });

  it('a stale ETag surfaces as store-changed (exit 6) and overwrites nothing', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    await rotateAuthority(ctx.stateDir, ctx.deployment, { clock: ctx.clock });
    // Another controller publishes after this one read the store for its decision.
    const theirs = new TextEncoder().encode('{"another":"controller"}');
    store.beforeNext('put', (s) => {
      s.setDocument(theirs);
    });
    const diskBefore = snapshotDir(ctx.stateDir);
    const error = await batonErrorOf(publish(ctx));
    expect(error).toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
      where: store.location,
      changed: 'Nothing was overwritten.',
    });
    expect(error.exitCode).toBe(6);
    expect(error.what).toContain('the published document is not the one that was read');
    expect(store.document!.body).toEqual(theirs);
    expect(snapshotDir(ctx.stateDir)).toEqual(diskBefore);
  });
});

describe('refuse: a host whose authority differs is never replaced without force', () => {
  async function leftBehind() {
    const store = new MemoryStore();
    const a = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    await adopt(b);
    await rotateAuthority(a.ctx.stateDir, DEPLOYMENT, { clock: a.ctx.clock });
    await publish(a.ctx);
    return { store, a: a.ctx, b, old: a.fingerprint, rotated: await fingerprintOf(a.ctx) };
  }

  it('a host left behind by a rotation is refused by adopt, naming both fingerprints, the diagnosis and ca/, and nothing changes', async () => {
    const { store, b, old, rotated } = await leftBehind();
    const error = await refusedWithoutChange(b, store, () => adopt(b));
    expect(error).toMatchObject({ code: 'refused', reason: 'diverged', changed: 'Nothing was written.' });
    expect(error.exitCode).toBe(3);
    expect(error.what).toContain(`Local: ${old}`);
    expect(error.what).toContain(`Published: ${rotated}`);
    expect(error.what).toContain('left behind by a rotation');
    expect(error.where).toContain(path.join(b.stateDir, 'ca'));
    expect(error.where).toContain(store.location);
  });

  it('a host left behind cannot push over the store: publishing is refused saying only a host ahead may, and nothing changes', async () => {
    const { store, b } = await leftBehind();
    const error = await refusedWithoutChange(b, store, () => publish(b));
    expect(error).toMatchObject({ code: 'refused', reason: 'not-ahead', changed: 'Nothing was written.' });
    expect(error.what).toContain('only when this host is ahead');
    expect(error.what).toContain('left behind by a rotation');
  });

  it('a host whose authority is unrelated to the published one is refused with the wrong-deployment diagnosis, and nothing changes', async () => {
    const storeA = new MemoryStore();
    const storeB = new MemoryStore();
    const a = await firstOn(storeA, 'ctl-a');
    const b = await firstOn(storeB, 'ctl-b');
    const pointedWrong: ShareContext = { ...b.ctx, store: storeA };
    for (const act of [
      () => adopt(pointedWrong),
      () => publish(pointedWrong),
      () => firstController(pointedWrong),
    ]) {
      const error = await refusedWithoutChange(pointedWrong, storeA, act);
      expect(error.code).toBe('refused');
      expect(['diverged', 'not-ahead']).toContain(error.reason);
      expect(error.what).toContain(b.fingerprint);
      expect(error.what).toContain(a.fingerprint);
      expect(error.what).toContain('wrong deployment or store');
    }
  });
});

describe('force: set aside, never delete, then install', () => {
  it('moves ca/ and the marker to ca.superseded-<stamp> with the old key intact, then installs the published authority', async () => {
    const store = new MemoryStore();
    const a = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    await adopt(b);
    await rotateAuthority(a.ctx.stateDir, DEPLOYMENT, { clock: a.ctx.clock });
    await publish(a.ctx);
    const oldKey = readFileSync(path.join(b.stateDir, 'ca', 'ca.key'));
    const seen = (await look(b)).verdict;
    const at = new Date(Date.UTC(2026, 10, 30, 11, 22, 33));
    const outcome = await force(b, { seen, at });
    expect(outcome).toMatchObject({ kind: 'forced', fingerprint: await fingerprintOf(a.ctx) });
    if (outcome.kind !== 'forced') return;
    expect(path.basename(outcome.supersededDir)).toBe('ca.superseded-20261130T112233Z');
    expect(readFileSync(path.join(outcome.supersededDir, 'ca.key'))).toEqual(oldKey);
    expect(await fingerprintOf(b)).toBe(await fingerprintOf(a.ctx));
    expect(statSync(path.join(b.stateDir, 'ca', 'ca.key')).mode & 0o777).toBe(0o600);
  });

  it('is refused when there is nothing to replace (in sync), and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    const error = await refusedWithoutChange(ctx, store, () => force(ctx));
    expect(error).toMatchObject({
      code: 'refused',
      reason: 'not-allowed',
      where: path.join(ctx.stateDir, 'ca'),
    });
    expect(error.what).toContain('replace the local authority');
    expect(error.what).toContain('in sync');
  });

  it('is refused with what changed when the store moved after the operator looked, and nothing is set aside', async () => {
    const store = new MemoryStore();
    const a = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    await adopt(b);
    await rotateAuthority(a.ctx.stateDir, DEPLOYMENT, { clock: a.ctx.clock });
    await publish(a.ctx);
    const seen = (await look(b)).verdict;
    // A retires, rotates again and publishes while B's operator is typing the confirmation.
    const overlap = await readLocalAuthority(a.ctx.stateDir, DEPLOYMENT);
    if (overlap.state !== 'whole' || !overlap.previous) throw new Error('expected an overlap on ctl-a');
    await retireAuthority(a.ctx.stateDir, DEPLOYMENT, {
      confirm: confirmationPrefix(overlap.previous.fingerprint),
    });
    await rotateAuthority(a.ctx.stateDir, DEPLOYMENT, { clock: a.ctx.clock });
    await publish(a.ctx);
    const error = await refusedWithoutChange(b, store, () => force(b, { seen }));
    expect(error).toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
      where: store.location,
      changed: 'Nothing was overwritten.',
    });
    expect(error.what).toContain(await fingerprintOf(a.ctx));
  });
});

describe('blocked and busy', () => {
  it('a half-initialised host is blocked for every action but the adopt that finishes it, told what to do, and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    const cert = readFileSync(path.join(ctx.stateDir, 'ca', 'ca.crt'));
    unlinkSync(path.join(ctx.stateDir, 'ca', 'ca.crt'));
    for (const act of [() => publish(ctx), () => force(ctx), () => firstController(ctx)]) {
      const error = await refusedWithoutChange(ctx, store, act);
      expect(error).toMatchObject({ code: 'refused', reason: 'blocked', changed: 'Nothing was written.' });
      expect(error.what).toContain('ca.crt');
      expect(error.next).toBeTruthy();
    }
    // The key left is byte for byte the published document's: adopt finishes the install.
    expect((await adopt(ctx)).kind).toBe('installed');
    expect(readFileSync(path.join(ctx.stateDir, 'ca', 'ca.crt'))).toEqual(cert);
  });

  it('a half-initialised host whose key is NOT the published one is refused by adopt, and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    const other = await firstOn(new MemoryStore(), 'ctl-other');
    unlinkSync(path.join(ctx.stateDir, 'ca', 'ca.crt'));
    rmSync(path.join(ctx.stateDir, 'ca', 'ca.key'));
    const { copyFileSync } = await import('node:fs');
    copyFileSync(path.join(other.ctx.stateDir, 'ca', 'ca.key'), path.join(ctx.stateDir, 'ca', 'ca.key'));
    const error = await refusedWithoutChange(ctx, store, () => adopt(ctx));
    expect(error).toMatchObject({ code: 'refused', reason: 'blocked', changed: 'Nothing was written.' });
    expect(error.what).toContain('not the published one');
  });

  it('an unreadable published document blocks adopt on a fresh host, naming the store, and nothing changes', async () => {
    const store = new MemoryStore({ document: new TextEncoder().encode('not json') });
    const ctx = await host(store, 'ctl-b');
    const error = await refusedWithoutChange(ctx, store, () => adopt(ctx));
    expect(error).toMatchObject({ code: 'refused', reason: 'blocked' });
    expect(error.what).toContain(store.location);
  });

  it('a store that cannot be read is a failure (exit 1), not a refusal, for every action — and nothing changes', async () => {
    const store = new MemoryStore();
    const { ctx } = await firstOn(store, 'ctl-a');
    for (const act of [() => adopt(ctx), () => publish(ctx), () => force(ctx), () => firstController(ctx)]) {
      const slowDown = new BatonError('failed', {
        what: 'The bucket answered 503 Slow Down.',
        where: store.location,
        reason: 'throttled',
      });
      store.failNext('get', slowDown);
      const error = await refusedWithoutChange(ctx, store, act);
      // The store's own error, unchanged: its reason and its words, not a refusal by the table.
      expect(error).toBe(slowDown);
      expect(error).toMatchObject({ code: 'failed', reason: 'throttled' });
      expect(error.exitCode).toBe(1);
    }
  });

  it('a second holder of the authority lock fails at once with lock-busy (exit 5), and nothing changes', async () => {
    const store = new MemoryStore();
    const a = await firstOn(store, 'ctl-a');
    const b = await host(store, 'ctl-b');
    await adopt(b);
    const error = await withAuthorityLock(b.stateDir, () => refusedWithoutChange(b, store, () => adopt(b)));
    expect(error.code).toBe('lock-busy');
    expect(error.exitCode).toBe(5);
    expect(a.fingerprint).toBe(await fingerprintOf(b));
  });

  it('leave changes nothing and says so', () => {
    const verdict: Verdict = { kind: 'first-controller' };
    expect(leave(verdict)).toEqual({ kind: 'left', why: expect.stringContaining('Nothing was changed.') });
  });
});
