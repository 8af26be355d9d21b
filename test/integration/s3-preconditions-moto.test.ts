/**
 * Publishing on an S3 that ENFORCES If-None-Match / If-Match (moto_server, which baton did not
 * write), through the real S3 adapter and SDK, and through small proxies in front of it: one
 * that drops If-Match, one that drops the first PUT's response (docs/publishing.md, "Conditional writes").
 *
 * Under CI=true a missing moto_server fails this file (startMoto throws); it never skips.
 */
import { cpSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority, rotateAuthority, systemClock } from '../../src/authority/index.js';
import type { BatonError } from '../../src/errors.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { SEAL_KEY_BYTES } from '../../src/share/seal.js';
import { firstController, look, publish, replaceUnreadable } from '../../src/share/actions.js';
import { replaceUnreadableRefusal } from '../../src/share/refusals.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { S3Store } from '../../src/store/s3-store.js';
import { parseStoreUrl } from '../../src/store/store-url.js';
import { makeAuthority } from '../helpers/authority.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';
import { randomBytes } from 'node:crypto';
import { batonErrorOf } from '../helpers/baton-error.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'ab12ab12ab12ab12ab12ab12ab12ab12';
const CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };
const bytes = (text: string) => new TextEncoder().encode(text);

let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
const stores: S3Store[] = [];
let seq = 0;

beforeAll(async () => {
  moto = await startMoto();
  tmp = makeTempDir('baton-moto-');
}, 120_000);

afterAll(async () => {
  for (const store of stores) store.destroy();
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

function s3(url: string, options: { maxAttempts?: number } = {}): S3Store {
  const spec = parseStoreUrl(url);
  if (spec.kind !== 's3') throw new Error(url);
  const store = new S3Store(spec, { credentials: CREDENTIALS, ...options });
  stores.push(store);
  return store;
}

function stateDir(name: string): string {
  return path.join(tmp.dir, `${name}-${++seq}`);
}

function host(store: S3Store, name: string, extra: Partial<ShareContext> = {}): ShareContext {
  return {
    stateDir: stateDir(name),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    ...extra,
    noSeal: extra.noSeal ?? true,
  };
}

/** Two hosts that both rotated away from the same published authority: both ahead of it. */
async function twoAheadHosts(
  store: S3Store,
): Promise<{ a: ShareContext; b: ShareContext; origin: Fingerprint }> {
  const origin = host(store, 'origin');
  const made = await makeAuthority({ deployment: DEPLOYMENT, stateDir: origin.stateDir, clock: systemClock });
  await publish(origin);
  const a = host(store, 'ctl-a');
  const b = host(store, 'ctl-b');
  cpSync(origin.stateDir, a.stateDir, { recursive: true });
  cpSync(origin.stateDir, b.stateDir, { recursive: true });
  await rotateAuthority(a.stateDir, DEPLOYMENT, { clock: systemClock });
  await rotateAuthority(b.stateDir, DEPLOYMENT, { clock: systemClock });
  return { a, b, origin: made.fingerprint };
}

describe('the S3 adapter against moto (preconditions enforced)', () => {
  it('reads NoSuchKey as nothing published, refuses a second create-only write and a stale If-Match, accepts the current one', async () => {
    const bucket = await moto.bucket();
    const store = s3(moto.storeUrl(bucket, 'adapter'));
    expect(await store.get()).toBeUndefined();
    const { etag: first } = await store.put(bytes('{"v":1}'), { kind: 'create-only' });
    expect(await batonErrorOf(store.put(bytes('{"v":1}'), { kind: 'create-only' }))).toMatchObject({
      code: 'store-changed',
      reason: 'published-meanwhile',
    });
    const { etag: second } = await store.put(bytes('{"v":2}'), { kind: 'if-match', etag: first });
    expect(second).not.toBe(first);
    expect(await batonErrorOf(store.put(bytes('{"v":3}'), { kind: 'if-match', etag: first }))).toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
    });
    expect(new TextDecoder().decode((await store.get())!.body)).toBe('{"v":2}');
  });

  it('store check passes on moto and leaves no probe object and no version behind on a versioned bucket', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const store = s3(moto.storeUrl(bucket, 'checked'));
    const check = await store.checkConditionalWrites();
    expect(check).toMatchObject({ enforced: true, failed: [] });
    expect(await moto.versions(bucket)).toEqual([]);
  });

  it('store check through a proxy that drops If-Match reports not enforced, naming the replace-if-unchanged probe, and cleans up', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const proxy = await startFaultProxy({ upstream: moto.endpoint });
    try {
      proxy.arm({ fault: 'drop-if-match', count: Infinity });
      const store = s3(moto.storeUrl(bucket, 'dropped', { endpoint: proxy.url }));
      const check = await store.checkConditionalWrites();
      expect(check.enforced).toBe(false);
      expect(check.failed).toEqual(['replace-if-unchanged']);
      expect(check.detail).toContain('stale ETag (If-Match) was accepted');
      expect(proxy.requests.some((r) => r.outcome === 'drop-if-match')).toBe(true);
      expect(await moto.versions(bucket)).toEqual([]);
    } finally {
      await proxy.close();
    }
  });

  it('stores an SSE-KMS document and reads it back', async () => {
    const bucket = await moto.bucket();
    const store = s3(moto.storeUrl(bucket, 'kms', { query: 'sse=aws:kms&kms_key_id=alias/baton-test' }));
    await store.put(bytes('{"sealed":"by kms"}'), { kind: 'create-only' });
    const raw = await moto.getObject(bucket, 'kms/authority.json');
    expect(raw?.sse).toBe('aws:kms');
    expect(new TextDecoder().decode((await store.get())!.body)).toBe('{"sealed":"by kms"}');
  });
});

