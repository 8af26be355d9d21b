/**
 * ONE KEY, ONE SPELLING. The decoder property test once adopted a published key whose PEM had a
 * byte flipped and still paired (seed {"kind":"flip","at":1460,"xor":7}): the flip landed where
 * the reader did not look. Each such place is flipped here on purpose — the unused trailing bits
 * of the base64, the ECPrivateKey version byte, the armour's whitespace — and must be refused by
 * the reader, by the pair check, and by a document that carries it; the unflipped bytes pass.
 */
import { createPrivateKey } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, type AuthorityFiles } from '../../src/authority/index.js';
import { isBatonError } from '../../src/errors.js';
import { OutsideText } from '../../src/outside-text.js';
import { inspectPair, parsePrivateKey } from '../../src/pki/inspect-pair.js';
import { pemDecode, pemEncode } from '../../src/pki/pem.js';
import { decodeDocument, encodeDocument } from '../../src/share/document.js';
import { DOCUMENT_FORMAT } from '../../src/share/types.js';
import { fingerprintOfFiles, TEST_DEPLOYMENT } from '../helpers/authority.js';

const DEP = TEST_DEPLOYMENT;
let files: AuthorityFiles;
let key: string;
let cert: string;

beforeAll(async () => {
  files = await mintAuthority(DEP);
  key = Buffer.from(files['ca.key']!).toString('latin1');
  cert = Buffer.from(files['ca.crt']!).toString('latin1');
});

const bytes = (text: string) => new Uint8Array(Buffer.from(text, 'latin1'));

/** The last base64 character before `=` padding, with one of its unused low bits set. */
function setTrailingBit(pem: string): string {
  const at = pem.search(/[A-Za-z0-9+/](?==+\n-----END)/);
  if (at < 0) throw new Error('fixture: this PEM has no padding, so no unused bits');
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const flipped = alphabet[alphabet.indexOf(pem[at]!) ^ 1]!;
  return pem.slice(0, at) + flipped + pem.slice(at + 1);
}

/** The same key with its ECPrivateKey version INTEGER set to `version`, armoured canonically. */
function withVersion(pem: string, version: number): string {
  const der = Buffer.from(pemDecode('EC PRIVATE KEY', bytes(pem))!);
  const header = der[1]! < 0x80 ? 2 : 2 + (der[1]! & 0x7f);
  expect([...der.subarray(header, header + 3)]).toEqual([0x02, 0x01, 0x01]);
  der[header + 2] = version;
  return pemEncode('EC PRIVATE KEY', der);
}

/** A document carrying `keyPem` as ca.key (the decoder's own encoder, unsealed). */
async function documentWith(keyPem: string): Promise<Uint8Array> {
  return encodeDocument(
    {
      format: DOCUMENT_FORMAT,
      deployment: DEP,
      fingerprint: await fingerprintOfFiles(files),
      previousFingerprint: null,
      publishedAt: new OutsideText('2026-12-04T00:00:00.000Z'),
      publishedBy: new OutsideText('pem-strict'),
    },
    { ...files, 'ca.key': bytes(keyPem) },
    undefined,
  );
}

async function refusedAsDocument(keyPem: string): Promise<boolean> {
  try {
    await decodeDocument(await documentWith(keyPem), { deployment: DEP, where: 'memory://pem-strict' });
    return false;
  } catch (error) {
    if (!isBatonError(error)) throw error;
    return error.code === 'refused';
  }
}

describe('the PEM/DER reader takes the bytes exactly as Go and openssl write them', () => {
  it('the unflipped key and certificate are read, pair, and travel in a document', async () => {
    expect(pemDecode('EC PRIVATE KEY', bytes(key))).toBeDefined();
    expect(parsePrivateKey(bytes(key))).toBeDefined();
    expect((await inspectPair(bytes(key), bytes(cert), DEP)).ok).toBe(true);
    expect(await refusedAsDocument(key)).toBe(false);
  });

  it('base64 whose unused trailing bits are set (the same DER) is refused', async () => {
    const flipped = setTrailingBit(key);
    expect(flipped).not.toBe(key);
    // The flip is invisible to a lenient decoder: the DER is the same.
    expect(Buffer.from(flipped.replace(/-----[^-]+-----|\n/g, ''), 'base64')).toEqual(
      Buffer.from(key.replace(/-----[^-]+-----|\n/g, ''), 'base64'),
    );
    expect(pemDecode('EC PRIVATE KEY', bytes(flipped))).toBeUndefined();
    expect((await inspectPair(bytes(flipped), bytes(cert), DEP)).ok).toBe(false);
    expect(await refusedAsDocument(flipped)).toBe(true);
    // The certificate's PEM too, when it has padding.
    if (/=\n-----END/.test(cert))
      expect(pemDecode('CERTIFICATE', bytes(setTrailingBit(cert)))).toBeUndefined();
  });

  it.each([0, 2, 3])(
    'an ECPrivateKey of version %i (OpenSSL reads it as the same key) is refused',
    async (version) => {
      const other = withVersion(key, version);
      // The guard matters: OpenSSL itself takes it.
      expect(() =>
        createPrivateKey({
          key: Buffer.from(pemDecode('EC PRIVATE KEY', bytes(other))!),
          format: 'der',
          type: 'sec1',
        }),
      ).not.toThrow();
      expect(parsePrivateKey(bytes(other))).toBeUndefined();
      expect((await inspectPair(bytes(other), bytes(cert), DEP)).ok).toBe(false);
      expect(await refusedAsDocument(other)).toBe(true);
    },
  );

  it.each([
    ['a leading space', (pem: string) => ` ${pem}`],
    ['a leading newline', (pem: string) => `\n${pem}`],
    ['an extra trailing newline', (pem: string) => `${pem}\n`],
    ['no trailing newline', (pem: string) => pem.slice(0, -1)],
    ['CRLF line ends', (pem: string) => pem.replace(/\n/g, '\r\n')],
    ['a space after BEGIN', (pem: string) => pem.replace('-----\n', '----- \n')],
    ['a blank line in the body', (pem: string) => pem.replace('\n', '\n\n')],
    [
      'lines of 76, not 64',
      (pem: string) => {
        const [begin, ...rest] = pem.trimEnd().split('\n');
        const end = rest.pop()!;
        const body = rest
          .join('')
          .match(/.{1,76}/g)!
          .join('\n');
        return `${begin}\n${body}\n${end}\n`;
      },
    ],
  ])('armour with %s is refused', async (_what, change) => {
    const changed = change(key);
    expect(changed).not.toBe(key);
    expect(pemDecode('EC PRIVATE KEY', bytes(changed))).toBeUndefined();
    expect(pemDecode('CERTIFICATE', bytes(change(cert)))).toBeUndefined();
    expect((await inspectPair(bytes(changed), bytes(cert), DEP)).ok).toBe(false);
    expect(await refusedAsDocument(changed)).toBe(true);
  });
});
