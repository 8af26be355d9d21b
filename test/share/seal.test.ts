import { outside } from '../../src/outside-text.js';
import { randomBytes } from 'node:crypto';
import { chmodSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, type AuthorityFiles } from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import { decodeDocument, encodeDocument, parseDocument, sealDocument } from '../../src/share/document.js';
import { associatedData, readSealKey } from '../../src/share/seal.js';
import { DOCUMENT_FORMAT, type DocumentHeader } from '../../src/share/types.js';
import { fingerprintOfPem } from '../helpers/bad-documents.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = 'dep-seal';
const WHERE = 'file:///srv/store/authority.json';
const enc = (text: string) => new TextEncoder().encode(text);
const key = () => new Uint8Array(randomBytes(32));

let files: AuthorityFiles;
let second: AuthorityFiles;
let sealKey: Uint8Array;

beforeAll(async () => {
  files = { ...(await mintAuthority(DEPLOYMENT)), 'authority-created': enc(`${DEPLOYMENT}\n`) };
  second = { ...(await mintAuthority(DEPLOYMENT)), 'authority-created': enc(`${DEPLOYMENT}\n`) };
  sealKey = key();
});

function headerFor(carried: AuthorityFiles, publishedBy = 'ctl-a'): DocumentHeader {
  return {
    format: DOCUMENT_FORMAT,
    deployment: DEPLOYMENT,
    fingerprint: fingerprintOfPem(carried['ca.crt']!),
    previousFingerprint: null,
    publishedAt: outside('2026-11-30T10:00:00.000Z'),
    publishedBy: outside(publishedBy),
  };
}

const json = (body: Uint8Array) => JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>;
const bodyOf = (value: unknown) => enc(JSON.stringify(value));

async function refusal(body: Uint8Array, withKey: Uint8Array | undefined): Promise<BatonError> {
  try {
    await decodeDocument(body, { deployment: DEPLOYMENT, where: WHERE, sealKey: withKey });
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    expect((error as BatonError).code).toBe('refused');
    expect((error as BatonError).changed).toBe('Nothing was installed.');
    return error as BatonError;
  }
  throw new Error('expected a refusal');
}

