import { outside } from '../../src/outside-text.js';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, type AuthorityFiles } from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import { encodeDocument } from '../../src/share/document.js';
import { openPublished, readPublished } from '../../src/share/published.js';
import { DOCUMENT_FORMAT, type DocumentHeader } from '../../src/share/types.js';
import { startS3Sandbox, type S3Sandbox } from '../../src/sandbox/s3.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { fingerprintOfPem } from '../helpers/bad-documents.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'dep-published';
const enc = (text: string) => new TextEncoder().encode(text);
const sealKey = new Uint8Array(32).fill(7);

let files: AuthorityFiles;
let rotated: AuthorityFiles;
let body: Uint8Array;
let header: DocumentHeader;

function headerFor(carried: AuthorityFiles): DocumentHeader {
  return {
    format: DOCUMENT_FORMAT,
    deployment: DEPLOYMENT,
    fingerprint: fingerprintOfPem(carried['ca.crt']!),
    previousFingerprint: carried['ca-previous.crt'] ? fingerprintOfPem(carried['ca-previous.crt']) : null,
    publishedAt: outside('2026-11-30T10:00:00.000Z'),
    publishedBy: outside('ctl-a'),
  };
}

beforeAll(async () => {
  files = { ...(await mintAuthority(DEPLOYMENT)), 'authority-created': enc(`${DEPLOYMENT}\n`) };
  const next = await mintAuthority(DEPLOYMENT, { replaces: fingerprintOfPem(files['ca.crt']!) });
  rotated = { ...next, 'ca-previous.crt': files['ca.crt']!, 'ca-previous.key': files['ca.key']! };
  header = headerFor(files);
  body = await encodeDocument(header, files);
});

describe('reading what is published', () => {
  it('says none for an empty store — an ordinary state, not a fault', async () => {
    const store = new MemoryStore();
    expect(await readPublished(store, DEPLOYMENT)).toEqual({ state: 'none', location: store.location });
  });

  it('returns the header, the ETag read, the checked pairs and the files of an unsealed document', async () => {
    const store = new MemoryStore();
    const rotatedBody = await encodeDocument(headerFor(rotated), rotated);
    const etag = store.setDocument(rotatedBody);
    const read = await readPublished(store, DEPLOYMENT);
    expect(read).toMatchObject({
      state: 'present',
      location: store.location,
      etag,
      header: headerFor(rotated),
      sealed: false,
    });
    if (read.state !== 'present') throw new Error('unreachable');
    expect(read.current?.fingerprint).toBe(headerFor(rotated).fingerprint);
    expect(read.current?.replaces).toBe(header.fingerprint);
    expect(read.previous?.fingerprint).toBe(header.fingerprint);
    // Every document baton writes carries the marker billet's reader requires, even when the
    // files handed to the encoder lacked it.
    expect(read.files).toEqual({ ...rotated, 'authority-created': enc(`${DEPLOYMENT}\n`) });
  });

  it('never shows the carried key when a read is serialised or logged', async () => {
    const store = new MemoryStore({ document: body });
    const read = await readPublished(store, DEPLOYMENT);
    if (read.state !== 'present') throw new Error('unreachable');
    expect(read.files?.['ca.key']).toEqual(files['ca.key']);
    const keyText = new TextDecoder().decode(files['ca.key']);
    const { inspect } = await import('node:util');
    for (const shown of [JSON.stringify(read), inspect(read, { depth: 10 })]) {
      expect(shown).not.toContain('PRIVATE KEY');
      expect(shown).not.toContain(keyText.split('\n')[1]!);
    }
  });

  it('opens the files again, checking the ETag, from a copy of a read that lost them', async () => {
    const store = new MemoryStore({ document: body });
    const read = await readPublished(store, DEPLOYMENT);
    if (read.state !== 'present') throw new Error('unreachable');
    const copy = { ...read };
    expect('files' in copy).toBe(false);
    expect(await openPublished(store, DEPLOYMENT, undefined, copy)).toEqual(files);
    expect(store.calls.map((c) => c.op)).toEqual(['get', 'get']);
  });

  it('returns the header of a sealed document without the key, with no pairs and no files', async () => {
    const store = new MemoryStore({ document: await encodeDocument(header, files, sealKey) });
    const read = await readPublished(store, DEPLOYMENT);
    expect(read).toMatchObject({
      state: 'present',
      sealed: true,
      header,
      current: undefined,
      previous: undefined,
    });
    if (read.state === 'present') expect(read.files).toBeUndefined();
  });

  it('opens a sealed document with the key', async () => {
    const store = new MemoryStore({ document: await encodeDocument(header, files, sealKey) });
    const read = await readPublished(store, DEPLOYMENT, sealKey);
    expect(read).toMatchObject({ state: 'present', sealed: true, header });
    if (read.state === 'present') {
      expect(read.files).toEqual(files);
      expect(read.current?.fingerprint).toBe(header.fingerprint);
    }
  });

  it('reports a refused document as unreadable with the refusal, and changes nothing in the store', async () => {
    const store = new MemoryStore({ document: body });
    const before = store.snapshot();
    const read = await readPublished(store, 'another-deployment');
    expect(read.state).toBe('unreadable');
    if (read.state !== 'unreadable') throw new Error('unreachable');
    expect(read.error.code).toBe('refused');
    expect(read.error.what).toContain('for the deployment "dep-published"');
    expect(store.snapshot()).toEqual(before);
    expect(store.calls.map((c) => c.op)).toEqual(['get']);
  });

  it('reports a store that cannot be read as unreadable, never throwing', async () => {
    const store = new MemoryStore().failNext(
      'get',
      new BatonError('failed', { what: 'The bucket does not exist.', where: 's3://b/k' }),
    );
    const read = await readPublished(store, DEPLOYMENT);
    expect(read).toMatchObject({
      state: 'unreadable',
      error: { code: 'failed', what: 'The bucket does not exist.' },
    });
  });

  it('wraps an unexpected error from a store as a failure naming the location', async () => {
    const store = new MemoryStore().beforeNext('get', () => {
      throw new Error('socket hang up');
    });
    const read = await readPublished(store, DEPLOYMENT);
    expect(read.state).toBe('unreadable');
    if (read.state === 'unreadable') {
      expect(read.error).toMatchObject({ code: 'failed', reason: 'other' });
      expect(read.error.what).toContain('socket hang up');
      expect(read.error.where).toBe(store.location);
    }
  });
});

