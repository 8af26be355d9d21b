import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { S3Store } from '../../src/store/s3-store.js';
import { parseStoreUrl, type S3StoreSpec } from '../../src/store/store-url.js';
import { startS3Sandbox, type S3Sandbox } from '../../src/sandbox/s3.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { ifSet } from '../helpers/if-set.js';

const bytes = (text: string) => new TextEncoder().encode(text);

describe('the S3 adapter against s3rver on 127.0.0.1', () => {
  let s3: S3Sandbox;
  beforeAll(async () => {
    s3 = await startS3Sandbox();
  });
  afterAll(async () => {
    await ifSet(s3)?.close();
  });

  it('reads nothing published, then the document and the ETag it was written with', async () => {
    const store = await s3.openStore(s3.url.replace('/authority?', '/first?'));
    expect(store.location).toBe(`s3://${s3.bucket}/first/authority.json`);
    expect(await store.get()).toBeUndefined();
    const { etag } = await store.put(bytes('{"hello":1}'), { kind: 'create-only' });
    expect(etag).toMatch(/^"[0-9a-f]+"$/);
    const got = await store.get();
    expect(new TextDecoder().decode(got!.body)).toBe('{"hello":1}');
    expect(got!.etag).toBe(etag);
    (store as S3Store).destroy();
  });

  it('keeps the object under the prefix as prefix/authority.json, and at the bucket root without one', async () => {
    const store = await s3.openStore(
      `s3://${s3.bucket}?region=us-east-1&endpoint=${encodeURIComponent(s3.endpoint)}&path_style=true`,
    );
    expect(store.location).toBe(`s3://${s3.bucket}/authority.json`);
    await store.put(bytes('root'));
    expect(new TextDecoder().decode((await store.get())!.body)).toBe('root');
    (store as S3Store).destroy();
  });

  it('says the bucket does not exist, naming bucket and key, for a missing bucket', async () => {
    const store = await s3.openStore(
      `s3://no-such-bucket/p?region=us-east-1&endpoint=${encodeURIComponent(s3.endpoint)}&path_style=true`,
    );
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'no-bucket' });
    expect(error.where).toContain('s3://no-such-bucket/p/authority.json');
    expect(error.next).toContain('bucket name');
    (store as S3Store).destroy();
  });

  it('refuses a document over 1 MiB, naming its size, without installing anything', async () => {
    const store = await s3.openStore(s3.url.replace('/authority?', '/big?'));
    await store.put(new Uint8Array(1024 * 1024 + 5));
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'refused', reason: 'oversize' });
    expect(error.what).toContain(String(1024 * 1024 + 5));
    (store as S3Store).destroy();
  });

  it('takes its keys only from whoever composes it: the sandbox URL opened without them uses the standard chain and finds none', async () => {
    const store = await withoutAwsChain(() => openStore(s3.url.replace('/authority?', '/keys?')));
    const error = await withoutAwsChain(() => batonErrorOf(store.get()));
    expect(error.code).toBe('failed');
    expect(error.what).toBe('No AWS credentials were found.');
    expect(error.where).toContain(`s3://${s3.bucket}/keys/authority.json`);
    (store as S3Store).destroy();
    // The same URL with the emulator's keys handed over by its composer reaches the server.
    const composed = await openStore(s3.url.replace('/authority?', '/keys?'), {
      credentials: s3.credentials,
    });
    await composed.put(bytes('composed'));
    expect(new TextDecoder().decode((await composed.get())!.body)).toBe('composed');
    (composed as S3Store).destroy();
  });
});

/**
 * Runs `fn` with no AWS keys, profile files or instance metadata reachable by the SDK's
 * standard chain, so nothing but what the composer passes can authenticate a request.
 */
async function withoutAwsChain<T>(fn: () => Promise<T>): Promise<T> {
  for (const name of [
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN',
    'AWS_PROFILE',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
    'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
    'AWS_WEB_IDENTITY_TOKEN_FILE',
  ]) {
    vi.stubEnv(name, undefined);
  }
  vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', '/dev/null');
  vi.stubEnv('AWS_CONFIG_FILE', '/dev/null');
  vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
  try {
    return await fn();
  } finally {
    vi.unstubAllEnvs();
  }
}

describe('the S3 adapter when the endpoint is down', () => {
  it('fails with a clear message naming the bucket/key and the endpoint for a closed port', async () => {
    const port = await closedPort();
    const store = await openStore(
      `s3://some-bucket/p?region=us-east-1&endpoint=http://127.0.0.1:${port}&path_style=true`,
      {
        credentials: { accessKeyId: 'x', secretAccessKey: 'y' },
      },
    );
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'unreachable' });
    expect(error.where).toBe(`s3://some-bucket/p/authority.json via http://127.0.0.1:${port}`);
    expect(error.next).toContain('endpoint');
    (store as S3Store).destroy();
  });
});