describe('sealed documents', () => {
  it('round-trip: the files come back with the key, and no file content is readable in the document', async () => {
    const body = await encodeDocument(headerFor(files), files, sealKey);
    const doc = json(body);
    expect(Object.keys(doc)).toEqual([
      'format',
      'deployment',
      'fingerprint',
      'previous_fingerprint',
      'published_at',
      'published_by',
      'sealed',
    ]);
    expect(Object.keys(doc.sealed as object)).toEqual(['alg', 'nonce', 'ciphertext', 'tag']);
    expect((doc.sealed as { alg: string }).alg).toBe('AES-256-GCM');
    const text = new TextDecoder().decode(body);
    expect(text).not.toContain(Buffer.from(files['ca.key']!).toString('base64').slice(0, 40));
    expect(text).not.toContain('PRIVATE KEY');
    const decoded = await decodeDocument(body, { deployment: DEPLOYMENT, where: WHERE, sealKey });
    expect(decoded.sealed).toBe(true);
    expect(decoded.files).toEqual(files);
    expect(decoded.current.fingerprint).toBe(headerFor(files).fingerprint);
  });

  it('uses a fresh nonce for every seal of the same files', async () => {
    const a = json(await encodeDocument(headerFor(files), files, sealKey)).sealed as {
      nonce: string;
      ciphertext: string;
    };
    const b = json(await encodeDocument(headerFor(files), files, sealKey)).sealed as {
      nonce: string;
      ciphertext: string;
    };
    expect(a.nonce).not.toBe(b.nonce);
    expect(a.ciphertext).not.toBe(b.ciphertext);
  });

  it('keeps the header fingerprints readable without the key', async () => {
    const body = await encodeDocument(headerFor(files), files, sealKey);
    const parsed = parseDocument(body, { deployment: DEPLOYMENT, where: WHERE });
    expect(parsed.header.fingerprint).toBe(headerFor(files).fingerprint);
    expect(parsed.sealed).toBeDefined();
    expect(parsed.files).toBeUndefined();
  });

  it('refuses to open without the key, saying to set seal_key_file', async () => {
    const error = await refusal(await encodeDocument(headerFor(files), files, sealKey), undefined);
    expect(error.what).toContain('sealed and this host has no seal key');
    expect(error.next).toContain('seal_key_file');
  });

  it('refuses a document sealed with another key', async () => {
    const error = await refusal(await encodeDocument(headerFor(files), files, key()), sealKey);
    expect(error.what).toContain("does not open with this host's seal key");
    expect(error.where).toBe(WHERE);
  });

  it.each(['ciphertext', 'tag', 'nonce'] as const)(
    'refuses a document whose %s was tampered with',
    async (field) => {
      const doc = json(await encodeDocument(headerFor(files), files, sealKey));
      const sealed = doc.sealed as Record<string, string>;
      const bytes = Buffer.from(sealed[field]!, 'base64');
      bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
      sealed[field] = bytes.toString('base64');
      expect((await refusal(bodyOf(doc), sealKey)).what).toContain("does not open with this host's seal key");
    },
  );

  it("refuses a sealed payload moved under another sealed document's header", async () => {
    const mine = json(await encodeDocument(headerFor(files), files, sealKey));
    const theirs = json(await encodeDocument(headerFor(second, 'ctl-b'), second, sealKey));
    const swapped = { ...theirs, sealed: mine.sealed };
    const error = await refusal(bodyOf(swapped), sealKey);
    expect(error.what).toContain('or the document was altered, its files or its header');
  });

  it('refuses a header whose diagnostic field was edited, because the header is the associated data', async () => {
    const doc = json(await encodeDocument(headerFor(files), files, sealKey));
    expect((await refusal(bodyOf({ ...doc, published_by: 'mallory' }), sealKey)).what).toContain(
      "does not open with this host's seal key",
    );
  });

  it('refuses an unsealed document when this host has a seal key', async () => {
    const error = await refusal(await encodeDocument(headerFor(files), files), sealKey);
    expect(error.what).toContain('it is not sealed');
  });

  it('refuses an unknown sealing algorithm and malformed sealed fields', async () => {
    const doc = json(await encodeDocument(headerFor(files), files, sealKey));
    const sealed = doc.sealed as Record<string, string>;
    expect(
      (await refusal(bodyOf({ ...doc, sealed: { ...sealed, alg: 'ChaCha20-Poly1305' } }), sealKey)).what,
    ).toContain('sealed with "ChaCha20-Poly1305"');
    expect(
      (await refusal(bodyOf({ ...doc, sealed: { ...sealed, tag: 'not base64!' } }), sealKey)).what,
    ).toContain('sealed "tag" is not valid base64');
    expect((await refusal(bodyOf({ ...doc, sealed: { ...sealed, extra: 'x' } }), sealKey)).what).toContain(
      'unknown field "extra"',
    );
  });

  it('binds every header field, in a fixed order, into the associated data', () => {
    const base = headerFor(files);
    const ad = (h: DocumentHeader) => Buffer.from(associatedData(h)).toString();
    for (const change of [
      { deployment: 'x' },
      { fingerprint: headerFor(second).fingerprint },
      { previousFingerprint: headerFor(second).fingerprint },
      { publishedAt: outside('later') },
      { publishedBy: outside('ctl-b') },
    ]) {
      expect(ad({ ...base, ...change })).not.toBe(ad(base));
    }
  });

  it('seals an unsealed document with sealDocument, keeping its header', async () => {
    const plain = await encodeDocument(headerFor(files), files);
    const sealed = await sealDocument(plain, sealKey);
    const decoded = await decodeDocument(sealed, { deployment: DEPLOYMENT, where: WHERE, sealKey });
    expect(decoded.header).toEqual(headerFor(files));
    expect(decoded.files).toEqual(files);
  });
});

describe('the seal key file', () => {
  const temp = makeTempDir('baton-seal-key-');
  afterAll(() => temp.cleanup());
  const file = (name: string, content: Uint8Array, mode = 0o600) => {
    const p = path.join(temp.dir, name);
    writeFileSync(p, content, { mode });
    chmodSync(p, mode);
    return p;
  };
  async function configError(p: string): Promise<BatonError> {
    try {
      await readSealKey(p);
    } catch (error) {
      expect((error as BatonError).code).toBe('config');
      expect((error as BatonError).where).toBe(p);
      return error as BatonError;
    }
    throw new Error('expected the key file to be refused');
  }

  it('reads exactly 32 bytes from a 0600 file', async () => {
    const bytes = key();
    expect(await readSealKey(file('good.key', bytes))).toEqual(bytes);
  });

  it('refuses a key of the wrong size, naming the size', async () => {
    expect((await configError(file('short.key', new Uint8Array(31)))).what).toContain('holds 31 bytes');
    expect((await configError(file('long.key', new Uint8Array(33)))).what).toContain('holds 33 bytes');
  });

  it('refuses a key readable by group or others, naming the mode', async () => {
    const error = await configError(file('open.key', key(), 0o640));
    expect(error.what).toContain('mode 0640');
    expect(error.next).toContain('chmod 600');
  });

  it('refuses a symbolic link and a missing file', async () => {
    const target = file('target.key', key());
    const link = path.join(temp.dir, 'link.key');
    symlinkSync(target, link);
    expect((await configError(link)).what).toContain('symbolic link');
    expect((await configError(path.join(temp.dir, 'missing.key'))).what).toContain('ENOENT');
  });
});
