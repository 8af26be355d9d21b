/**
 * The certificate READING path without pkijs: a strict DER walk for the fields baton decides
 * on, OpenSSL for the signature. Certificates are built here, field by field, with a DER
 * encoder of the test's own and node:crypto's ECDSA — and openssl confirms the well-formed
 * ones are real certificates — so each case changes exactly the field it is about.
 */
import { execFileSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { inspectPair, parseCertificate } from '../../src/pki/inspect-pair.js';
import { pemEncode } from '../../src/pki/pem.js';
import { derChildren, derRead } from '../../src/pki/der.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const CLAIM = 'baton-replaces:SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';
const temp = makeTempDir('baton-read-cert-');
afterAll(() => temp.cleanup());

// ---- a DER encoder of the test's own (not the reader under test) ----

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
};
const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number) as [number, number, ...number[]];
  const out: number[] = [];
  for (const arc of [a * 40 + b, ...rest]) {
    const groups: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const printable = (s: string) => tlv(0x13, Buffer.from(s, 'latin1'));
const bmp = (s: string) => tlv(0x1e, Buffer.from(s, 'utf16le').swap16());
const bool = (byte: number) => tlv(0x01, Buffer.from([byte]));
const int = (bytes: number[]) => tlv(0x02, Buffer.from(bytes));
const octets = (c: Buffer) => tlv(0x04, c);
const bits = (unused: number, ...bytes: number[]) => tlv(0x03, Buffer.from([unused, ...bytes]));
const utcTime = (s: string) => tlv(0x17, Buffer.from(s, 'latin1'));
const generalizedTime = (s: string) => tlv(0x18, Buffer.from(s, 'latin1'));

const O = '2.5.4.10';
const OU = '2.5.4.11';
const CN = '2.5.4.3';
const atv = (type: string, value: Buffer) => seq(oid(type), value);
const rdn = (type: string, value: Buffer) => set(atv(type, value));
const ext = (id: string, critical: boolean | Buffer, value: Buffer) =>
  seq(oid(id), ...(critical === false ? [] : [critical === true ? bool(0xff) : critical]), octets(value));
const basicConstraints = (cA: Buffer | undefined) => ext('2.5.29.19', true, seq(...(cA ? [cA] : [])));
const keyUsage = (first: number) => ext('2.5.29.15', true, bits(1, first));
const KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE = 0x86;
const DIGITAL_SIGNATURE_CRL_SIGN = 0x82;

interface Shape {
  readonly subject?: Buffer;
  readonly issuer?: Buffer;
  readonly serial?: number[];
  readonly notBefore?: Buffer;
  readonly notAfter?: Buffer;
  readonly extensions?: Buffer[] | undefined;
}

const ourName = () => seq(rdn(CN, utf8('baton node wire CA')), rdn(O, utf8(DEPLOYMENT)));
const ourExtensions = () => [
  basicConstraints(bool(0xff)),
  keyUsage(KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE),
];

/** A self-signed ECDSA P-256 certificate of `shape`, signed by node:crypto over the TBS DER. */
function build(
  shape: Shape = {},
  key = generateKeyPairSync('ec', { namedCurve: 'P-256' }),
): { certDer: Buffer; certBody: Buffer; certPem: Uint8Array; keyPem: Uint8Array; key: KeyObject } {
  const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const subject = shape.subject ?? ourName();
  const extensions = shape.extensions === undefined ? ourExtensions() : shape.extensions;
  const tbs = seq(
    tlv(0xa0, int([2])),
    int(shape.serial ?? [0x3a, 0x11, 0x02, 0xff]),
    ecdsaWithSha256,
    shape.issuer ?? subject,
    seq(shape.notBefore ?? utcTime('261130090000Z'), shape.notAfter ?? utcTime('361130100000Z')),
    subject,
    key.publicKey.export({ type: 'spki', format: 'der' }),
    ...(extensions.length > 0 ? [tlv(0xa3, seq(...extensions))] : []),
  );
  const signature = sign('sha256', tbs, key.privateKey);
  const certBody = Buffer.concat([tbs, ecdsaWithSha256, tlv(0x03, Buffer.from([0]), signature)]);
  const certDer = seq(certBody);
  return {
    certDer,
    certBody,
    certPem: new TextEncoder().encode(pemEncode('CERTIFICATE', certDer)),
    keyPem: new TextEncoder().encode(String(key.privateKey.export({ type: 'pkcs8', format: 'pem' }))),
    key: key.privateKey,
  };
}

let counter = 0;
function openssl(args: string[]): string {
  return execFileSync('openssl', args, { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}
function onDisk(certPem: Uint8Array): string {
  const file = path.join(temp.dir, `c${counter++}.crt`);
  writeFileSync(file, certPem);
  return file;
}
const pemOf = (der: Buffer) => new TextEncoder().encode(pemEncode('CERTIFICATE', der));

describe("the test's own certificate builder", () => {
  it('makes certificates openssl verifies as self-signed CAs', () => {
    const file = onDisk(build().certPem);
    expect(openssl(['verify', '-CAfile', file, file]).trim()).toBe(`${file}: OK`);
  });
});

describe('reading a certificate exactly', () => {
  it('reads serial, validity, Organization and the replaces claim as openssl reports them', async () => {
    const cert = build({
      serial: [0x00, 0x9f, 0x01, 0x02],
      subject: seq(rdn(CN, utf8('baton node wire CA')), rdn(O, utf8(DEPLOYMENT)), rdn(OU, utf8(CLAIM))),
      notBefore: utcTime('491231235959Z'),
      notAfter: generalizedTime('20600101000000Z'),
    });
    const file = onDisk(cert.certPem);
    const facts = parseCertificate(cert.certPem)!;
    expect(facts.serialHex).toBe(
      openssl(['x509', '-in', file, '-noout', '-serial'])
        .trim()
        .replace(/^serial=/, '')
        .toLowerCase()
        .padStart(8, '0'),
    );
    expect(facts.notBefore.getTime()).toBe(
      Date.parse(
        openssl(['x509', '-in', file, '-noout', '-startdate'])
          .trim()
          .replace(/^notBefore=/, ''),
      ),
    );
    expect(facts.notAfter.getTime()).toBe(
      Date.parse(
        openssl(['x509', '-in', file, '-noout', '-enddate'])
          .trim()
          .replace(/^notAfter=/, ''),
      ),
    );
    expect(facts.notBefore.toISOString()).toBe('2049-12-31T23:59:59.000Z');
    expect(facts.notAfter.toISOString()).toBe('2060-01-01T00:00:00.000Z');
    expect(facts.organization).toBe(DEPLOYMENT);
    expect(facts.replaces).toBe(CLAIM.slice('baton-replaces:'.length));
    expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({ ok: true });
  });

  it("reads billet's claim as Go writes it (PrintableString OU billet-replaces:), and keeps a malformed one as text, never as no claim", async () => {
    const fp = 'SHA256:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
    const goLike = build({
      subject: seq(
        rdn(O, printable(DEPLOYMENT)),
        rdn(OU, printable(`billet-replaces:${fp}`)),
        rdn(CN, printable('billet node wire CA')),
      ),
    });
    expect(parseCertificate(goLike.certPem)).toMatchObject({ replaces: fp, claim: fp, claimCount: 1 });
    expect(await inspectPair(goLike.keyPem, goLike.certPem, DEPLOYMENT)).toMatchObject({ ok: true });
    const malformed = build({
      subject: seq(rdn(O, utf8(DEPLOYMENT)), rdn(OU, utf8('billet-replaces:SHA256:short'))),
    });
    expect(parseCertificate(malformed.certPem)).toMatchObject({
      replaces: undefined,
      claim: 'SHA256:short',
      claimCount: 1,
    });
  });

  it('refuses a certificate that names two predecessors (billet-replaces: and baton-replaces:) as edited', async () => {
    const fp = 'SHA256:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB';
    const cert = build({
      subject: seq(
        rdn(CN, utf8('billet node wire CA')),
        rdn(O, utf8(DEPLOYMENT)),
        rdn(OU, utf8(`billet-replaces:${fp}`)),
        rdn(OU, utf8(CLAIM)),
      ),
    });
    expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'ambiguous-claim', count: 2 },
    });
  });

  it('reads a UTCTime year of 50 as 1950, as RFC 5280 says', () => {
    const facts = parseCertificate(build({ notBefore: utcTime('500101000000Z') }).certPem)!;
    expect(facts.notBefore.toISOString()).toBe('1950-01-01T00:00:00.000Z');
  });

  it("hashes the certificate's SubjectPublicKeyInfo as encoded for the fingerprint", () => {
    const cert = build();
    const spki = createPublicKey(cert.key).export({ type: 'spki', format: 'der' });
    const expected = `SHA256:${execFileSync('openssl', ['dgst', '-sha256', '-binary'], { input: spki }).toString('base64').replace(/=+$/, '')}`;
    expect(parseCertificate(cert.certPem)!.fingerprint).toBe(expected);
  });

  it('reads an Organization that prints like two attributes as the one value it is', async () => {
    for (const value of [
      'b, O=0123456789abcdef0123456789abcdef',
      `x\nO=${DEPLOYMENT}`,
      `x+O=${DEPLOYMENT}`,
    ]) {
      const cert = build({ subject: seq(rdn(CN, utf8('baton node wire CA')), rdn(O, utf8(value))) });
      expect(parseCertificate(cert.certPem)!.organization).toBe(value);
      expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
        ok: false,
        fault: { kind: 'foreign', organization: value },
      });
    }
  });

  it('does not take a replaces claim printed inside another value', () => {
    const cert = build({
      subject: seq(
        rdn(O, utf8(DEPLOYMENT)),
        rdn(OU, utf8(`x\nOU=${CLAIM}`)),
        rdn(CN, utf8(`y, OU=${CLAIM}`)),
      ),
    });
    expect(parseCertificate(cert.certPem)!.replaces).toBeUndefined();
  });

  it('reads an Organization inside a multi-valued RDN, and in PrintableString or BMPString', async () => {
    const shapes = [
      seq(set(atv(CN, utf8('baton node wire CA')), atv(O, utf8(DEPLOYMENT)))),
      seq(rdn(O, printable(DEPLOYMENT))),
      seq(rdn(O, bmp(DEPLOYMENT))),
    ];
    for (const subject of shapes) {
      const cert = build({ subject });
      expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
        ok: true,
        facts: { organization: DEPLOYMENT },
      });
    }
  });

  it('refuses two Organizations, in one RDN or two, as belonging to no deployment', async () => {
    for (const subject of [
      seq(rdn(O, utf8(DEPLOYMENT)), rdn(O, utf8(DEPLOYMENT))),
      seq(set(atv(O, utf8(DEPLOYMENT)), atv(O, utf8('other')))),
    ]) {
      const cert = build({ subject });
      expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
        ok: false,
        fault: { kind: 'foreign', organization: undefined },
      });
    }
  });
});

