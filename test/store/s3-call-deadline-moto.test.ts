/**
 * One deadline bounds a whole S3 call — connect, headers AND body (src/store/call-deadline.ts).
 * moto_server behind the fault proxy, which sends the headers and part of the body and then
 * goes silent: baton must give up at its bound (not the proxy's 60 s), say which part stalled,
 * how many bytes came and how long it waited, and change nothing on disk or in the store.
 *
 * Under CI=true a missing moto_server fails this file (startMoto throws); it never skips.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/authority/index.js';
import { adopt, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { S3Store } from '../../src/store/s3-store.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { makeAuthority } from '../helpers/authority.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';

const DEPLOYMENT = 'cd34cd34cd34cd34cd34cd34cd34cd34';
const CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };
/** 2 × (0.5 s + 1 s) + 1 s: the whole call's bound. The proxy would hold the body 60 s. */
const BOUNDS = { connectionTimeoutMs: 500, requestTimeoutMs: 1_000, maxAttempts: 2 };
const TOTAL_MS = 4_000;
/** What scheduling on a loaded 2-core machine may add to the bound. */
const SLACK_MS = 3_000;

let moto: MotoS3;
const proxies: FaultProxy[] = [];
let tmp: { dir: string; cleanup: () => void };
const stores: S3Store[] = [];
let seq = 0;

beforeAll(async () => {
  moto = await startMoto();
  tmp = makeTempDir('baton-deadline-');
}, 120_000);

afterAll(async () => {
  for (const store of stores) store.destroy();
  for (const proxy of proxies) await proxy.close();
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

function storeVia(bucket: string, prefix: string, endpoint: string): S3Store {
  const spec = parseStoreUrl(moto.storeUrl(bucket, prefix, { endpoint }));
  if (spec.kind !== 's3') throw new Error('not s3');
  const store = new S3Store(spec, { credentials: CREDENTIALS, ...BOUNDS });
  stores.push(store);
  return store;
}

function host(store: S3Store, name: string): ShareContext {
  return {
    stateDir: path.join(tmp.dir, `${name}-${++seq}`),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    noSeal: true,
  };
}

/**
 * A published authority (written direct to moto) and a store that reads it through a proxy of its
 * own: each case waits out a deadline of its own, so the cases run at once (their waits overlap).
 */
async function published(prefix: string) {
  const proxy = await startFaultProxy({ upstream: moto.endpoint, maxStallMs: 60_000 });
  proxies.push(proxy);
  const bucket = await moto.bucket();
  const direct = storeVia(bucket, prefix, moto.endpoint);
  const origin = host(direct, 'origin');
  await makeAuthority({ deployment: DEPLOYMENT, stateDir: origin.stateDir, clock: systemClock });
  await publish(origin);
  const before = await moto.getObject(bucket, `${prefix}/authority.json`);
  return {
    bucket,
    key: `${prefix}/authority.json`,
    before: before!,
    origin,
    proxy,
    proxied: storeVia(bucket, prefix, proxy.url),
  };
}

async function timed<T>(
  run: Promise<T>,
): Promise<{ error: Awaited<ReturnType<typeof batonErrorOf>>; ms: number }> {
  const started = Date.now();
  const error = await batonErrorOf(run);
  return { error, ms: Date.now() - started };
}

describe.concurrent('one deadline bounds a whole S3 read: headers and body', () => {
  it('10 body bytes then silence: given up at the bound, saying the body stalled after 10 bytes and how long baton waited', async () => {
    const w = await published('ten-bytes');
    w.proxy.arm({ fault: 'stall-body', method: 'GET', path: /ten-bytes/, bodyBytes: 10, count: Infinity });
    try {
      const { error, ms } = await timed(w.proxied.get());
      expect(ms).toBeLessThan(TOTAL_MS + SLACK_MS);
      expect(ms).toBeGreaterThanOrEqual(TOTAL_MS - 100);
      expect(error).toMatchObject({ code: 'failed', reason: 'timed-out' });
      expect(error.what).toContain("sent its answer's headers, then stopped sending the body");
      expect(error.what).toContain(`after 10 of ${w.before.body.length} bytes`);
      expect(error.what).toMatch(/baton waited \d+(\.\d)? s/);
      expect(error.what).toContain('4 s in all');
      expect(error.changed).toBe('Nothing was changed.');
    } finally {
      w.proxy.clear();
    }
    expect(await moto.getObject(w.bucket, w.key)).toEqual(w.before);
  }, 30_000);

  it('half a body then silence: an adopt on a fresh host gives up at the bound and installs nothing', async () => {
    const w = await published('half-body');
    const fresh = host(w.proxied, 'fresh');
    // A fresh host: its state dir exists with an empty lock file, so "unchanged" is exact.
    mkdirSync(fresh.stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(fresh.stateDir, 'ca.lock'), '', { mode: 0o600 });
    const disk = snapshotDir(fresh.stateDir);
    w.proxy.arm({ fault: 'stall-body', method: 'GET', path: /half-body/, count: Infinity });
    try {
      const { error, ms } = await timed(adopt(fresh));
      expect(ms).toBeLessThan(TOTAL_MS + SLACK_MS);
      expect(error).toMatchObject({ code: 'failed', reason: 'timed-out' });
      const half = Math.floor(w.before.body.length / 2);
      expect(error.what).toContain(`after ${half} of ${w.before.body.length} bytes`);
      expect(error.what).toMatch(/baton waited \d+(\.\d)? s/);
    } finally {
      w.proxy.clear();
    }
    expect(snapshotDir(fresh.stateDir)).toEqual(disk);
    expect(await moto.getObject(w.bucket, w.key)).toEqual(w.before);
  }, 30_000);

  it('no headers at all: given up at the bound, saying the headers never came and how long baton waited', async () => {
    const w = await published('no-headers');
    w.proxy.arm({ fault: 'stall', method: 'GET', path: /no-headers/, count: Infinity });
    try {
      const { error, ms } = await timed(w.proxied.get());
      expect(ms).toBeLessThan(TOTAL_MS + SLACK_MS);
      expect(error).toMatchObject({ code: 'failed', reason: 'timed-out' });
      expect(error.what).toContain("did not send its answer's headers in time");
    } finally {
      w.proxy.clear();
    }
    expect(await moto.getObject(w.bucket, w.key)).toEqual(w.before);
  }, 30_000);

  it('a body that stalls once and then comes whole is read within the same bound', async () => {
    const w = await published('stall-once');
    w.proxy.arm({ fault: 'stall-body', method: 'GET', path: /stall-once/, bodyBytes: 10, count: 1 });
    try {
      // The first attempt holds the body until the deadline: the call fails, it is not retried
      // past its bound. The next call (a new deadline) reads the document whole.
      const { error, ms } = await timed(w.proxied.get());
      expect(ms).toBeLessThan(TOTAL_MS + SLACK_MS);
      expect(error.reason).toBe('timed-out');
      expect((await w.proxied.get())?.body).toEqual(w.before.body);
    } finally {
      w.proxy.clear();
    }
  }, 30_000);
});