describe('"absent" means S3 said absent', () => {
  let web: http.Server;
  let webUrl: string;
  beforeAll(async () => {
    web = http.createServer((req, res) => {
      res.writeHead(404, { 'content-type': 'text/html' });
      res.end('<html><head><title>404</title></head><body>Not Found</body></html>');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    webUrl = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => web.close(() => resolve())));

  it('a 404 without S3\'s NoSuchKey is "could not read", naming the endpoint and the endpoint/path_style checks — never "nothing published"', async () => {
    const store = s3(
      `s3://bucket/p?region=us-east-1&endpoint=${encodeURIComponent(webUrl)}&path_style=true`,
      { maxAttempts: 1 },
    );
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'not-s3' });
    expect(error.what).toContain(webUrl);
    expect(error.next).toContain('path_style=true');
    const ctx = host(store, 'web');
    const seen = await look(ctx);
    expect(seen.verdict.kind).toBe('blocked');
    expect(seen.verdict).toMatchObject({ unreadable: 'could-not-read' });
  });

  it('https:// against a plain-HTTP endpoint says exactly that', async () => {
    const store = s3(
      `s3://bucket/p?region=us-east-1&endpoint=${encodeURIComponent(moto.endpoint.replace('http:', 'https:'))}&path_style=true`,
      { maxAttempts: 1 },
    );
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'plain-http' });
    expect(error.what).toContain('answered in plain HTTP');
    expect(error.what).not.toMatch(/ssl3_get_record|wrong version number/);
  });

  it('a failure through a virtual-host endpoint mentions path_style=true', async () => {
    const store = s3(
      `s3://bucket/p?region=us-east-1&endpoint=${encodeURIComponent(webUrl.replace('127.0.0.1', 'localhost'))}`,
      { maxAttempts: 1 },
    );
    const error = await batonErrorOf(store.get());
    expect(error.code).toBe('failed');
    expect(error.next).toContain('path_style=true');
  });
});

