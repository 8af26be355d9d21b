/**
 * A corpus of crafted published documents, each wrong in ONE way, built at test time from
 * REAL minted authorities (mintAuthority, plus openssl for the certificates baton would never
 * mint: not a CA, not self-signed). Pasted certificates would expire and hide which field a
 * test is about; every entry here says what is wrong and what a refusal must name.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mintAuthority, type AuthorityFiles } from '../../src/authority/index.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { encodeDocument } from '../../src/share/document.js';
import { DOCUMENT_FORMAT, type DocumentHeader } from '../../src/share/types.js';

/** The document's JSON shape (docs/publishing.md), loosely typed so a corpus entry can break it. */
export type DocumentJson = Record<string, unknown>;

export interface BadDocument {
  /** What is wrong, as a sentence fragment: "a key that does not pair with the certificate". */
  readonly name: string;
  /** The bytes to put in the store; absent for the oversize entry (see `oversize`). */
  readonly body?: Uint8Array;
  /** For the 100 MB entry: its size and a chunk generator, so no test holds it in memory. */
  readonly oversize?: { readonly bytes: number; readonly chunks: () => Generator<Uint8Array> };
  /** What the refusal must name (matched against the operator-facing text). */
  readonly reason: RegExp;
  /**
   * What a refusal on a WHOLE host must name, when it differs: a sealed document's header is
   * readable without the key, so a whole host is refused for holding a different authority.
   */
  readonly reasonOnWhole?: RegExp;
  /**
   * Where the refusal happens: the decoder (default), or the install step of adopt/force —
   * an expired authority is a readable document whose header a status view must still show.
   */
  readonly refusedAt?: 'decoder' | 'install';
  /** True when this entry is only meaningful with the seal key given to the reader. */
  readonly needsSealKey?: boolean;
}

export interface Corpus {
  readonly deployment: string;
  /** The authority the valid document carries. */
  readonly files: AuthorityFiles;
  readonly fingerprint: Fingerprint;
  /** A document that must be ACCEPTED (the positive control for every suite). */
  readonly valid: Uint8Array;
  /** The same authority sealed with `sealKey`; accepted when the reader has the key. */
  readonly validSealed: Uint8Array | undefined;
  readonly sealKey: Uint8Array;
  readonly documents: readonly BadDocument[];
}

const enc = (text: string) => new TextEncoder().encode(text);
const b64 = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('base64');

