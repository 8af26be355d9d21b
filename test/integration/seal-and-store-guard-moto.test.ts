/**
 * On moto (an S3 that enforces If-None-Match / If-Match and keeps versions), through the real
 * adapter, and through a proxy that strips one precondition header:
 *
 * - SEALING IS STATED: a host without the seal key writes no key material in the clear on the
 *   corruption, deletion and rotation scenarios unless it said `seal: none` / --no-seal —
 *   checked across every stored version of the document.
 * - A STORE THAT DOES NOT ENFORCE IS NEVER WRITTEN BLINDLY: the guard checks the store itself
 *   before the first write, refuses naming the failed probe, and the bound override works.
 * - A race loser is told the store changed (exit 6), never a usage error.
 */
import { cpSync, existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rotateAuthority, systemClock } from '../../src/authority/index.js';
import { exitCodeOf, type BatonError } from '../../src/errors.js';
import { firstController, look, publish, replaceUnreadable } from '../../src/share/actions.js';
import { clearKeyMaterial } from '../../src/share/clear-key-scan.js';
import { SEAL_KEY_BYTES } from '../../src/share/seal.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { storeWriteGuard, unenforcedOverrideValue } from '../../src/share/store-guard.js';
import { checkSyncFlags } from '../../src/share/sync-flags.js';
import { S3Store } from '../../src/store/s3-store.js';
import { readStoreCheck, storeCheckFile } from '../../src/store/store-check-record.js';
import { parseStoreUrl, type S3StoreSpec } from '../../src/store/store-url.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = '5ea15ea15ea15ea15ea15ea15ea15ea1';
const CREDENTIALS = { accessKeyId: 'testing', secretAccessKey: 'testing' };

let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
const stores: S3Store[] = [];
const proxies: FaultProxy[] = [];
let seq = 0;

beforeAll(async () => {
  moto = await startMoto();
  tmp = makeTempDir('baton-seal-guard-');
}, 120_000);

afterAll(async () => {
  for (const store of stores) store.destroy();
  for (const proxy of proxies) await proxy.close();
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

function s3(url: string): S3Store {
  const store = new S3Store(parseStoreUrl(url) as S3StoreSpec, { credentials: CREDENTIALS, maxAttempts: 2 });
  stores.push(store);
  return store;
}

function host(store: S3Store, name: string, extra: Partial<ShareContext> = {}): ShareContext {
  return {
    stateDir: path.join(tmp.dir, 'hosts', `${name}-${++seq}`),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    noSeal: false,
    ...extra,
  };
}

/** Every decoding of every stored version of every key under `prefix` that holds a private key. */
async function privateKeysIn(bucket: string, prefix: string): Promise<number> {
  let found = 0;
  for (const version of await moto.versions(bucket, prefix)) {
    if (version.deleteMarker) continue;
    const answer = await moto.client.send(
      new GetObjectCommand({ Bucket: bucket, Key: version.key, VersionId: version.versionId }),
    );
    const raw = Buffer.from(await answer.Body!.transformToByteArray());
    // The raw bytes, then every JSON string base64-decoded: the scan does not trust the format.
    const decodings = [
      raw.toString('utf8'),
      ...[...raw.toString('utf8').matchAll(/"([A-Za-z0-9+/=]{16,})"/g)].map((m) =>
        Buffer.from(m[1]!, 'base64').toString('latin1'),
      ),
    ];
    found += decodings.filter((text) => text.includes('PRIVATE KEY')).length;
  }
  return found;
}

function expectNamesBothWays(error: BatonError): void {
  expect(error).toMatchObject({ code: 'refused', reason: 'seal-unstated' });
  expect(error.what).toContain('anyone who can write it can corrupt or delete a sealed document');
  for (const way of ['seal_key_file', '--seal-key-file', 'seal: none', '--no-seal'])
    expect(error.next).toContain(way);
}

describe('a host without the seal key, sealing not stated (versioned bucket)', () => {
  it('never writes key material in the clear: truncated, emptied and overwritten documents, deletion and rotation', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const prefix = 'sealed-fleet';
    const store = s3(moto.storeUrl(bucket, prefix));
    const sealed = host(store, 'sealed', { sealKey: new Uint8Array(randomBytes(SEAL_KEY_BYTES)) });
    await firstController(sealed);
    const original = (await moto.getObject(bucket, `${prefix}/authority.json`))!.body;

    const keyless = host(store, 'keyless');
    cpSync(sealed.stateDir, keyless.stateDir, { recursive: true });
    const refusals: BatonError[] = [];
    const corruptions = [
      original.slice(0, Math.floor(original.length / 2)),
      new Uint8Array(),
      new TextEncoder().encode('{"format":"overwritten"}'),
    ];
    for (const body of corruptions) {
      await moto.putObject(bucket, `${prefix}/authority.json`, body);
      for (const unseal of [false, true])
        refusals.push(await batonErrorOf(replaceUnreadable(keyless, { unseal })));
    }
    await moto.deleteObject(bucket, `${prefix}/authority.json`);
    refusals.push(await batonErrorOf(publish(keyless)));
    // Rotated (ahead of a sealed document), even with --unseal's consent.
    await moto.putObject(bucket, `${prefix}/authority.json`, original);
    await rotateAuthority(keyless.stateDir, DEPLOYMENT, { clock: systemClock });
    refusals.push(await batonErrorOf(publish(keyless, { unseal: true })));
    // A first publish of a fresh deployment from a key-less host.
    const fresh = host(s3(moto.storeUrl(bucket, 'fresh-fleet')), 'fresh');
    refusals.push(await batonErrorOf(firstController(fresh)));

    expect(refusals).toHaveLength(9);
    for (const error of refusals) expectNamesBothWays(error);
    expect(await privateKeysIn(bucket, '')).toBe(0);
    expect(existsSync(path.join(fresh.stateDir, 'ca'))).toBe(false);
  });

  it('with `seal: none` stated the same replace does publish in the clear (the scan sees it)', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const store = s3(moto.storeUrl(bucket, 'clear-fleet'));
    const stated = host(store, 'stated', { noSeal: true });
    await firstController(stated);
    await moto.putObject(bucket, 'clear-fleet/authority.json', new Uint8Array());
    await replaceUnreadable(stated);
    expect(await privateKeysIn(bucket, '')).toBeGreaterThanOrEqual(2);
    // store check's listing finds both versions in the clear.
    const versions = await store.documentVersions();
    expect(versions.listed).toBe(true);
    const clear = versions.listed
      ? versions.versions.filter((v) => v.body && clearKeyMaterial(v.body).includes('ca.key'))
      : [];
    expect(clear).toHaveLength(2);
  });
});