describe('two controllers on moto', () => {
  it('the first-controller race, 20 trials: always exactly one winner and one authority on both hosts', async () => {
    const bucket = await moto.bucket({ versioned: true });
    let oneWinner = 0;
    for (let trial = 0; trial < 20; trial++) {
      const store = s3(moto.storeUrl(bucket, `race-${trial}/fleet`));
      const a = host(store, 'ctl-a');
      const b = host(store, 'ctl-b');
      const outcomes = await Promise.all([firstController(a), firstController(b)]);
      const won = outcomes.filter((o) => o.kind === 'first-controller' && o.wonRace).length;
      const [la, lb] = await Promise.all([
        readLocalAuthority(a.stateDir, DEPLOYMENT),
        readLocalAuthority(b.stateDir, DEPLOYMENT),
      ]);
      expect(
        la.state === 'whole' && lb.state === 'whole' && la.current.fingerprint === lb.current.fingerprint,
        JSON.stringify({ outcomes, a: la.state, b: lb.state }),
      ).toBe(true);
      expect((await moto.versions(bucket, `race-${trial}/`)).length).toBe(1);
      if (won === 1) oneWinner++;
    }
    console.log(`first-controller race: ${oneWinner}/20 trials with exactly one winner and one authority`);
    expect(oneWinner).toBe(20);
  });

  it('concurrent pushes, 10 trials: never two successes, and never more new versions than successful publishes', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const successes: number[] = [];
    for (let trial = 0; trial < 10; trial++) {
      const store = s3(moto.storeUrl(bucket, `push-${trial}`));
      const { a, b } = await twoAheadHosts(store);
      const [sa, sb] = await Promise.all([look(a), look(b)]);
      expect(sa.verdict).toMatchObject({ kind: 'refuse', lineage: { kind: 'ahead' } });
      const settled = await Promise.allSettled([
        publish(a, { seen: sa.verdict }),
        publish(b, { seen: sb.verdict }),
      ]);
      const ok = settled.filter((r) => r.status === 'fulfilled').length;
      for (const r of settled)
        if (r.status === 'rejected') expect((r.reason as BatonError).code).toBe('store-changed');
      const versions = await moto.versions(bucket, `push-${trial}/`);
      // One version is the origin's publish; each further one must be a reported success.
      expect(versions.length - 1).toBeLessThanOrEqual(ok);
      successes.push(ok);
    }
    console.log(
      `concurrent pushes: successes per trial ${successes.join(',')}; trials with two successes: ${successes.filter((n) => n > 1).length}/10`,
    );
    expect(successes.every((n) => n <= 1)).toBe(true);
  });
});

describe('sealed and unsealed controllers on moto', () => {
  it('a controller without the seal key reads the header, is blocked from adopting, and never publishes cleartext over the sealed document', async () => {
    const bucket = await moto.bucket();
    const store = s3(moto.storeUrl(bucket, 'sealed'));
    const sealKey = new Uint8Array(randomBytes(SEAL_KEY_BYTES));
    const sealed = host(store, 'sealed', { sealKey });
    await firstController(sealed);
    const before = await moto.getObject(bucket, 'sealed/authority.json');
    expect(new TextDecoder().decode(before!.body)).not.toContain('"files"');

    const fresh = host(store, 'keyless-fresh');
    const seen = await look(fresh);
    expect(seen.verdict).toMatchObject({ kind: 'blocked', sealedWithoutKey: true });
    expect(seen.verdict.kind === 'blocked' && seen.verdict.why).toContain(
      'sealed; this host has no seal key; adopting needs it',
    );

    // A keyless controller that rotated (ahead) must not downgrade the seal.
    const ahead = host(store, 'keyless-ahead');
    cpSync(sealed.stateDir, ahead.stateDir, { recursive: true });
    await rotateAuthority(ahead.stateDir, DEPLOYMENT, { clock: systemClock });
    const aheadLook = await look(ahead);
    expect(aheadLook.verdict).toMatchObject({
      kind: 'refuse',
      lineage: { kind: 'ahead' },
      sealedWithoutKey: true,
    });
    const error = await batonErrorOf(publish(ahead, { seen: aheadLook.verdict }));
    expect(error).toMatchObject({ code: 'refused', reason: 'would-unseal' });
    expect(error.what).toContain('in the clear');
    expect(error.next).toContain('--unseal');
    const after = await moto.getObject(bucket, 'sealed/authority.json');
    expect(after!.etag).toBe(before!.etag);

    // Unsealing on purpose is possible, and says what it did: the document is now in the clear.
    await publish(ahead, { seen: aheadLook.verdict, unseal: true });
    expect(new TextDecoder().decode((await moto.getObject(bucket, 'sealed/authority.json'))!.body)).toContain(
      '"files"',
    );
  });

  it('a sealed controller replaces a sealed document with a sealed one', async () => {
    const bucket = await moto.bucket();
    const store = s3(moto.storeUrl(bucket, 'resealed'));
    const sealKey = new Uint8Array(randomBytes(SEAL_KEY_BYTES));
    const first = host(store, 'first', { sealKey });
    await firstController(first);
    const ahead = host(store, 'ahead', { sealKey });
    cpSync(first.stateDir, ahead.stateDir, { recursive: true });
    await rotateAuthority(ahead.stateDir, DEPLOYMENT, { clock: systemClock });
    await publish(ahead, { seen: (await look(ahead)).verdict });
    const text = new TextDecoder().decode((await moto.getObject(bucket, 'resealed/authority.json'))!.body);
    expect(text).toContain('"sealed"');
    expect(text).not.toContain('"files"');
  });
});