describe('opening the files of what was read', () => {
  it('hands back the files the read already checked', async () => {
    const store = new MemoryStore({ document: body });
    const read = await readPublished(store, DEPLOYMENT);
    if (read.state !== 'present') throw new Error('unreachable');
    expect(await openPublished(store, DEPLOYMENT, undefined, read)).toEqual(files);
  });

  it('refuses to open a sealed document without the key', async () => {
    const store = new MemoryStore({ document: await encodeDocument(header, files, sealKey) });
    const read = await readPublished(store, DEPLOYMENT);
    if (read.state !== 'present') throw new Error('unreachable');
    await expect(openPublished(store, DEPLOYMENT, undefined, read)).rejects.toMatchObject({
      code: 'refused',
      what: expect.stringContaining('no seal key'),
    });
  });

  it('says store-changed when the document changed since the read it is asked to open', async () => {
    const store = new MemoryStore({ document: await encodeDocument(header, files, sealKey) });
    const read = await readPublished(store, DEPLOYMENT);
    if (read.state !== 'present') throw new Error('unreachable');
    store.setDocument(await encodeDocument(headerFor(rotated), rotated, sealKey));
    await expect(openPublished(store, DEPLOYMENT, sealKey, read)).rejects.toMatchObject({
      code: 'store-changed',
      reason: 'replaced',
      where: store.location,
    });
  });
});

describe('reading through the real adapters', () => {
  let s3: S3Sandbox;
  let temp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    temp = makeTempDir('baton-published-');
    s3 = await startS3Sandbox({ dir: path.join(temp.dir, 's3') });
  });
  afterAll(async () => {
    await ifSet(s3)?.close();
    ifSet(temp)?.cleanup();
  });

  it('reads none, then the published document with its ETag, from s3rver', async () => {
    const store = await s3.openStore();
    expect((await readPublished(store, DEPLOYMENT)).state).toBe('none');
    const { etag } = await store.put(body, { kind: 'create-only' });
    const read = await readPublished(store, DEPLOYMENT);
    expect(read).toMatchObject({ state: 'present', etag, header });
    if (read.state === 'present') expect(read.files).toEqual(files);
  });

  it('reads a sealed document from the directory store, and changes nothing on disk when it refuses one', async () => {
    const dir = path.join(temp.dir, 'dir-store');
    const store = new DirectoryStore(dir);
    await store.put(await encodeDocument(header, files, sealKey), { kind: 'create-only' });
    const opened = await readPublished(store, DEPLOYMENT, sealKey);
    expect(opened).toMatchObject({ state: 'present', sealed: true });
    if (opened.state === 'present') expect(opened.files).toEqual(files);
    const before = snapshotDir(dir);
    const wrongKey = new Uint8Array(32).fill(9);
    const read = await readPublished(store, DEPLOYMENT, wrongKey);
    expect(read).toMatchObject({ state: 'unreadable', error: { code: 'refused' } });
    expect(snapshotDir(dir)).toEqual(before);
  });
});