describe('the CA checks', () => {
  it('refuses a CA whose keyUsage lacks keyCertSign, naming keyUsage', async () => {
    const cert = build({ extensions: [basicConstraints(bool(0xff)), keyUsage(DIGITAL_SIGNATURE_CRL_SIGN)] });
    expect(openssl(['x509', '-in', onDisk(cert.certPem), '-noout', '-ext', 'keyUsage'])).not.toContain(
      'Certificate Sign',
    );
    expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'not-ca', detail: 'its keyUsage does not include keyCertSign' },
    });
  });

  it('refuses a CA that openssl made without keyCertSign, naming keyUsage', async () => {
    const key = path.join(temp.dir, 'no-kcs.key');
    const cert = path.join(temp.dir, 'no-kcs.crt');
    const conf = path.join(temp.dir, 'no-kcs.cnf');
    writeFileSync(
      conf,
      [
        '[req]',
        'distinguished_name = dn',
        'x509_extensions = ext',
        'prompt = no',
        '[dn]',
        'CN = baton node wire CA',
        `O = ${DEPLOYMENT}`,
        '[ext]',
        'basicConstraints = critical,CA:TRUE,pathlen:0',
        'keyUsage = critical,digitalSignature,cRLSign',
        '',
      ].join('\n'),
    );
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '30',
      '-config',
      conf,
    ]);
    expect(openssl(['x509', '-in', cert, '-noout', '-text'])).toMatch(/CA:TRUE/);
    expect(await inspectPair(readFileSync(key), readFileSync(cert), DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'not-ca', detail: 'its keyUsage does not include keyCertSign' },
    });
  });

  it('refuses a CA without keyUsage, naming keyUsage', async () => {
    const cert = build({ extensions: [basicConstraints(bool(0xff))] });
    expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'not-ca', detail: 'its keyUsage does not include keyCertSign' },
    });
  });

  it('refuses a certificate whose basicConstraints are absent, say cA false, or encode TRUE other than as DER does', async () => {
    const cases = [
      [keyUsage(KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE)],
      [basicConstraints(undefined), keyUsage(KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE)],
      [basicConstraints(bool(0x00)), keyUsage(KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE)],
      [basicConstraints(bool(0x01)), keyUsage(KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE)],
      [],
    ];
    for (const extensions of cases) {
      const cert = build({ extensions });
      expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
        ok: false,
        fault: { kind: 'not-ca', detail: 'its basicConstraints do not say cA' },
      });
    }
  });

  it('refuses a certificate carrying basicConstraints twice as unparsable', async () => {
    const cert = build({
      extensions: [
        basicConstraints(bool(0xff)),
        basicConstraints(bool(0x00)),
        keyUsage(KEY_CERT_SIGN_CRL_SIGN_DIGITAL_SIGNATURE),
      ],
    });
    expect(parseCertificate(cert.certPem)).toBeUndefined();
    expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'unparsable', file: 'certificate' },
    });
  });

  it('refuses an issuer that names the subject in another string type as not self-issued', async () => {
    const cert = build({
      subject: seq(rdn(O, utf8(DEPLOYMENT))),
      issuer: seq(rdn(O, printable(DEPLOYMENT))),
    });
    expect(await inspectPair(cert.keyPem, cert.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'not-self-signed', detail: 'its issuer is not its subject' },
    });
  });

  it('refuses a certificate signed by another key as not self-signed', async () => {
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const cert = build();
    // The same TBS, signed by another key: the certificate names one key and carries another's signature.
    const parts = derChildren(derRead(cert.certDer)!)!;
    const forged = seq(
      Buffer.from(parts[0]!.bytes),
      Buffer.from(parts[1]!.bytes),
      tlv(0x03, Buffer.from([0]), sign('sha256', Buffer.from(parts[0]!.bytes), other.privateKey)),
    );
    expect(await inspectPair(cert.keyPem, pemOf(forged), DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'not-self-signed', detail: 'its signature does not verify under its own key' },
    });
  });
});