describe("a lost response (a proxy drops the first PUT's answer; the SDK retries and meets its own write)", () => {
  let proxy: FaultProxy;
  beforeAll(async () => {
    proxy = await startFaultProxy({ upstream: moto.endpoint });
  });
  afterAll(async () => {
    await ifSet(proxy)?.close();
  });

  it('a replace is reported as published, not as "the store changed"', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const direct = s3(moto.storeUrl(bucket, 'lost'));
    const { a } = await twoAheadHosts(direct);
    const viaProxy = host(s3(moto.storeUrl(bucket, 'lost', { endpoint: proxy.url })), 'ctl-a', {
      stateDir: a.stateDir,
    });
    proxy.arm({ fault: 'drop-response', method: 'PUT' });
    const dropped = proxy.count('drop-response');
    const outcome = await publish(viaProxy, { seen: (await look(viaProxy)).verdict });
    expect(proxy.count('drop-response')).toBe(dropped + 1);
    expect(outcome.kind).toBe('published');
    const local = await readLocalAuthority(a.stateDir, DEPLOYMENT);
    expect(
      outcome.kind === 'published' &&
        local.state === 'whole' &&
        outcome.fingerprint === local.current.fingerprint,
    ).toBe(true);
  });

  it('on the first-controller path it is a won race with this host\'s own authority, not "another controller published first"', async () => {
    const bucket = await moto.bucket();
    const ctx = host(s3(moto.storeUrl(bucket, 'lost-first', { endpoint: proxy.url })), 'ctl-a');
    proxy.arm({ fault: 'drop-response', method: 'PUT' });
    const dropped = proxy.count('drop-response');
    const outcome = await firstController(ctx);
    expect(proxy.count('drop-response')).toBe(dropped + 1);
    expect(outcome).toMatchObject({ kind: 'first-controller', wonRace: true });
  });
});