describe('the store guard', () => {
  it('through a proxy that strips If-Match: checks the store by itself, refuses naming the probe, and 20 races of two pushes never both publish', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const proxy = await startFaultProxy({ upstream: moto.endpoint });
    proxies.push(proxy);
    proxy.arm({ fault: 'drop-if-match', count: Infinity });
    const url = moto.storeUrl(bucket, 'stripped', { endpoint: proxy.url });
    const store = s3(url);
    const root = path.join(tmp.dir, 'guard-root');
    const origin = host(store, 'origin', { noSeal: true, stateDir: path.join(root, 'origin') });
    await firstController(origin);
    let bothPublished = 0;
    let refusedForStore = 0;
    for (let race = 0; race < 20; race++) {
      const [a, b] = ['a', 'b'].map((name) => {
        const stateDir = path.join(root, `${name}-${race}`);
        cpSync(origin.stateDir, stateDir, { recursive: true });
        return host(store, name, {
          noSeal: true,
          stateDir,
          beforeWrite: storeWriteGuard({ stateDir, storeUrl: url, store }),
        });
      }) as [ShareContext, ShareContext];
      await rotateAuthority(a.stateDir, DEPLOYMENT, { clock: systemClock });
      await rotateAuthority(b.stateDir, DEPLOYMENT, { clock: systemClock });
      const settled = await Promise.allSettled([publish(a), publish(b)]);
      if (settled.every((r) => r.status === 'fulfilled')) bothPublished++;
      for (const r of settled) {
        if (r.status === 'rejected' && (r.reason as BatonError).reason === 'store-unenforced') {
          refusedForStore++;
          expect((r.reason as BatonError).what).toContain('replace-if-unchanged (If-Match) probe failed');
        }
      }
    }
    expect(bothPublished).toBe(0);
    expect(refusedForStore).toBe(40);
    // One record, shared by every state dir beside the first: the check ran once or twice, not 40 times.
    expect(await readStoreCheck(path.join(root, 'a-19'), url)).toMatchObject({
      enforced: false,
      failed: ['replace-if-unchanged'],
    });
    expect(storeCheckFile(path.join(root, 'a-0'), url)).toBe(storeCheckFile(path.join(root, 'b-19'), url));
    const probes = proxy.requests.filter((r) => r.url.includes('.baton-probe-') && r.method === 'PUT').length;
    expect(probes).toBeLessThanOrEqual(8);
  }, 120_000);

  it('the override bound to the store publishes anyway; a wrong value is a usage error that writes nothing', async () => {
    const bucket = await moto.bucket();
    const proxy = await startFaultProxy({ upstream: moto.endpoint });
    proxies.push(proxy);
    proxy.arm({ fault: 'drop-if-match', count: Infinity });
    const url = moto.storeUrl(bucket, 'override', { endpoint: proxy.url });
    const store = s3(url);
    const stateDir = path.join(tmp.dir, 'override-root', 'host');
    const wrong = host(store, 'h', {
      noSeal: true,
      stateDir,
      beforeWrite: storeWriteGuard({ stateDir, storeUrl: url, store, override: 'deadbeef' }),
    });
    const error = await batonErrorOf(firstController(wrong));
    expect(error.code).toBe('usage');
    expect(error.what).toContain('override value');
    expect(error.what).not.toContain(unenforcedOverrideValue(url));
    expect(await moto.getObject(bucket, 'override/authority.json')).toBeUndefined();
    const right = {
      ...wrong,
      beforeWrite: storeWriteGuard({
        stateDir,
        storeUrl: url,
        store,
        override: unenforcedOverrideValue(url),
      }),
    };
    expect((await firstController(right)).kind).toBe('first-controller');
    expect(await moto.getObject(bucket, 'override/authority.json')).toBeDefined();
  });

  it('store check with If-None-Match stripped names If-None-Match (create-only), not If-Match', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const proxy = await startFaultProxy({ upstream: moto.endpoint });
    proxies.push(proxy);
    proxy.arm({ fault: 'drop-if-none-match', count: Infinity });
    const check = await s3(moto.storeUrl(bucket, 'inm', { endpoint: proxy.url })).checkConditionalWrites();
    expect(check.enforced).toBe(false);
    expect(check.failed).toEqual(['create-only']);
    expect(check.detail).toContain('If-None-Match');
    expect(await moto.versions(bucket)).toEqual([]);
  });
});