/** `SHA256:` + unpadded base64 of SHA-256 over the DER SPKI, computed independently of src/pki. */
export function fingerprintOfPem(certPem: Uint8Array): Fingerprint {
  const spki = new X509Certificate(Buffer.from(certPem)).publicKey.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(spki).digest('base64').replace(/=+$/, '')}` as Fingerprint;
}

/** The document of docs/publishing.md for `files`, key order as the design writes it. */
export function documentJson(
  deployment: string,
  files: AuthorityFiles,
  overrides: DocumentJson = {},
): DocumentJson {
  const carried: Record<string, string> = {};
  for (const [name, bytes] of Object.entries(files))
    if (bytes as Uint8Array | undefined) carried[name] = b64(bytes);
  return {
    format: 'baton.authority/1',
    deployment,
    fingerprint: fingerprintOfPem(files['ca.crt']!),
    previous_fingerprint: files['ca-previous.crt'] ? fingerprintOfPem(files['ca-previous.crt']) : null,
    published_at: new Date().toISOString(),
    published_by: 'corpus-host',
    files: carried,
    ...overrides,
  };
}

export const serialize = (doc: DocumentJson): Uint8Array => enc(JSON.stringify(doc));

export interface SealFunctions {
  /** Seals an encoded (unsealed) document with `key` — the project's own sealing. */
  seal(document: Uint8Array, key: Uint8Array): Promise<Uint8Array> | Uint8Array;
}

/**
 * Builds the corpus for `deployment`. Sealed entries are made with the project's own sealing
 * (passed in), so a test of the corpus is a test of the reader, not of a second implementation.
 */
export async function makeBadDocuments(deployment: string, sealing?: SealFunctions): Promise<Corpus> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'baton-corpus-'));
  try {
    return await build(deployment, work, sealing);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

async function build(deployment: string, work: string, sealing: SealFunctions | undefined): Promise<Corpus> {
  const files = withMarker(await mintAuthority(deployment), deployment);
  const other = withMarker(await mintAuthority(deployment), deployment);
  const foreign = await mintAuthority(`${deployment}-other`);
  const rotated = withMarker(
    await mintAuthority(deployment, { replaces: fingerprintOfPem(files['ca.crt']!) }),
    deployment,
  );
  const elevenYearsAgo = new Date(Date.now() - 11 * 365.25 * 24 * 3_600_000);
  const expired = withMarker(
    await mintAuthority(deployment, { clock: { now: () => elevenYearsAgo } }),
    deployment,
  );

  const key = files['ca.key']!;
  const notCa = opensslNonCa(work, key, deployment);
  const notSelfSigned = opensslSignedByOther(work, key, deployment, other['ca.key']!, other['ca.crt']!);

  const valid = documentJson(deployment, files);
  const fp = valid.fingerprint as string;
  const filesOf = (doc: DocumentJson) => doc.files as Record<string, string>;
  const withFiles = (patch: Record<string, string | undefined>) => {
    const next: Record<string, string> = { ...filesOf(valid) };
    for (const [name, value] of Object.entries(patch)) {
      if (value === undefined) delete next[name];
      else next[name] = value;
    }
    return serialize({ ...valid, files: next });
  };
  const validText = JSON.stringify(valid);

  const documents: BadDocument[] = [
    {
      name: 'a body that is not JSON (cut in the middle)',
      body: enc(validText.slice(0, Math.floor(validText.length / 2))),
      reason: /JSON/i,
    },
    { name: 'an empty body', body: new Uint8Array(), reason: /empty|JSON/i },
    { name: 'a JSON array instead of an object', body: enc(JSON.stringify([valid])), reason: /object|JSON/i },
    {
      name: 'an unknown format',
      body: serialize({ ...valid, format: 'baton.authority/2' }),
      reason: /format/i,
    },
    {
      name: 'an unknown file name (a newer baton wrote it)',
      body: withFiles({ 'ca-next.key': b64(other['ca.key']) }),
      reason: /ca-next\.key/,
    },
    { name: 'a missing ca.key', body: withFiles({ 'ca.key': undefined }), reason: /ca\.key/ },
    { name: 'a missing ca.crt', body: withFiles({ 'ca.crt': undefined }), reason: /ca\.crt/ },
    {
      name: 'bad base64 in ca.key',
      body: withFiles({ 'ca.key': `${b64(key).slice(0, 20)}!!*${b64(key).slice(23)}` }),
      reason: /base64/i,
    },
    {
      name: 'base64 without its padding',
      body: withFiles({ 'ca.crt': unpadded(b64(files['ca.crt'])) }),
      reason: /base64/i,
    },
    {
      name: 'a deployment that is not ours',
      body: serialize({ ...valid, deployment: `${deployment}-other` }),
      reason: /deployment/i,
    },
    {
      name: "a fingerprint that is not the carried certificate's",
      body: serialize({ ...valid, fingerprint: fingerprintOfPem(other['ca.crt']!) }),
      reason: /fingerprint/i,
    },
    {
      name: 'a malformed fingerprint',
      body: serialize({ ...valid, fingerprint: 'SHA256:abc' }),
      reason: /fingerprint/i,
    },
    { name: 'a null fingerprint', body: serialize({ ...valid, fingerprint: null }), reason: /fingerprint/i },
    {
      name: "a key that does not pair with the certificate (another authority's key)",
      body: withFiles({ 'ca.key': b64(other['ca.key']) }),
      reason: /pair|match/i,
    },
    {
      name: 'an authority of another deployment (O is not ours)',
      body: serialize(documentJson(deployment, { ...foreign, 'authority-created': enc(deployment) })),
      reason: /foreign|organi[sz]ation|\bO\b|deployment/i,
    },
    {
      name: 'a certificate that is not a CA',
      body: serialize(documentJson(deployment, { ...files, 'ca.crt': notCa })),
      reason: /\bCA\b|basicConstraints|keyCertSign/,
    },
    {
      name: 'a certificate that is not self-signed',
      body: serialize(documentJson(deployment, { ...files, 'ca.crt': notSelfSigned })),
      reason: /self-signed|signature|signed/i,
    },
    {
      name: 'an expired certificate',
      body: serialize(documentJson(deployment, expired)),
      reason: /expired/i,
      reasonOnWhole: /differs/i,
      refusedAt: 'install',
    },
    {
      name: 'duplicate JSON keys (a second "fingerprint")',
      body: duplicateKey(validText, 'fingerprint', fingerprintOfPem(other['ca.crt']!)),
      reason: /duplicate|twice/i,
    },
    {
      name: 'duplicate JSON keys inside files (a second "ca.key")',
      body: duplicateFileKey(validText, b64(other['ca.key'])),
      reason: /duplicate|twice/i,
    },
    {
      name: 'a previous_fingerprint that does not match the carried ca-previous.crt',
      body: serialize(
        documentJson(
          deployment,
          { ...rotated, 'ca-previous.crt': files['ca.crt']!, 'ca-previous.key': key },
          { previous_fingerprint: fingerprintOfPem(other['ca.crt']!) },
        ),
      ),
      reason: /previous/i,
    },
    {
      name: 'a ca-previous.key without its ca-previous.crt',
      body: serialize(
        documentJson(deployment, { ...rotated, 'ca-previous.key': key }, { previous_fingerprint: fp }),
      ),
      reason: /previous/i,
    },
    {
      name: 'an extra top-level field',
      body: serialize({ ...valid, signed_by: 'someone' }),
      reason: /signed_by|field/i,
    },
    {
      name: 'a missing top-level field (no deployment)',
      body: serialize(without(valid, 'deployment')),
      reason: /deployment/i,
    },
    {
      name: 'files that is a string, not an object',
      body: serialize({ ...valid, files: b64(files['ca.crt']) }),
      reason: /files/i,
    },
    { name: 'files that is null', body: serialize({ ...valid, files: null }), reason: /files|sealed/i },
    {
      name: 'a ca.crt that carries two certificates',
      body: withFiles({ 'ca.crt': b64(concat(files['ca.crt']!, other['ca.crt']!)) }),
      reason: /ca\.crt/,
    },
    {
      name: 'a ca.key that is not a key at all',
      body: withFiles({ 'ca.key': b64(enc('not a key\n')) }),
      reason: /ca\.key/,
    },
    {
      name: 'a 100 MB body',
      oversize: { bytes: 100 * 1024 * 1024, chunks: () => oversizeChunks(validText, 100 * 1024 * 1024) },
      reason: /1 MiB|too large|bytes/i,
    },
  ];

  const sealKey = new Uint8Array(randomBytes(32));
  let validSealed: Uint8Array | undefined;
  if (sealing) {
    validSealed = await sealing.seal(serialize(valid), sealKey);
    const otherSealed = await sealing.seal(
      serialize(documentJson(deployment, rotated, { previous_fingerprint: null })),
      sealKey,
    );
    const wrongKey = await sealing.seal(serialize(valid), new Uint8Array(randomBytes(32)));
    documents.push(
      {
        name: 'a document sealed with another key',
        body: wrongKey,
        reason: /seal|decrypt|key|authenticat/i,
        needsSealKey: true,
      },
      {
        name: 'a sealed document whose ciphertext was tampered with',
        body: tamperCiphertext(validSealed),
        reason: /seal|decrypt|tamper|authenticat/i,
        needsSealKey: true,
      },
      {
        name: "a sealed document whose header was swapped with another sealed document's",
        body: swapHeader(validSealed, otherSealed),
        reason: /seal|decrypt|tamper|authenticat|header/i,
        needsSealKey: true,
      },
      {
        name: 'a sealed document read without the seal key',
        body: validSealed,
        reason: /seal/i,
        reasonOnWhole: /differs/i,
      },
    );
  }
  return {
    deployment,
    files,
    fingerprint: fp as Fingerprint,
    valid: serialize(valid),
    validSealed,
    sealKey,
    documents,
  };
}

/** The marker is part of the published set (docs/publishing.md): add it when the mint did not. */
function withMarker(files: AuthorityFiles, deployment: string): AuthorityFiles {
  return files['authority-created'] ? files : { ...files, 'authority-created': enc(deployment) };
}

/**
 * Base64 whose length is no longer a multiple of 4: the padding stripped, or (when the bytes
 * needed none) one character too many — what a lenient decoder would silently accept.
 */
function unpadded(text: string): string {
  return text.endsWith('=') ? text.replace(/=+$/, '') : `${text}A`;
}

function without(doc: DocumentJson, field: string): DocumentJson {
  const { [field]: _dropped, ...rest } = doc;
  return rest;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  return new Uint8Array(Buffer.concat([a, b]));
}

/** `{"fingerprint":"A",…}` → `{"fingerprint":"A",…,"fingerprint":"B"}` — JSON.parse keeps B. */
function duplicateKey(text: string, key: string, value: string): Uint8Array {
  return enc(`${text.slice(0, -1)},${JSON.stringify(key)}:${JSON.stringify(value)}}`);
}

function duplicateFileKey(text: string, value: string): Uint8Array {
  const at = text.indexOf('"files":{') + '"files":{'.length;
  return enc(`${text.slice(0, at)}"ca.key":${JSON.stringify(value)},${text.slice(at)}`);
}

/** A document-looking prefix and then padding inside a string field, never closed early. */
function* oversizeChunks(validText: string, total: number): Generator<Uint8Array> {
  const head = enc(`${validText.slice(0, -1)},"padding":"`);
  yield head;
  const block = enc('A'.repeat(1024 * 1024));
  let sent = head.length;
  while (sent + block.length + 2 <= total) {
    yield block;
    sent += block.length;
  }
  yield enc(`${'A'.repeat(Math.max(0, total - sent - 2))}"}`);
}