describe('sync --replace-unreadable on moto', () => {
  it("replaces a corrupt document with this host's whole authority", async () => {
    const bucket = await moto.bucket();
    const store = s3(moto.storeUrl(bucket, 'corrupt'));
    const ctx = host(store, 'ctl-a');
    await makeAuthority({ deployment: DEPLOYMENT, stateDir: ctx.stateDir, clock: systemClock });
    await moto.putObject(
      bucket,
      'corrupt/authority.json',
      bytes('{"format": "baton.authority/1", "deployment": '),
    );
    const seen = await look(ctx);
    expect(seen.verdict).toMatchObject({ kind: 'blocked', unreadable: 'unusable' });
    expect(seen.verdict.kind === 'blocked' && seen.verdict.step).toMatchObject({
      args: ['sync', '--replace-unreadable', '--confirm', { placeholder: 'ETAG 8' }],
    });
    const outcome = await replaceUnreadable(ctx, { seen: seen.verdict });
    expect(outcome.kind).toBe('published');
    expect((await look(ctx)).verdict.kind).toBe('in-sync');
  });

  it('refuses (exit 3) a valid document of another deployment and one of a newer format, changing nothing', async () => {
    const bucket = await moto.bucket();
    const store = s3(moto.storeUrl(bucket, 'other'));
    const ctx = host(store, 'ctl-a');
    await makeAuthority({ deployment: DEPLOYMENT, stateDir: ctx.stateDir, clock: systemClock });
    const other = host(store, 'other-fleet', { deployment: 'cd34cd34cd34cd34cd34cd34cd34cd34' });
    await firstController(other);
    const disk = snapshotDir(ctx.stateDir);
    const before = await moto.getObject(bucket, 'other/authority.json');
    const foreign = replaceUnreadableRefusal(ctx, await look(ctx));
    expect(foreign).toMatchObject({ code: 'refused', reason: 'foreign-deployment', where: store.location });
    expect(foreign?.exitCode).toBe(3);
    expect(foreign?.what).toContain('another deployment');
    expect(await batonErrorOf(replaceUnreadable(ctx))).toMatchObject({
      code: 'refused',
      reason: 'foreign-deployment',
    });

    await moto.putObject(
      bucket,
      'other/authority.json',
      bytes(JSON.stringify({ format: 'baton.authority/2', deployment: DEPLOYMENT })),
    );
    const newer = await batonErrorOf(replaceUnreadable(ctx));
    expect(newer).toMatchObject({ code: 'refused', reason: 'newer-format' });
    expect(newer.exitCode).toBe(3);
    expect(newer.next).toContain('Upgrade baton');
    expect(
      JSON.parse(new TextDecoder().decode((await moto.getObject(bucket, 'other/authority.json'))!.body))
        .format,
    ).toBe('baton.authority/2');
    expect(before).toBeDefined();
    // The lock file is the only thing replaceUnreadable may have created; ca/ is untouched.
    const { ['ca.lock']: _lock, ...rest } = snapshotDir(ctx.stateDir);
    const { ['ca.lock']: _lockBefore, ...restBefore } = disk;
    expect(rest).toEqual(restBefore);
  });
});

describe('the moto these suites run on (test/helpers/moto-one-write-at-a-time.py)', () => {
  it('16 concurrent create-only PUTs of one key, 20 trials: exactly one succeeds each time, the rest are 412', async () => {
    const bucket = await moto.bucket();
    const winners: number[] = [];
    for (let trial = 0; trial < 20; trial++) {
      const settled = await Promise.allSettled(
        Array.from({ length: 16 }, (_, i) =>
          moto.client.send(
            new PutObjectCommand({
              Bucket: bucket,
              Key: `k${trial}`,
              Body: bytes(`v${i}`),
              IfNoneMatch: '*',
            }),
          ),
        ),
      );
      for (const r of settled)
        if (r.status === 'rejected') expect((r.reason as { name?: string }).name).toBe('PreconditionFailed');
      winners.push(settled.filter((r) => r.status === 'fulfilled').length);
    }
    expect(winners).toEqual(Array.from({ length: 20 }, () => 1));
  });

  it('a PUT whose body stalls holds up no other write: the body is read before the one-at-a-time turn', async () => {
    const bucket = await moto.bucket();
    const { port, hostname } = new URL(moto.endpoint);
    const stalled = net.connect(Number(port), hostname);
    await new Promise<void>((resolve) => stalled.once('connect', resolve));
    stalled.write(
      `PUT /${bucket}/stalled HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Length: 100\r\n\r\n0123456789`,
    );
    try {
      // With the turn taken before the body is read, this write waits on the stalled one for ever.
      const etag = await moto.putObject(bucket, 'other', bytes('other'));
      expect(etag).not.toBe('');
      expect(new TextDecoder().decode((await moto.getObject(bucket, 'other'))!.body)).toBe('other');
    } finally {
      stalled.destroy();
    }
  });
});
