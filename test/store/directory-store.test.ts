import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { BatonError } from '../../src/errors.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { contentEtag } from '../../src/store/etag.js';
import { openStore } from '../../src/store/open-store.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { batonErrorOf } from '../helpers/baton-error.js';

const bytes = (text: string) => new TextEncoder().encode(text);
const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function tempStore(): { dir: string; store: DirectoryStore } {
  const temp = makeTempDir('baton-dirstore-');
  cleanups.push(temp.cleanup);
  const dir = path.join(temp.dir, 'store');
  return { dir, store: new DirectoryStore(dir) };
}

describe('the directory store', () => {
  it('is opened from a file:/// URL and keeps the document at <dir>/authority.json', async () => {
    const { dir } = tempStore();
    const store = await openStore(`file://${dir}`);
    expect(store).toBeInstanceOf(DirectoryStore);
    expect(store.location).toBe(path.join(dir, 'authority.json'));
  });

  it('reads nothing published from a directory that does not exist yet, and creates it 0700 with the document 0600', async () => {
    const { dir, store } = tempStore();
    expect(await store.get()).toBeUndefined();
    const { etag } = await store.put(bytes('doc'), { kind: 'create-only' });
    expect(etag).toBe(contentEtag(bytes('doc')));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(path.join(dir, 'authority.json')).mode & 0o777).toBe(0o600);
    expect(await store.get()).toEqual({ body: bytes('doc'), etag });
  });

  it('refuses a second create-only write as store-changed and leaves the store unchanged', async () => {
    const { dir, store } = tempStore();
    await store.put(bytes('first'), { kind: 'create-only' });
    const before = snapshotDir(dir);
    const error = await batonErrorOf(store.put(bytes('second'), { kind: 'create-only' }));
    expect(error).toMatchObject({ code: 'store-changed', reason: 'published-meanwhile' });
    expect(error.where).toBe(path.join(dir, 'authority.json'));
    expect(error.changed).toBe('Nothing was overwritten.');
    expect(snapshotDir(dir)).toEqual(before);
  });

  it('refuses an if-match write with a stale ETag as store-changed and leaves the store unchanged', async () => {
    const { dir, store } = tempStore();
    const read = await store.put(bytes('first'), { kind: 'create-only' });
    await store.put(bytes('another controller'), { kind: 'if-match', etag: read.etag });
    const before = snapshotDir(dir);
    const error = await batonErrorOf(store.put(bytes('mine'), { kind: 'if-match', etag: read.etag }));
    expect(error).toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
      changed: 'Nothing was overwritten.',
    });
    expect(snapshotDir(dir)).toEqual(before);
    expect(readFileSync(path.join(dir, 'authority.json'), 'utf8')).toBe('another controller');
  });

  it('refuses an if-match write on an ETag that names no document it holds', async () => {
    const { dir, store } = tempStore();
    await store.put(bytes('first'));
    const error = await batonErrorOf(
      store.put(bytes('mine'), { kind: 'if-match', etag: contentEtag(bytes('first')).replace('a', 'b') }),
    );
    expect(error).toMatchObject({ code: 'store-changed', reason: 'replaced' });
    expect(readFileSync(path.join(dir, 'authority.json'), 'utf8')).toBe('first');
  });

  it('refuses an if-match write when the document was removed since it was read, and creates nothing', async () => {
    const { dir, store } = tempStore();
    const read = await store.put(bytes('first'));
    rmSync(path.join(dir, 'authority.json'));
    const before = snapshotDir(dir);
    const error = await batonErrorOf(store.put(bytes('mine'), { kind: 'if-match', etag: read.etag }));
    expect(error).toMatchObject({
      code: 'store-changed',
      reason: 'removed',
      where: path.join(dir, 'authority.json'),
    });
    expect(error.what).toContain('removed');
    expect(snapshotDir(dir)).toEqual(before);
  });

  it('replaces the document when the if-match ETag is the current one', async () => {
    const { store } = tempStore();
    const read = await store.put(bytes('first'), { kind: 'create-only' });
    const { etag } = await store.put(bytes('second'), { kind: 'if-match', etag: read.etag });
    expect(await store.get()).toEqual({ body: bytes('second'), etag });
  });

  it('lets exactly one of many concurrent create-only writers win', async () => {
    const { store } = tempStore();
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => store.put(bytes(`writer ${i}`), { kind: 'create-only' })),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of results)
      if (r.status === 'rejected') expect((r.reason as BatonError).code).toBe('store-changed');
  });

  it('lets exactly one of many concurrent if-match writers with the same ETag win (compare and replace under the lock)', async () => {
    const { store } = tempStore();
    const read = await store.put(bytes('first'), { kind: 'create-only' });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        store.put(bytes(`replace ${i}`), { kind: 'if-match', etag: read.etag }),
      ),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
    expect(won).toHaveLength(1);
    expect(new TextDecoder().decode((await store.get())!.body)).toBe(`replace ${won[0]}`);
    for (const r of results)
      if (r.status === 'rejected') expect((r.reason as BatonError).code).toBe('store-changed');
  });

  it('leaves no temp files behind after writes and refusals', async () => {
    const { dir, store } = tempStore();
    await store.put(bytes('first'), { kind: 'create-only' });
    await batonErrorOf(store.put(bytes('x'), { kind: 'create-only' }));
    expect(Object.keys(snapshotDir(dir)).sort()).toEqual(['.', '.authority.lock', 'authority.json']);
  });

  it('reports that it enforces conditional writes and removes its probe', async () => {
    const { dir, store } = tempStore();
    await store.put(bytes('doc'));
    const before = snapshotDir(dir);
    const check = await store.checkConditionalWrites();
    expect(check).toEqual({
      enforced: true,
      failed: [],
      detail: expect.stringContaining('refused a second create-only write'),
    });
    expect(snapshotDir(dir)).toEqual(before);
  });

  it('refuses a document over 1 MiB naming its size', async () => {
    const { dir, store } = tempStore();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'authority.json'), new Uint8Array(2 * 1024 * 1024));
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'refused', reason: 'oversize' });
    expect(error.what).toContain(`${2 * 1024 * 1024} bytes`);
  });

  it('does not follow a symbolic link in place of the document', async () => {
    const { dir, store } = tempStore();
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'elsewhere'), 'x');
    symlinkSync(path.join(dir, 'elsewhere'), path.join(dir, 'authority.json'));
    const error = await batonErrorOf(store.get());
    expect(error).toMatchObject({ code: 'failed', reason: 'io', where: path.join(dir, 'authority.json') });
  });

  it('fails naming the directory when it cannot be written, and writes nothing', async () => {
    if (process.getuid?.() === 0) {
      // root ignores directory permissions; use a path below a regular file instead.
      const { dir } = tempStore();
      mkdirSync(path.dirname(dir), { recursive: true });
      writeFileSync(dir, 'not a directory');
      const store = new DirectoryStore(path.join(dir, 'sub'));
      const error = await batonErrorOf(store.put(bytes('doc')));
      expect(error).toMatchObject({ code: 'failed', reason: 'io', where: path.join(dir, 'sub') });
      expect(existsSync(path.join(dir, 'sub'))).toBe(false);
      return;
    }
    const { dir, store } = tempStore();
    mkdirSync(dir, { recursive: true });
    chmodSync(dir, 0o500);
    const error = await batonErrorOf(store.put(bytes('doc')));
    expect(error).toMatchObject({ code: 'failed', reason: 'io' });
  });
});
