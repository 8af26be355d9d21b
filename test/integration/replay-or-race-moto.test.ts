/**
 * "Replayed" only when the store's history PROVES it (src/share/replay.ts), and true words for a
 * store that rewrites ETags (src/share/refusals.ts etagUnstableError, src/store/probe.ts). moto
 * behind the fault proxy: the proxy holds B's version listing while A publishes its rotation —
 * the race once read as an attack — and another proxy gives the same bytes a new ETag on every
 * answer. Each case asserts the words, the exit's code, and that nothing changed on disk or in
 * the store.
 *
 * Under CI=true a missing moto_server fails this file (startMoto throws); it never skips.
 */
import { cpSync, existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotateAuthority, systemClock } from '../../src/authority/index.js';
import { exitCodeOf } from '../../src/errors.js';
import { force, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { S3Store } from '../../src/store/s3-store.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { makeAuthority } from '../helpers/authority.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';

const DEPLOYMENT = 'ef56ef56ef56ef56ef56ef56ef56ef56';
const CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };

let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
const proxies: FaultProxy[] = [];
const stores: S3Store[] = [];
let seq = 0;

beforeAll(async () => {
  moto = await startMoto();
  tmp = makeTempDir('baton-replay-race-');
}, 120_000);

afterAll(async () => {
  for (const store of stores) store.destroy();
  for (const proxy of proxies) await proxy.close();
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

function host(bucket: string, name: string, endpoint = moto.endpoint): ShareContext {
  const spec = parseStoreUrl(moto.storeUrl(bucket, 'fleet', { endpoint }));
  if (spec.kind !== 's3') throw new Error('not s3');
  const store = new S3Store(spec, { credentials: CREDENTIALS, maxAttempts: 2 });
  stores.push(store);
  return {
    stateDir: path.join(tmp.dir, `${name}-${++seq}`),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    noSeal: true,
  };
}

async function proxy(): Promise<FaultProxy> {
  const started = await startFaultProxy({ upstream: moto.endpoint });
  proxies.push(started);
  return started;
}

/**
 * X published by an origin; A holds X and has rotated to X' (ahead, ready to publish); B holds
 * an unrelated authority (the REFUSE row: `force` is its way), reading through `via`.
 */
async function raceWorld(versioned: boolean, via: FaultProxy) {
  const bucket = await moto.bucket({ versioned });
  const origin = host(bucket, 'origin');
  const x = await makeAuthority({ deployment: DEPLOYMENT, stateDir: origin.stateDir, clock: systemClock });
  await publish(origin);
  const a = host(bucket, 'a');
  cpSync(origin.stateDir, a.stateDir, { recursive: true });
  // published_at has one-second precision: the rotation is stamped later than X.
  await new Promise((r) => setTimeout(r, 1_100));
  const rotated = await rotateAuthority(a.stateDir, DEPLOYMENT, { clock: systemClock });
  const b = host(bucket, 'b', via.url);
  await makeAuthority({ deployment: DEPLOYMENT, stateDir: b.stateDir, clock: systemClock });
  return { bucket, a, b, x: x.fingerprint, rotated: rotated.current };
}

/** Holds B's version listing (GET /<bucket>?versions) until A's rotation has landed. */
async function forceWhileAPublishes(w: Awaited<ReturnType<typeof raceWorld>>, via: FaultProxy) {
  via.arm({ fault: 'delay', method: 'GET', path: new RegExp(`^/${w.bucket}/?$`), delayMs: 2_500 });
  const before = snapshotDir(w.b.stateDir);
  const forcing = batonErrorOf(force(w.b));
  for (let i = 0; i < 200 && !via.requests.some((r) => r.outcome === 'delay'); i++)
    await new Promise((r) => setTimeout(r, 25));
  expect(via.count('delay')).toBe(1);
  expect((await publish(w.a)).kind).toBe('published');
  const error = await forcing;
  return { error, before };
}

describe('a concurrent publish is "the store changed", never "replayed"', () => {
  it.each([
    ['an unversioned bucket', false],
    ['a versioned bucket', true],
  ])(
    'on %s: force on B while A publishes its rotation exits 6, and B and the store keep what they hold',
    async (_, versioned) => {
      const via = await proxy();
      const w = await raceWorld(versioned, via);
      const { error, before } = await forceWhileAPublishes(w, via);
      expect(error).toMatchObject({ code: 'store-changed', reason: 'replaced' });
      expect(exitCodeOf(error)).toBe(6);
      expect(error.what).toContain('The store changed since it was read');
      expect(error.what).not.toContain('replayed');
      expect(error.next).toContain('decide again');
      expect(snapshotDir(w.b.stateDir)).toEqual(before);
      expect(existsSync(path.join(w.b.stateDir, 'ca.superseded'))).toBe(false);
      const top = await moto.getObject(w.bucket, 'fleet/authority.json');
      expect(JSON.parse(new TextDecoder().decode(top!.body))).toMatchObject({ fingerprint: w.rotated });
    },
    60_000,
  );

  it('a proved replay (the older document written over its later rotation) is still refused, saying what proves it', async () => {
    const via = await proxy();
    const w = await raceWorld(true, via);
    const old = (await moto.getObject(w.bucket, 'fleet/authority.json'))!.body;
    expect((await publish(w.a)).kind).toBe('published');
    await moto.putObject(w.bucket, 'fleet/authority.json', old);
    const before = snapshotDir(w.b.stateDir);
    const versions = await moto.versions(w.bucket, 'fleet');
    const error = await batonErrorOf(force(w.b));
    expect(error).toMatchObject({ code: 'refused', reason: 'replayed' });
    expect(error.what).toContain(`${w.x} (published_at`);
    expect(error.what).toContain('is replayed');
    expect(error.what).toContain('the older document was written over it afterwards');
    expect(error.where).toContain('the latest, put the older one back');
    expect(snapshotDir(w.b.stateDir)).toEqual(before);
    expect(await moto.versions(w.bucket, 'fleet')).toEqual(versions);
  }, 60_000);
});

describe('a store that gives the same bytes a different ETag', () => {
  it('push says so (not "the store changed"), overwrites nothing, and store check names the store', async () => {
    const bucket = await moto.bucket();
    const origin = host(bucket, 'origin');
    await makeAuthority({ deployment: DEPLOYMENT, stateDir: origin.stateDir, clock: systemClock });
    await publish(origin);
    const rewriting = await proxy();
    rewriting.arm({ fault: 'rewrite-etag', method: 'GET', count: Infinity });
    const a = host(bucket, 'a', rewriting.url);
    cpSync(origin.stateDir, a.stateDir, { recursive: true });
    await new Promise((r) => setTimeout(r, 1_100));
    await rotateAuthority(a.stateDir, DEPLOYMENT, { clock: systemClock });
    const stored = await moto.getObject(bucket, 'fleet/authority.json');
    const disk = snapshotDir(a.stateDir);

    const error = await batonErrorOf(publish(a));
    expect(error).toMatchObject({ code: 'failed', reason: 'etag-unstable' });
    expect(error.what).toContain('still holds byte for byte the document read for this decision');
    expect(error.what).toContain('gives the same bytes a different ETag');
    expect(error.what).not.toMatch(/changed since/);
    expect(error.changed).toBe('Nothing was overwritten.');
    expect(await moto.getObject(bucket, 'fleet/authority.json')).toEqual(stored);
    expect(snapshotDir(a.stateDir)).toEqual(disk);

    const check = await a.store.checkConditionalWrites();
    expect(check.etagUnstable).toBe(true);
    expect(check.detail).toContain('different ETags (on the write and two reads of one unchanged object)');
    expect(check.detail).toContain('rewrites ETags');
    // The same store straight to moto is stable: the proxy is what is named.
    const direct = await host(bucket, 'direct').store.checkConditionalWrites();
    expect(direct).toMatchObject({ enforced: true, failed: [] });
    expect(direct.etagUnstable).toBeUndefined();
    expect(await moto.getObject(bucket, 'fleet/authority.json')).toEqual(stored);
  }, 60_000);
});
