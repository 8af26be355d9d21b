import { outside } from '../../src/outside-text.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, type AuthorityFiles } from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { decodeDocument, encodeDocument, firstDuplicateKey, strictBase64 } from '../../src/share/document.js';
import { DOCUMENT_FORMAT, type DocumentHeader } from '../../src/share/types.js';
import { fingerprintOfPem, makeBadDocuments, type Corpus } from '../helpers/bad-documents.js';

const DEPLOYMENT = '3f9a0c1d2e4b5a6978c1d2e3f4a5b6c7';
const WHERE = 's3://bucket/prefix/authority.json';
const enc = (text: string) => new TextEncoder().encode(text);
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64');

let files: AuthorityFiles;
let other: AuthorityFiles;
let foreign: AuthorityFiles;
let rotated: AuthorityFiles;
let fp: Fingerprint;

beforeAll(async () => {
  files = { ...(await mintAuthority(DEPLOYMENT)), 'authority-created': enc(`${DEPLOYMENT}\n`) };
  other = await mintAuthority(DEPLOYMENT);
  foreign = await mintAuthority('another-deployment');
  fp = fingerprintOfPem(files['ca.crt']!);
  const next = await mintAuthority(DEPLOYMENT, { replaces: fp });
  rotated = {
    ...next,
    'ca-previous.crt': files['ca.crt']!,
    'ca-previous.key': files['ca.key']!,
    'authority-created': files['authority-created']!,
  };
});

function headerFor(carried: AuthorityFiles, overrides: Partial<DocumentHeader> = {}): DocumentHeader {
  return {
    format: DOCUMENT_FORMAT,
    deployment: DEPLOYMENT,
    fingerprint: fingerprintOfPem(carried['ca.crt']!),
    previousFingerprint: carried['ca-previous.crt'] ? fingerprintOfPem(carried['ca-previous.crt']) : null,
    publishedAt: outside('2026-11-30T10:00:00.000Z'),
    publishedBy: outside('ctl-a'),
    ...overrides,
  };
}

/** The valid document as JSON, for a test to break in one way. */
async function validJson(carried: AuthorityFiles = files): Promise<Record<string, unknown>> {
  return JSON.parse(new TextDecoder().decode(await encodeDocument(headerFor(carried), carried)));
}

const bodyOf = (json: unknown) => enc(JSON.stringify(json));

async function refusal(body: Uint8Array, deployment = DEPLOYMENT): Promise<BatonError> {
  try {
    await decodeDocument(body, { deployment, where: WHERE });
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    return error as BatonError;
  }
  throw new Error('expected the document to be refused');
}

function expectRefused(error: BatonError, reason: RegExp | string): void {
  expect(error).toMatchObject({ code: 'refused', reason: 'document-refused' });
  if (typeof reason === 'string') expect(error.what).toContain(reason);
  else expect(error.what).toMatch(reason);
  expect(error.where).toContain(WHERE);
  expect(error.changed).toBe('Nothing was installed.');
  expect(error.next).toBeTruthy();
}