describe('a race loser', () => {
  it('on real moto, 20 races of two pushes: one publishes, the loser is always "the store changed" (exit 6)', async () => {
    const bucket = await moto.bucket();
    const codes: number[] = [];
    for (let race = 0; race < 20; race++) {
      const store = s3(moto.storeUrl(bucket, `race-${race}`));
      const origin = host(store, 'origin', { noSeal: true });
      await firstController(origin);
      const [a, b] = ['a', 'b'].map((name) => {
        const ctx = host(store, name, { noSeal: true });
        cpSync(origin.stateDir, ctx.stateDir, { recursive: true });
        return ctx;
      }) as [ShareContext, ShareContext];
      await rotateAuthority(a.stateDir, DEPLOYMENT, { clock: systemClock });
      await rotateAuthority(b.stateDir, DEPLOYMENT, { clock: systemClock });
      // As `sync --push` runs: look, check the flag against the verdict, publish what was seen.
      const push = async (ctx: ShareContext) => {
        const seen = await look(ctx);
        checkSyncFlags(ctx, seen, { push: true });
        return publish(ctx, { seen: seen.verdict });
      };
      const settled = await Promise.allSettled([push(a), push(b)]);
      expect(settled.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of settled) if (r.status === 'rejected') codes.push(exitCodeOf(r.reason));
    }
    expect(codes).toHaveLength(20);
    expect(codes.every((code) => code === 6)).toBe(true);
  }, 120_000);

  it('through the CLI: a `sync --push` that finds a sibling rotation already published exits 6, and `store check` lists versions in the clear', async () => {
    assertBuilt();
    const bucket = await moto.bucket({ versioned: true });
    const url = moto.storeUrl(bucket, 'cli');
    const root = path.join(tmp.dir, 'cli');
    const baton = (name: string, ...args: string[]) =>
      runBaton(
        [
          '--deployment',
          DEPLOYMENT,
          '--no-seal',
          '--state-dir',
          path.join(root, name),
          '--store',
          url,
          ...args,
        ],
        { env: moto.env },
      );
    expect((await baton('a', 'sync', '--first-controller', '--yes')).exitCode).toBe(0);
    cpSync(path.join(root, 'a'), path.join(root, 'b'), { recursive: true });
    await rotateAuthority(path.join(root, 'a'), DEPLOYMENT, { clock: systemClock });
    await rotateAuthority(path.join(root, 'b'), DEPLOYMENT, { clock: systemClock });
    const won = await baton('a', 'sync', '--push');
    expect(won.exitCode, won.all).toBe(0);
    const lost = await baton('b', 'sync', '--push');
    expect(lost.exitCode, lost.all).toBe(6);
    expect(lost.stderr).toContain('Another controller published its own rotation');
    const check = await baton('a', 'store', 'check');
    expect(check.exitCode, check.all).toBe(0);
    expect(check.stdout).toContain('2 stored version(s)');
    expect(check.stdout).toContain(
      `aws s3api delete-object --bucket ${bucket} --key cli/authority.json --version-id <VERSION>`,
    );
  }, 120_000);
});