/** A port that was free a moment ago and has nothing listening now. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Recorded {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
}

describe('the S3 adapter at the request level (a recording server on 127.0.0.1)', () => {
  let server: http.Server;
  let endpoint: string;
  const requests: Recorded[] = [];
  let answer: { status: number; code: string; message?: string } = { status: 200, code: '' };
  let cutBodies = 0;
  /** Requests held without an answer (a stalled store) until the client gives up. */
  let stallNext = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
        if (stallNext > 0) {
          stallNext--;
          return;
        }
        if (answer.status === 200 && req.method === 'GET' && cutBodies > 0) {
          cutBodies--;
          // Promise 100 bytes, send 10, close: a body cut short after the headers.
          res.writeHead(200, { ETag: '"abc"', 'Content-Length': '100' });
          res.write('{"partial"');
          // Closed a moment later, so the client usually has the headers and is reading the
          // body; if it is not, the SDK retries instead — the outcome must be the same.
          setTimeout(() => res.socket?.destroy(), 50);
          return;
        }
        if (answer.status === 200 && req.method === 'GET') {
          res.writeHead(200, { ETag: '"abc"', 'Content-Length': '9' }).end('{"ok":42}');
          return;
        }
        if (answer.status === 200) {
          res.writeHead(200, { ETag: '"abc"' }).end();
          return;
        }
        res
          .writeHead(answer.status, { 'Content-Type': 'application/xml' })
          .end(
            `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${answer.code}</Code><Message>${answer.message ?? 'm'}</Message><RequestId>r</RequestId></Error>`,
          );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const storeFor = (prefix: string) =>
    new S3Store(
      parseStoreUrl(
        `s3://bucket-x/${prefix}?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
      ) as S3StoreSpec,
      {
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
        maxAttempts: 1,
      },
    );
  const lastPut = (key: string) =>
    requests.filter((r) => r.method === 'PUT' && r.url.startsWith(`/bucket-x/${key}`)).at(-1)!;

  it('sends If-None-Match: * for a create-only put and no If-Match', async () => {
    answer = { status: 200, code: '' };
    const store = storeFor('create');
    expect(await store.put(bytes('doc'), { kind: 'create-only' })).toEqual({ etag: '"abc"' });
    const put = lastPut('create/authority.json');
    expect(put.headers['if-none-match']).toBe('*');
    expect(put.headers['if-match']).toBeUndefined();
    store.destroy();
  });

  it('sends If-Match with the ETag read for a replace, and no If-None-Match', async () => {
    answer = { status: 200, code: '' };
    const store = storeFor('replace');
    await store.put(bytes('doc'), { kind: 'if-match', etag: '"etag-read-earlier"' });
    const put = lastPut('replace/authority.json');
    expect(put.headers['if-match']).toBe('"etag-read-earlier"');
    expect(put.headers['if-none-match']).toBeUndefined();
    store.destroy();
  });

  it('sends neither header for an unconditional put', async () => {
    answer = { status: 200, code: '' };
    const store = storeFor('plain');
    await store.put(bytes('doc'));
    const put = lastPut('plain/authority.json');
    expect(put.headers['if-match']).toBeUndefined();
    expect(put.headers['if-none-match']).toBeUndefined();
    store.destroy();
  });

  it('asks for KMS encryption with the key named in the URL when sse=aws:kms', async () => {
    answer = { status: 200, code: '' };
    const spec = parseStoreUrl(
      `s3://bucket-x/kms?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true&sse=aws:kms&kms_key_id=alias/baton`,
    );
    const store = new S3Store(spec as S3StoreSpec, {
      credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
      maxAttempts: 1,
    });
    await store.put(bytes('doc'), { kind: 'create-only' });
    const put = lastPut('kms/authority.json');
    expect(put.headers['x-amz-server-side-encryption']).toBe('aws:kms');
    expect(put.headers['x-amz-server-side-encryption-aws-kms-key-id']).toBe('alias/baton');
    store.destroy();
  });

  it.each([
    [412, 'PreconditionFailed', { kind: 'create-only' } as const, 'published-meanwhile'],
    [412, 'PreconditionFailed', { kind: 'if-match', etag: '"e"' } as const, 'replaced'],
    [409, 'ConditionalRequestConflict', { kind: 'if-match', etag: '"e"' } as const, 'write-in-progress'],
    [404, 'NoSuchKey', { kind: 'if-match', etag: '"e"' } as const, 'removed'],
  ])(
    'maps HTTP %i %s on a conditional put to store-changed, saying nothing was overwritten',
    async (status, code, precondition, reason) => {
      answer = { status, code };
      const store = storeFor(`cond-${status}`);
      const error = await batonErrorOf(store.put(bytes('doc'), precondition));
      expect(error).toMatchObject({ code: 'store-changed', reason });
      expect(error.exitCode).toBe(6);
      expect(error.where).toContain(`s3://bucket-x/cond-${status}/authority.json`);
      expect(error.changed).toBe('Nothing was overwritten.');
      expect(error.next).toContain('Re-read');
      store.destroy();
    },
  );

  it('maps 403 AccessDenied to a failure that says to check credentials and policy', async () => {
    answer = { status: 403, code: 'AccessDenied' };
    const store = storeFor('denied');
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'denied' });
    expect(error.what).toContain('AccessDenied');
    expect(error.next).toContain('AWS_PROFILE');
    store.destroy();
  });

  it('maps a 301 PermanentRedirect to a failure that names the region', async () => {
    answer = { status: 301, code: 'PermanentRedirect' };
    const store = storeFor('moved');
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'wrong-region' });
    expect(error.next).toContain('?region=');
    store.destroy();
  });

  it('maps 503 SlowDown to a throttling failure once retries run out', async () => {
    answer = { status: 503, code: 'SlowDown' };
    const store = storeFor('slow');
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'throttled' });
    expect(error.next).toContain('try again');
    store.destroy();
  });

  it('reads again when a body is cut short after its headers, and returns the whole document', async () => {
    answer = { status: 200, code: '' };
    cutBodies = 1;
    const store = new S3Store(
      parseStoreUrl(
        `s3://bucket-x/cut?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
      ) as S3StoreSpec,
      {
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
        maxAttempts: 2,
      },
    );
    const before = requests.length;
    expect(new TextDecoder().decode((await store.get())!.body)).toBe('{"ok":42}');
    expect(requests.length - before).toBe(2);
    store.destroy();
  });

  it('fails saying the connection closed before the whole answer arrived when every attempt is cut, never handing back a partial document', async () => {
    answer = { status: 200, code: '' };
    cutBodies = 2;
    const store = new S3Store(
      parseStoreUrl(
        `s3://bucket-x/cut2?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
      ) as S3StoreSpec,
      {
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
        maxAttempts: 2,
      },
    );
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'cut-short' });
    expect(error.where).toContain('s3://bucket-x/cut2/authority.json');
    store.destroy();
  });

  it('names a clock-skew 403 (RequestTimeTooSkewed) as clock skew with advice to fix the clock, not as denied access', async () => {
    answer = { status: 403, code: 'RequestTimeTooSkewed' };
    const store = storeFor('skewed');
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'clock-skew' });
    expect(error.what).toContain('clock skew');
    expect(error.what).not.toContain('denied');
    expect(error.next).toContain('clock');
    expect(error.next).not.toContain('AWS_PROFILE');
    store.destroy();
  });

  it('classifies by fields, not words: a 400 whose message says "timeout" is not a timeout', async () => {
    answer = {
      status: 400,
      code: 'InvalidArgument',
      message: 'x-amz-timeout header: request timeout value is invalid',
    };
    const store = storeFor('words');
    const error = await batonErrorOf(store.get());
    expect(error.reason).toBe('other');
    store.destroy();
  });

  it('a stalled answer fails as timed out within the timeout its composer injected', async () => {
    answer = { status: 200, code: '' };
    stallNext = 2;
    const store = new S3Store(
      parseStoreUrl(
        `s3://bucket-x/stalled?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
      ) as S3StoreSpec,
      {
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
        maxAttempts: 2,
        requestTimeoutMs: 150,
      },
    );
    const started = Date.now();
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'timed-out' });
    expect(Date.now() - started).toBeLessThan(15_000);
    stallNext = 0;
    store.destroy();
  });

  it('outlasts one stalled answer: the injected request timeout fires and the retry reads the document', async () => {
    answer = { status: 200, code: '' };
    stallNext = 1;
    const store = new S3Store(
      parseStoreUrl(
        `s3://bucket-x/stalled-once?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
      ) as S3StoreSpec,
      {
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
        maxAttempts: 2,
        requestTimeoutMs: 150,
      },
    );
    const before = requests.length;
    expect(new TextDecoder().decode((await store.get())!.body)).toBe('{"ok":42}');
    expect(requests.length - before).toBe(2);
    store.destroy();
  });

  it('a missing region is said as such, before any request is sent', async () => {
    const saved = {
      region: process.env.AWS_REGION,
      fallback: process.env.AWS_DEFAULT_REGION,
      config: process.env.AWS_CONFIG_FILE,
    };
    delete process.env.AWS_REGION;
    delete process.env.AWS_DEFAULT_REGION;
    process.env.AWS_CONFIG_FILE = '/nonexistent-baton-aws-config';
    try {
      const before = requests.length;
      const store = new S3Store(
        parseStoreUrl(
          `s3://bucket-x/noregion?endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
        ) as S3StoreSpec,
        {
          credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
          maxAttempts: 1,
        },
      );
      const error = await batonErrorOf(store.get());
      expect(error).toMatchObject({ code: 'failed', reason: 'no-region' });
      expect(requests.length).toBe(before);
      store.destroy();
    } finally {
      for (const [name, value] of [
        ['AWS_REGION', saved.region],
        ['AWS_DEFAULT_REGION', saved.fallback],
        ['AWS_CONFIG_FILE', saved.config],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('reads a 404 NoSuchKey as nothing published', async () => {
    answer = { status: 404, code: 'NoSuchKey' };
    const store = storeFor('empty');
    expect(await store.get()).toBeUndefined();
    store.destroy();
  });
});