describe('strict DER', () => {
  it('refuses bytes after the certificate, a cut certificate, and non-minimal or indefinite lengths as unparsable', async () => {
    const cert = build();
    const der = cert.certDer;
    const body = cert.certBody;
    const longForm = Buffer.concat([
      Buffer.from([0x30, 0x84]),
      Buffer.from([0, 0, body.length >> 8, body.length & 0xff]),
      body,
    ]);
    const indefinite = Buffer.concat([Buffer.from([0x30, 0x80]), body, Buffer.from([0, 0])]);
    for (const bad of [
      Buffer.concat([der, Buffer.from([0])]),
      der.subarray(0, der.length - 1),
      longForm,
      indefinite,
    ]) {
      expect(parseCertificate(pemOf(bad))).toBeUndefined();
      expect(await inspectPair(cert.keyPem, pemOf(bad), DEPLOYMENT)).toMatchObject({
        ok: false,
        fault: { kind: 'unparsable', file: 'certificate' },
      });
    }
    // The same body with its minimal header is the certificate again.
    expect(parseCertificate(pemOf(seq(body)))).toBeDefined();
  });

  it('refuses a validity date that is not one RFC 5280 allows', () => {
    for (const notAfter of [
      utcTime('3611301000Z'),
      utcTime('361130100000+0100'),
      generalizedTime('20361130100000.5Z'),
      utcTime('360231100000Z'),
      generalizedTime('20361330100000Z'),
    ]) {
      expect(parseCertificate(build({ notAfter }).certPem)).toBeUndefined();
    }
  });

  it('refuses a serial with a redundant leading zero', () => {
    expect(parseCertificate(build({ serial: [0x00, 0x12] }).certPem)).toBeUndefined();
    expect(parseCertificate(build({ serial: [0x00, 0x92] }).certPem)?.serialHex).toBe('0092');
  });
});