describe('the published document', () => {
  it('encodes exactly the fields of docs/publishing.md, in order, with files in allowlist order', async () => {
    const json = await validJson(rotated);
    expect(Object.keys(json)).toEqual([
      'format',
      'deployment',
      'fingerprint',
      'previous_fingerprint',
      'published_at',
      'published_by',
      'files',
    ]);
    expect(json.format).toBe('baton.authority/1');
    expect(json.previous_fingerprint).toBe(fp);
    expect(Object.keys(json.files as object)).toEqual([
      'ca.crt',
      'ca.key',
      'ca-previous.crt',
      'ca-previous.key',
      'authority-created',
    ]);
    expect((json.files as Record<string, string>)['ca.key']).toBe(b64(rotated['ca.key']!));
  });

  it('decodes what it encodes: the same files, header and checked pairs', async () => {
    const header = headerFor(rotated);
    const decoded = await decodeDocument(await encodeDocument(header, rotated), {
      deployment: DEPLOYMENT,
      where: WHERE,
    });
    expect(decoded.header).toEqual(header);
    expect(decoded.sealed).toBe(false);
    expect(decoded.files).toEqual(rotated);
    expect(decoded.current.fingerprint).toBe(header.fingerprint);
    expect(decoded.current.replaces).toBe(fp);
    expect(decoded.previous?.fingerprint).toBe(fp);
  });

  it('refuses a body that is not JSON', async () => {
    expectRefused(await refusal(enc('{"format": "baton.authority/1",')), 'not JSON');
  });

  it('refuses a body that is not UTF-8', async () => {
    expectRefused(await refusal(new Uint8Array([0x7b, 0xff, 0x7d])), 'not UTF-8');
  });

  it('refuses JSON that is not an object', async () => {
    expectRefused(await refusal(bodyOf([1, 2])), 'not a JSON object');
  });

  it('refuses a duplicate top-level key, which JSON.parse would silently resolve to the last', async () => {
    const text = JSON.stringify(await validJson());
    const body = enc(
      `${text.slice(0, -1)},"fingerprint":${JSON.stringify(fingerprintOfPem(other['ca.crt']!))}}`,
    );
    expectRefused(await refusal(body), 'the key "fingerprint" appears twice');
  });

  it('refuses a duplicate file name inside files', async () => {
    const text = JSON.stringify(await validJson());
    const body = enc(
      text.replace('"files":{', `"files":{"ca.key":${JSON.stringify(b64(other['ca.key']!))},`),
    );
    expectRefused(await refusal(body), 'the key "ca.key" appears twice');
  });

  it('refuses an unknown format tag, saying a newer baton may have written it', async () => {
    const error = await refusal(bodyOf({ ...(await validJson()), format: 'baton.authority/2' }));
    expectRefused(error, 'its format is "baton.authority/2"');
    expect(error.next).toContain('newer baton');
  });

  it('refuses a document with no format at all', async () => {
    const { format: _format, ...rest } = await validJson();
    expectRefused(await refusal(bodyOf(rest)), 'no "format" field');
  });

  it('refuses a missing top-level field, naming it', async () => {
    const { published_by: _by, ...rest } = await validJson();
    expectRefused(await refusal(bodyOf(rest)), 'the field "published_by" is missing');
  });

  it('refuses an extra top-level field, naming it', async () => {
    expectRefused(
      await refusal(bodyOf({ ...(await validJson()), signed_by: 'x' })),
      'unknown field "signed_by"',
    );
  });

  it('refuses a document that carries both files and sealed', async () => {
    const json = await validJson();
    expectRefused(await refusal(bodyOf({ ...json, sealed: { alg: 'AES-256-GCM' } })), 'never both');
  });

  it('refuses a header field of the wrong type', async () => {
    expectRefused(
      await refusal(bodyOf({ ...(await validJson()), published_at: 12 })),
      'the field "published_at" is not a non-empty string',
    );
    expectRefused(
      await refusal(bodyOf({ ...(await validJson()), fingerprint: 'SHA256:short' })),
      'the field "fingerprint" is not a fingerprint',
    );
  });

  it('refuses an unknown file name, naming it and saying a newer baton may have written it', async () => {
    const json = await validJson();
    const error = await refusal(
      bodyOf({ ...json, files: { ...(json.files as object), 'ca-next.key': b64(other['ca.key']!) } }),
    );
    expectRefused(error, 'unknown file name "ca-next.key"');
    expect(error.what).toContain('newer baton');
  });

  it.each(['ca.crt', 'ca.key'])('refuses a document without the required file %s', async (name) => {
    const json = await validJson();
    const { [name]: _dropped, ...rest } = json.files as Record<string, string>;
    expectRefused(
      await refusal(bodyOf({ ...json, files: rest })),
      `does not carry the required file "${name}"`,
    );
  });

  it('refuses base64 outside the standard alphabet', async () => {
    const json = await validJson();
    const key = (json.files as Record<string, string>)['ca.key']!;
    const files_ = { ...(json.files as object), 'ca.key': `${key.slice(0, 10)}-_${key.slice(12)}` };
    expectRefused(await refusal(bodyOf({ ...json, files: files_ })), 'the file "ca.key" is not valid base64');
  });

  it('refuses base64 without its padding or with non-zero unused bits', async () => {
    expect(strictBase64('QQ==')).toEqual(enc('A'));
    expect(strictBase64('QQ')).toBeUndefined();
    expect(strictBase64('QR==')).toBeUndefined();
    expect(strictBase64('QQ==\n')).toBeUndefined();
    const json = await validJson();
    const files_ = { ...(json.files as object), 'authority-created': b64(enc('x')).replace(/=+$/, '') };
    expectRefused(
      await refusal(bodyOf({ ...json, files: files_ })),
      'the file "authority-created" is not valid base64',
    );
  });

  it('refuses a document for another deployment, naming both', async () => {
    const error = await refusal(await encodeDocument(headerFor(files), files), 'some-other-deployment');
    expectRefused(error, `for the deployment "${DEPLOYMENT}", and this host is "some-other-deployment"`);
  });

  it('refuses a fingerprint that is not the fingerprint of the carried ca.crt, naming both', async () => {
    const claimed = fingerprintOfPem(other['ca.crt']!);
    const error = await refusal(await encodeDocument(headerFor(files, { fingerprint: claimed }), files));
    expectRefused(
      error,
      `its fingerprint ${claimed} is not the fingerprint of the ca.crt it carries (${fp})`,
    );
  });

  it('refuses a previous_fingerprint that does not match the carried ca-previous.crt', async () => {
    const claimed = fingerprintOfPem(other['ca.crt']!);
    const error = await refusal(
      await encodeDocument(headerFor(rotated, { previousFingerprint: claimed }), rotated),
    );
    expectRefused(
      error,
      `previous_fingerprint ${claimed} is not the fingerprint of the ca-previous.crt it carries`,
    );
  });

  it('refuses a previous_fingerprint when no ca-previous.crt is carried', async () => {
    const error = await refusal(
      await encodeDocument(
        headerFor(files, { previousFingerprint: fingerprintOfPem(other['ca.crt']!) }),
        files,
      ),
    );
    expectRefused(error, 'it carries no ca-previous.crt');
  });

  it('refuses half of the previous pair', async () => {
    const { 'ca-previous.key': _key, ...half } = rotated;
    expectRefused(
      await refusal(await encodeDocument(headerFor(half), half)),
      'half of the previous pair ("ca-previous.key" is missing)',
    );
  });

  it('refuses a key that does not pair with the certificate', async () => {
    const mixed = { ...files, 'ca.key': other['ca.key']! };
    const error = await refusal(await encodeDocument(headerFor(mixed), mixed));
    expectRefused(error, 'does not pair');
    expect(error.where).toContain('ca.crt + ca.key');
  });

  it('refuses a previous key that does not pair with the previous certificate', async () => {
    const mixed = { ...rotated, 'ca-previous.key': other['ca.key']! };
    const error = await refusal(await encodeDocument(headerFor(mixed), mixed));
    expectRefused(error, 'does not pair');
    expect(error.where).toContain('ca-previous.crt + ca-previous.key');
  });

  it('refuses an authority of another deployment (foreign O) even under our deployment id', async () => {
    const carried = { ...foreign };
    const error = await refusal(await encodeDocument(headerFor(carried), carried));
    expectRefused(error, 'another deployment');
  });

  describe('certificates baton would never mint (made with openssl)', () => {
    let corpus: Corpus;
    beforeAll(async () => {
      corpus = await makeBadDocuments(DEPLOYMENT);
    });
    const entry = (name: string) => corpus.documents.find((d) => d.name === name)!.body!;

    it('refuses a certificate that is not a CA', async () => {
      expectRefused(await refusal(entry('a certificate that is not a CA')), 'is not a CA certificate');
    });

    it('refuses a CA certificate that is not self-signed', async () => {
      expectRefused(await refusal(entry('a certificate that is not self-signed')), 'is not self-signed');
    });
  });

  it('refuses a marker that names another deployment', async () => {
    const carried = { ...files, 'authority-created': enc('another-deployment\n') };
    expectRefused(
      await refusal(await encodeDocument(headerFor(carried), carried)),
      '"authority-created" marker does not name',
    );
  });

  it('refuses a body over 1 MiB, naming its size', async () => {
    const text = JSON.stringify(await validJson());
    const body = enc(`${text.slice(0, -1)},"padding":"${'A'.repeat(1024 * 1024)}"}`);
    expectRefused(await refusal(body), `it is ${body.length} bytes, over the 1 MiB`);
  });

  it('finds duplicate keys only within one object, not across objects or in arrays and strings', () => {
    expect(firstDuplicateKey('{"a":{"a":1},"b":["a","a"],"c":"\\"a\\":"}')).toBeUndefined();
    expect(firstDuplicateKey('{"a":1,"b":{"x":1,"x":2}}')).toBe('x');
    expect(firstDuplicateKey('{"a\\u0062":1,"ab":2}')).toBe('ab');
  });
});
