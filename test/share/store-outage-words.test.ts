/**
 * A store outage's words, below the CLI: the words after a lost answer come from a re-read; the
 * S3 adapter's timeouts are configurable and bounded in total; a store check record expires and
 * is probed again; a file-system failure is said by its code and path; clock skew is never
 * "about 0 minutes".
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, storeOptionsOf } from '../../src/config/config.js';
import { BatonError } from '../../src/errors.js';
import { fileSystemError } from '../../src/fs/file-system-error.js';
import { lostAnswerError, reread } from '../../src/share/lost-answer.js';
import { storeWriteGuard } from '../../src/share/store-guard.js';
import { S3Store, s3Bounds, skewWords } from '../../src/store/s3-store.js';
import {
  readStoreCheck,
  STORE_CHECK_MAX_AGE_MS,
  storeCheckExpired,
  writeStoreCheck,
} from '../../src/store/store-check-record.js';
import { parseStoreUrl, type S3StoreSpec } from '../../src/store/store-url.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { MemoryStore } from '../helpers/memory-store.js';

const temp = makeTempDir('baton-outage-words-');
afterAll(() => temp.cleanup());
const bytes = (text: string) => new TextEncoder().encode(text);

describe('words after a lost answer', () => {
  const timedOut = new BatonError('failed', {
    what: 'The store did not answer in time.',
    changed: 'It is not known whether the write reached the store: re-read it before deciding.',
    reason: 'timed-out',
  });

  it('re-reads first: this host’s exact bytes are success, anything else is said as what the re-read shows', async () => {
    const mine = bytes('{"mine":1}');
    const store = new MemoryStore({ document: mine });
    expect((await reread(store, mine)).kind).toBe('ours');
    expect((await reread(new MemoryStore(), mine)).kind).toBe('nothing');
    const other = await reread(
      new MemoryStore({
        document: bytes('{"fingerprint":"SHA256:x","published_by":"ctl-b\\u001b[8m","published_at":"t"}'),
      }),
      mine,
    );
    expect(other.kind).toBe('other');
    if (other.kind !== 'other') throw new Error('fixture');
    const error = lostAnswerError('s3://b/k', timedOut, other);
    expect(error.code).toBe('store-changed');
    expect(error.what).toContain("The store's answer was lost");
    expect(error.what).toContain('re-read shows another document');
    // The other document's published_by comes from the store: shown, never obeyed.
    expect(error.what).toContain('ctl-b\\x1b[8m');
    expect(error.what).not.toContain('\u001b');
    expect(error.changed).not.toContain('Nothing was written');
  });

  it('says nothing landed only when the re-read found nothing, and "not known" when the re-read failed too', () => {
    const nothing = lostAnswerError('s3://b/k', timedOut, { kind: 'nothing' });
    expect(nothing.what).toContain('re-read shows nothing published');
    const failed = lostAnswerError('s3://b/k', timedOut, { kind: 'failed', error: new Error('down') });
    expect(failed.what).toContain('re-reading it failed too');
    expect(failed.changed).toContain('Unknown');
    expect(failed.changed).not.toContain('Nothing was written');
  });
});

describe('S3 timeouts', () => {
  let server: http.Server;
  let endpoint: string;
  beforeAll(async () => {
    // A store that never answers: every request is held until the client gives up.
    server = http.createServer((req) => req.resume());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('come from store_timeout or --store-timeout (the flag wins) and are refused outside 1..300 s', () => {
    const file = path.join(temp.dir, 'timeouts.yaml');
    writeFileSync(file, 'store_timeout: 12\n');
    expect(storeOptionsOf(loadConfig({ config: file }))).toEqual({ requestTimeoutMs: 12_000 });
    expect(storeOptionsOf(loadConfig({ config: file, storeTimeout: '2.5' }))).toEqual({
      requestTimeoutMs: 2_500,
    });
    expect(storeOptionsOf(loadConfig({}, {}, temp.dir))).toEqual({});
    for (const bad of ['0', '301', 'soon', '-4'])
      expect(() => loadConfig({ storeTimeout: bad }, {}, temp.dir)).toThrow(/between 1 and 300/);
  });

  it('state the total bound: attempts × (connect + answer) plus the retries’ pauses', () => {
    expect(s3Bounds()).toEqual({ connectMs: 3_000, requestMs: 5_000, attempts: 3, totalMs: 25_000 });
    expect(s3Bounds({ requestTimeoutMs: 10_000 }).totalMs).toBe(40_000);
  });

  it('a stalled write fails as timed out naming the bounds, and never says "Nothing was written"', async () => {
    const store = new S3Store(
      parseStoreUrl(
        `s3://bucket-x/p?region=us-east-1&endpoint=${encodeURIComponent(endpoint)}&path_style=true`,
      ) as S3StoreSpec,
      {
        credentials: { accessKeyId: 'AKIDTEST', secretAccessKey: 'not-a-secret' },
        requestTimeoutMs: 300,
        connectionTimeoutMs: 300,
        maxAttempts: 1,
      },
    );
    try {
      const error = await batonErrorOf(store.put(bytes('{}'), { kind: 'create-only' }));
      expect(error).toMatchObject({ code: 'failed', reason: 'timed-out' });
      expect(error.what).toContain('1 attempt(s) of at most 0.3 s to connect and 0.3 s to answer');
      expect(error.changed).toContain('not known whether the write reached the store');
      expect(error.next).toContain('store_timeout');
      // The store did not answer: the offline route is named.
      expect(error.next).toContain('ca export --to <DIR>');
    } finally {
      store.destroy();
    }
  });

  it('clock skew is said in seconds under a minute and a half, never "about 0 minutes"', () => {
    expect(skewWords(20_000)).toBe('about 20 seconds');
    expect(skewWords(1_000)).toBe('about 1 second');
    expect(skewWords(20 * 60_000)).toBe('about 20 minutes');
    expect(skewWords(3 * 3_600_000)).toBe('about 3 hours');
  });
});

describe('a store check record expires', () => {
  it('after 24 hours the guard probes the store again instead of trusting the old answer', async () => {
    const stateDir = path.join(temp.dir, 'root', 'host');
    const url = 's3://fleet/prod';
    const enforced = { enforced: true, failed: [], detail: 'both probes passed' };
    const longAgo = new Date(Date.now() - STORE_CHECK_MAX_AGE_MS - 60_000);
    await writeStoreCheck(stateDir, url, enforced, longAgo);
    const record = await readStoreCheck(stateDir, url);
    expect(storeCheckExpired(record!, new Date())).toBe(true);
    expect(storeCheckExpired({ checked_at: new Date().toISOString() }, new Date())).toBe(false);
    // The store stopped enforcing since: the old "enforced" must not let the write through.
    const store = new MemoryStore({ dropsIfMatch: true });
    const refused = await batonErrorOf(storeWriteGuard({ stateDir, storeUrl: url, store })());
    expect(refused.reason).toBe('store-unenforced');
    expect(store.calls.filter((c) => c.op === 'check')).toHaveLength(1);
    expect((await readStoreCheck(stateDir, url))!.enforced).toBe(false);
  });
});

describe('file-system failures are said by their code', () => {
  it.each([
    ['EROFS', 'read-only'],
    ['ENAMETOOLONG', 'longer than the file system allows'],
    ['EACCES', 'permission was denied'],
    ['ENOSPC', 'full'],
  ])('%s names the path and what to do, not "a bug in baton"', (code, words) => {
    const raw = Object.assign(new Error(`${code}: open '/var/lib/baton/x\u001b[2J/ca/ca.key'`), {
      code,
      syscall: 'open',
      path: '/var/lib/baton/x\u001b[2J/ca/ca.key',
    });
    const error = fileSystemError(raw)!;
    expect(error.code).toBe('failed');
    expect(error.what).toContain(code);
    expect(error.what).toContain(words);
    expect(error.where).toBe('/var/lib/baton/x\\x1b[2J/ca/ca.key');
    expect(error.next).toMatch(/\w/);
    expect(error.message).not.toContain('bug');
  });

  it('leaves anything else alone (a bug stays a bug)', () => {
    expect(fileSystemError(new TypeError('x is undefined'))).toBeUndefined();
  });
});
