/**
 * The SSM Parameter Store adapter against moto_server's SSM (and KMS), which baton did not
 * write: create-only enforced by Parameter Store itself, a replace's interleaved writer detected
 * after the fact with both versions, SecureString + KMS key on the stored parameter, the tier
 * chosen from the size, the history scan, neighbours, AWS errors through a fault proxy, the one
 * deadline per call, and a document planted with `aws ssm put-parameter` read back byte-exact.
 *
 * Under CI=true a missing moto_server fails this file (startMoto throws); it never skips.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority, systemClock } from '../../src/authority/index.js';
import { firstController } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { storeWriteGuard } from '../../src/share/store-guard.js';
import { readStoreCheck } from '../../src/store/store-check-record.js';
import type { SsmStore } from '../../src/store/ssm-store.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { startMotoSsm, type MotoSsm } from '../helpers/moto-ssm.js';

const DEPLOYMENT = 'cd34cd34cd34cd34cd34cd34cd34cd34';
const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array | undefined) => new TextDecoder().decode(body);
const LEAF = 'node-wire-authority';

let ssm: MotoSsm;
let tmp: { dir: string; cleanup: () => void };
let seq = 0;

beforeAll(async () => {
  ssm = await startMotoSsm();
  tmp = makeTempDir('baton-ssm-');
}, 120_000);

afterAll(async () => {
  await ifSet(ssm)?.close();
  ifSet(tmp)?.cleanup();
});

function host(store: SsmStore, name: string): ShareContext {
  return {
    stateDir: path.join(tmp.dir, `${name}-${++seq}`),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    noSeal: true,
  };
}

// The awscli starts a Python each call (~4 s, far more on a loaded machine): generous bounds.
describe(
  'the SSM adapter against moto (create-only enforced, replace detected after the fact)',
  { timeout: 180_000 },
  () => {
    it('reads ParameterNotFound as nothing published; a second create-only write is the race lost; a stale version is refused with nothing written', async () => {
      const prefix = ssm.prefix();
      const store = ssm.store(ssm.storeUrl(prefix));
      const name = `${prefix}/${LEAF}`;
      expect(store.location).toBe(`ssm://${name}`);
      expect(await store.get()).toBeUndefined();
      const { etag: first } = await store.put(bytes('{"v":1}'), { kind: 'create-only' });
      expect(first).toBe('"1"');
      expect(await batonErrorOf(store.put(bytes('{"v":9}'), { kind: 'create-only' }))).toMatchObject({
        code: 'store-changed',
        reason: 'published-meanwhile',
        exitCode: 6,
      });
      const { etag: second } = await store.put(bytes('{"v":2}'), { kind: 'if-match', etag: first });
      expect(second).toBe('"2"');
      expect(
        await batonErrorOf(store.put(bytes('{"v":3}'), { kind: 'if-match', etag: first })),
      ).toMatchObject({
        code: 'store-changed',
        reason: 'replaced',
      });
      // Refused means unchanged: still version 2, two versions in the history.
      expect(await ssm.value(name)).toEqual({ value: '{"v":2}', version: 2 });
      expect(await ssm.history(name)).toHaveLength(2);
      expect(await store.get()).toEqual({ body: bytes('{"v":2}'), etag: '"2"' });
    });

    it('writes a SecureString under the account default key, or under the KMS key the URL names (read with the awscli)', async () => {
      const keyId = (
        JSON.parse(ssm.aws(['kms', 'create-key', '--description', 'baton test'])) as {
          KeyMetadata: { KeyId: string };
        }
      ).KeyMetadata.KeyId;
      const plain = ssm.prefix();
      await ssm.store(ssm.storeUrl(plain)).put(bytes('{"k":"default"}'), { kind: 'create-only' });
      const keyed = ssm.prefix();
      const store = ssm.store(ssm.storeUrl(keyed, { query: `kms_key_id=${keyId}` }));
      await store.put(bytes('{"k":"keyed"}'), { kind: 'create-only' });
      const described = JSON.parse(
        ssm.aws([
          'ssm',
          'describe-parameters',
          '--parameter-filters',
          `Key=Name,Option=Equals,Values=${keyed}/${LEAF}`,
        ]),
      ) as { Parameters: { Type: string; KeyId: string }[] };
      expect(described.Parameters).toEqual([expect.objectContaining({ Type: 'SecureString', KeyId: keyId })]);
      expect(await ssm.describe(`${plain}/${LEAF}`)).toMatchObject({
        Type: 'SecureString',
        KeyId: 'alias/aws/ssm',
      });
      // Without decryption the stored value is not the document (moto's stand-in for ciphertext).
      const raw = JSON.parse(ssm.aws(['ssm', 'get-parameter', '--name', `${keyed}/${LEAF}`])) as {
        Parameter: { Type: string; Value: string };
      };
      expect(raw.Parameter.Type).toBe('SecureString');
      expect(raw.Parameter.Value).not.toBe('{"k":"keyed"}');
      expect(text((await store.get())!.body)).toBe('{"k":"keyed"}');
      expect(store.atRestSeal()).toContain(keyId);
    });

    it('chooses the Advanced tier over 4096 bytes, keeps a small document off it, and refuses one over 8 KB with nothing written', async () => {
      const prefix = ssm.prefix();
      const store = ssm.store(ssm.storeUrl(prefix));
      const name = `${prefix}/${LEAF}`;
      const small = `{"pad":"${'a'.repeat(4096 - 10)}"}`;
      expect(small.length).toBe(4096);
      await store.put(bytes(small), { kind: 'create-only' });
      expect((await ssm.describe(name))?.Tier).not.toBe('Advanced');
      const large = `{"pad":"${'b'.repeat(4097 - 10)}"}`;
      await store.put(bytes(large), { kind: 'if-match', etag: '"1"' });
      expect((await ssm.describe(name))?.Tier).toBe('Advanced');
      expect(text((await store.get())!.body)).toBe(large);
      const error = await batonErrorOf(
        store.put(bytes(`{"pad":"${'c'.repeat(8200)}"}`), { kind: 'if-match', etag: '"2"' }),
      );
      expect(error).toMatchObject({ code: 'refused', reason: 'oversize' });
      expect(error.what).toContain('8192');
      expect(await ssm.value(name)).toMatchObject({ version: 2 });
    });

    it('a writer between the version check and the write is detected with both versions, and its document is put back', async () => {
      const prefix = ssm.prefix();
      const name = `${prefix}/${LEAF}`;
      const proxy = await startFaultProxy({ upstream: ssm.endpoint });
      try {
        const store = ssm.store(ssm.storeUrl(prefix, { endpoint: proxy.url }));
        await store.put(bytes('{"doc":"original"}'), { kind: 'create-only' });
        // Hold baton's PutParameter after its version check; the other writer lands meanwhile.
        proxy.arm({ fault: 'delay', target: 'PutParameter', delayMs: 1_500 });
        const replacing = batonErrorOf(
          store.put(bytes('{"doc":"baton"}'), { kind: 'if-match', etag: '"1"' }),
        );
        for (let i = 0; i < 100 && proxy.count('delay') === 0; i++)
          await new Promise((r) => setTimeout(r, 20));
        expect(proxy.count('delay')).toBe(1);
        expect(await ssm.put(name, '{"doc":"other writer"}')).toBe(2);
        const error = await replacing;
        expect(error).toMatchObject({ code: 'store-changed', reason: 'replaced', exitCode: 6 });
        expect(error.what).toContain('baton read version 1');
        expect(error.what).toContain('another writer wrote version 2');
        expect(error.what).toContain('landed as version 3');
        expect(error.what).toContain('back as version 4');
        // The other writer's document is current; the history keeps all four.
        expect(await ssm.value(name)).toEqual({ value: '{"doc":"other writer"}', version: 4 });
        expect((await ssm.history(name)).map((h) => h.Value)).toEqual([
          '{"doc":"original"}',
          '{"doc":"other writer"}',
          '{"doc":"baton"}',
          '{"doc":"other writer"}',
        ]);
      } finally {
        await proxy.close();
      }
    });

    it("a replace whose answer was lost and that the SDK sent again is not another writer: the version between holds this host's bytes", async () => {
      const prefix = ssm.prefix();
      const name = `${prefix}/${LEAF}`;
      const proxy = await startFaultProxy({ upstream: ssm.endpoint });
      try {
        const store = ssm.store(ssm.storeUrl(prefix, { endpoint: proxy.url }));
        await store.put(bytes('{"doc":"original"}'), { kind: 'create-only' });
        proxy.arm({ fault: 'drop-response', target: 'PutParameter' });
        const { etag } = await store.put(bytes('{"doc":"mine"}'), { kind: 'if-match', etag: '"1"' });
        expect(proxy.count('drop-response')).toBe(1);
        expect(etag).toBe('"3"');
        expect((await ssm.history(name)).map((h) => h.Value)).toEqual([
          '{"doc":"original"}',
          '{"doc":"mine"}',
          '{"doc":"mine"}',
        ]);
      } finally {
        await proxy.close();
      }
    });

    it('two first controllers racing on one prefix end with ONE authority: one publishes, the other adopts it', async () => {
      const url = ssm.storeUrl(ssm.prefix());
      const a = host(ssm.store(url), 'ctl-a');
      const b = host(ssm.store(url), 'ctl-b');
      const [ra, rb] = await Promise.all([firstController(a), firstController(b)]);
      expect([ra.kind, rb.kind]).toEqual(['first-controller', 'first-controller']);
      const won = [ra, rb].filter((r) => r.kind === 'first-controller' && r.wonRace);
      expect(won).toHaveLength(1);
      const fa = await readLocalAuthority(a.stateDir, DEPLOYMENT);
      const fb = await readLocalAuthority(b.stateDir, DEPLOYMENT);
      expect(fa.state).toBe('whole');
      expect(fb.state).toBe('whole');
      if (fa.state !== 'whole' || fb.state !== 'whole') return;
      expect(fb.current.fingerprint).toBe(fa.current.fingerprint);
      const name = (a.store as SsmStore).spec.name;
      // One write ever landed: the loser's create-only write was refused (ParameterAlreadyExists).
      expect(await ssm.history(name)).toHaveLength(1);
      expect(
        JSON.parse(text(bytes((await ssm.value(name))!.value))) as { fingerprint: string },
      ).toMatchObject({
        fingerprint: fa.current.fingerprint,
      });
    });

    it('a first controller on a prefix that already holds a document mints nothing and replaces nothing', async () => {
      const url = ssm.storeUrl(ssm.prefix());
      const founder = host(ssm.store(url), 'founder');
      await firstController(founder);
      const name = (founder.store as SsmStore).spec.name;
      const before = await ssm.value(name);
      const late = host(ssm.store(url), 'late');
      const outcome = await firstController(late);
      // Replaced nothing: the same value at the same version, one version in the history.
      expect(await ssm.value(name)).toEqual(before);
      expect(await ssm.history(name)).toHaveLength(1);
      // Minted nothing: it holds the founder's authority, adopted.
      const founded = await readLocalAuthority(founder.stateDir, DEPLOYMENT);
      const local = await readLocalAuthority(late.stateDir, DEPLOYMENT);
      if (founded.state !== 'whole' || local.state !== 'whole')
        throw new Error(`${founded.state} ${local.state}`);
      expect(outcome).toEqual({
        kind: 'first-controller',
        fingerprint: founded.current.fingerprint,
        wonRace: false,
      });
      expect(local.current.fingerprint).toBe(founded.current.fingerprint);
    });

    it('store check on SSM: create-only enforced, replace detected after the fact; counted as enforced, so a publish is not refused; no probe left', async () => {
      const prefix = ssm.prefix();
      const url = ssm.storeUrl(prefix);
      const store = ssm.store(url);
      const stateDir = path.join(tmp.dir, `guard-${++seq}`);
      await storeWriteGuard({ stateDir, storeUrl: url, store })();
      const record = await readStoreCheck(stateDir, url);
      expect(record).toMatchObject({ enforced: true, failed: [] });
      expect(record!.detail).toContain('create-only is enforced');
      expect(record!.detail).toContain('detected after the fact');
      const left = JSON.parse(
        ssm.aws(['ssm', 'get-parameters-by-path', '--path', prefix, '--recursive']),
      ) as {
        Parameters: unknown[];
      };
      expect(left.Parameters).toEqual([]);
    });

    it('the history scan reads every version decrypted, saying which were SecureStrings', async () => {
      const prefix = ssm.prefix();
      const name = `${prefix}/${LEAF}`;
      const clear = JSON.stringify({
        files: { 'ca.key': Buffer.from('-----BEGIN EC PRIVATE KEY-----').toString('base64') },
      });
      await ssm.put(name, clear, { type: 'String' });
      await ssm.put(name, clear);
      const store = ssm.store(ssm.storeUrl(prefix));
      const versions = await store.documentVersions();
      expect(versions.listed).toBe(true);
      if (!versions.listed) return;
      expect(
        versions.versions.map((v) => [v.versionId, v.isLatest, v.atRest?.encrypted, text(v.body)]),
      ).toEqual([
        ['1', false, false, clear],
        ['2', true, true, clear],
      ]);
      expect(await ssm.store(ssm.storeUrl(ssm.prefix())).documentVersions()).toEqual({
        listed: true,
        versions: [],
      });
    });

    it('names documents at neighbouring prefixes (GetParametersByPath on the parent) when nothing is published here', async () => {
      const base = ssm.prefix();
      await ssm.put(`${base}/prod/${LEAF}`, '{"neighbour":"prod"}');
      await ssm.put(`${base}/prod/other-parameter`, 'not a document');
      const store = ssm.store(ssm.storeUrl(`${base}/prd`));
      expect(await store.get()).toBeUndefined();
      expect(await store.neighbours()).toEqual([
        { location: `ssm://${base}/prod/${LEAF}`, body: bytes('{"neighbour":"prod"}') },
      ]);
    });

    it('a document placed with `aws ssm put-parameter` reads back through the store byte for byte', async () => {
      const prefix = ssm.prefix();
      const file = path.join(tmp.dir, `placed-${++seq}.json`);
      const document =
        '{"deployment":"' +
        DEPLOYMENT +
        '","fingerprint":"SHA256:abc","published_at":"2026-12-03T22:00:00Z",\n "files":{"ca.crt":"LS0t","note":"é — ünïcode"}}';
      writeFileSync(file, document);
      ssm.aws([
        'ssm',
        'put-parameter',
        '--name',
        `${prefix}/${LEAF}`,
        '--type',
        'SecureString',
        '--value',
        `file://${file}`,
      ]);
      const got = await ssm.store(ssm.storeUrl(prefix)).get();
      expect(Buffer.from(got!.body).equals(Buffer.from(document, 'utf8'))).toBe(true);
      expect(got!.etag).toBe('"1"');
    });
  },
);

describe('SSM errors, each with what to do (a fault proxy answers as Parameter Store would)', () => {
  const cases = [
    { type: 'AccessDeniedException', status: 400, reason: 'denied', words: 'ssm:GetParameter' },
    { type: 'KMSDisabledException', status: 400, reason: 'denied', words: 'KMS refused the key' },
    { type: 'InvalidKeyId', status: 400, reason: 'denied', words: 'aws kms describe-key' },
    { type: 'ThrottlingException', status: 400, reason: 'throttled', words: 'throttling' },
    { type: 'InternalServerError', status: 500, reason: 'server-error', words: 'failed on its side' },
  ] as const;
  for (const c of cases) {
    it(`${c.type} on a read is '${c.reason}', naming the parameter and the way out`, async () => {
      const proxy = await startFaultProxy({ upstream: ssm.endpoint });
      try {
        proxy.arm({ fault: 'aws-json-error', target: 'GetParameter', count: Infinity, error: c });
        const prefix = ssm.prefix();
        const store = ssm.store(ssm.storeUrl(prefix, { endpoint: proxy.url }));
        const error = await batonErrorOf(store.get());
        expect(error).toMatchObject({ code: 'failed', reason: c.reason });
        expect(`${error.what} ${error.next}`).toContain(c.words);
        expect(error.where).toContain(`${prefix}/${LEAF}`);
      } finally {
        await proxy.close();
      }
    });
  }

  it('a denied write changes nothing, and KMS refusing the key on a write says which key', async () => {
    const proxy = await startFaultProxy({ upstream: ssm.endpoint });
    try {
      proxy.arm({
        fault: 'aws-json-error',
        target: 'PutParameter',
        error: { status: 400, type: 'KMSNotFoundException' },
      });
      const prefix = ssm.prefix();
      const store = ssm.store(
        ssm.storeUrl(prefix, { endpoint: proxy.url, query: 'kms_key_id=alias/missing' }),
      );
      const error = await batonErrorOf(store.put(bytes('{"v":1}'), { kind: 'create-only' }));
      expect(error).toMatchObject({ code: 'failed', reason: 'denied', changed: 'Nothing was written.' });
      expect(error.what).toContain('alias/missing');
      expect(await ssm.value(`${prefix}/${LEAF}`)).toBeUndefined();
    } finally {
      await proxy.close();
    }
  });

  it('one deadline bounds the whole call: an answer that trickles its body is cut off, naming the call and how long baton waited', async () => {
    // Headers at once, then a byte every 300 ms: no idle timeout ever fires, only the total one.
    const sockets = new Set<Socket>();
    const server = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1', 'content-length': '100000' });
      const timer = setInterval(() => res.write(' '), 300);
      res.on('close', () => clearInterval(timer));
    });
    server.on('connection', (s) => (sockets.add(s), s.on('close', () => sockets.delete(s))));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const store = ssm.store(ssm.storeUrl(ssm.prefix(), { endpoint }), {
        maxAttempts: 1,
        requestTimeoutMs: 1_000,
      });
      expect(store.deadline.totalMs).toBe(4_000);
      const started = Date.now();
      const error = await batonErrorOf(store.get());
      const took = Date.now() - started;
      expect(error).toMatchObject({ code: 'failed', reason: 'timed-out' });
      expect(error.what).toContain('did not finish GetParameter within 4 s');
      expect(took).toBeGreaterThanOrEqual(3_900);
      expect(took).toBeLessThan(20_000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  }, 20_000);
});