/** Flips one bit in the longest base64 string value of a sealed document (the ciphertext). */
function tamperCiphertext(sealed: Uint8Array): Uint8Array {
  const doc = JSON.parse(Buffer.from(sealed).toString('utf8')) as DocumentJson;
  const target = longestString(doc);
  if (!target) throw new Error('bad-documents: the sealed document has no string to tamper with');
  const bytes = Buffer.from(target.value, 'base64');
  bytes[Math.floor(bytes.length / 2)]! ^= 0x01;
  target.set(bytes.toString('base64'));
  return serialize(doc);
}

/** Another sealed document's header fields around this one's sealed payload. */
function swapHeader(sealed: Uint8Array, otherSealed: Uint8Array): Uint8Array {
  const doc = JSON.parse(Buffer.from(sealed).toString('utf8')) as DocumentJson;
  const other = JSON.parse(Buffer.from(otherSealed).toString('utf8')) as DocumentJson;
  for (const field of ['fingerprint', 'previous_fingerprint', 'published_at', 'published_by']) {
    if (field in other) doc[field] = other[field];
  }
  return serialize(doc);
}

function longestString(value: unknown): { value: string; set: (v: string) => void } | undefined {
  let best: { value: string; set: (v: string) => void } | undefined;
  const visit = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node as Record<string, unknown>)) {
      if (typeof v === 'string' && (!best || v.length > best.value.length)) {
        best = { value: v, set: (next) => ((node as Record<string, unknown>)[k] = next) };
      } else visit(v);
    }
  };
  visit(value);
  return best;
}

/** A self-signed certificate for `keyPem` with O = deployment that is NOT a CA. */
function opensslNonCa(work: string, keyPem: Uint8Array, deployment: string): Uint8Array {
  const keyFile = path.join(work, 'nonca.key');
  writeFileSync(keyFile, keyPem, { mode: 0o600 });
  const conf = path.join(work, 'nonca.cnf');
  writeFileSync(
    conf,
    [
      '[req]',
      'distinguished_name = dn',
      'x509_extensions = ext',
      'prompt = no',
      '[dn]',
      'CN = baton node wire CA',
      `O = ${deployment}`,
      '[ext]',
      'basicConstraints = critical,CA:FALSE',
      'keyUsage = critical,digitalSignature',
      '',
    ].join('\n'),
  );
  const out = path.join(work, 'nonca.crt');
  execFileSync(
    'openssl',
    ['req', '-x509', '-new', '-key', keyFile, '-config', conf, '-days', '3650', '-sha256', '-out', out],
    { stdio: 'pipe' },
  );
  return new Uint8Array(readFileSync(out));
}

/** A CA certificate for `keyPem` (O = deployment) signed by ANOTHER authority's key. */
function opensslSignedByOther(
  work: string,
  keyPem: Uint8Array,
  deployment: string,
  otherKey: Uint8Array,
  otherCert: Uint8Array,
): Uint8Array {
  const keyFile = path.join(work, 'subject.key');
  const otherKeyFile = path.join(work, 'issuer.key');
  const otherCertFile = path.join(work, 'issuer.crt');
  writeFileSync(keyFile, keyPem, { mode: 0o600 });
  writeFileSync(otherKeyFile, otherKey, { mode: 0o600 });
  writeFileSync(otherCertFile, otherCert);
  const conf = path.join(work, 'signed.cnf');
  writeFileSync(
    conf,
    [
      '[req]',
      'distinguished_name = dn',
      'prompt = no',
      '[dn]',
      'CN = baton node wire CA',
      `O = ${deployment}`,
      '[ext]',
      'basicConstraints = critical,CA:TRUE,pathlen:0',
      'keyUsage = critical,keyCertSign,cRLSign,digitalSignature',
      '',
    ].join('\n'),
  );
  const csr = path.join(work, 'subject.csr');
  execFileSync('openssl', ['req', '-new', '-key', keyFile, '-config', conf, '-out', csr], { stdio: 'pipe' });
  const out = path.join(work, 'signed.crt');
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      otherCertFile,
      '-CAkey',
      otherKeyFile,
      '-set_serial',
      `0x${randomBytes(15).toString('hex')}`,
      '-days',
      '3650',
      '-sha256',
      '-extfile',
      conf,
      '-extensions',
      'ext',
      '-out',
      out,
    ],
    { stdio: 'pipe' },
  );
  return new Uint8Array(readFileSync(out));
}

/** The project's own sealing, driven from a plain document: the corpus tests the reader. */
export const projectSealing: SealFunctions = {
  async seal(document, key) {
    const doc = JSON.parse(Buffer.from(document).toString('utf8')) as Record<string, unknown>;
    const header: DocumentHeader = {
      format: DOCUMENT_FORMAT,
      deployment: doc.deployment as string,
      fingerprint: doc.fingerprint as Fingerprint,
      previousFingerprint: (doc.previous_fingerprint as Fingerprint | null) ?? null,
      publishedAt: doc.published_at as string,
      publishedBy: doc.published_by as string,
    };
    const files: AuthorityFiles = {};
    for (const [name, b64] of Object.entries(doc.files as Record<string, string>)) {
      files[name as keyof AuthorityFiles] = new Uint8Array(Buffer.from(b64, 'base64'));
    }
    return encodeDocument(header, files, key);
  },
};
