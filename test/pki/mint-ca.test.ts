import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mintCa } from '../../src/pki/mint-ca.js';
import { inspectPair, parseCertificate } from '../../src/pki/inspect-pair.js';
import { pemDecode, pemEncode } from '../../src/pki/pem.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const NOW = new Date(Date.UTC(2026, 10, 30, 10, 0, 0));
const temp = makeTempDir('baton-pki-');
afterAll(() => temp.cleanup());

function openssl(args: string[], input?: string | Uint8Array): string {
  return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

function sh(script: string): string {
  return execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
}

async function mintedFiles(name: string, replaces?: Parameters<typeof mintCa>[0]['replaces']) {
  const minted = await mintCa({ deployment: DEPLOYMENT, now: NOW, replaces });
  const cert = path.join(temp.dir, `${name}.crt`);
  const key = path.join(temp.dir, `${name}.key`);
  writeFileSync(cert, minted.certPem);
  writeFileSync(key, minted.keyPem, { mode: 0o600 });
  return { minted, cert, key };
}

describe('a minted authority, as openssl sees it', () => {
  it('has the fingerprint openssl computes over the DER SubjectPublicKeyInfo', async () => {
    const { minted, cert } = await mintedFiles('fp');
    const expected = sh(
      `openssl x509 -in '${cert}' -pubkey -noout | openssl pkey -pubin -outform DER | openssl dgst -sha256 -binary | base64`,
    )
      .trim()
      .replace(/=+$/, '');
    const facts = parseCertificate(minted.certPem)!;
    expect(facts.fingerprint).toBe(`SHA256:${expected}`);
    expect(facts.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });

  it('verifies its own signature with openssl verify', async () => {
    const { cert } = await mintedFiles('verify');
    expect(openssl(['verify', '-CAfile', cert, cert]).trim()).toBe(`${cert}: OK`);
  });

  it('carries a SEC1 "EC PRIVATE KEY" (what Go\'s x509.ParseECPrivateKey reads) that openssl ec checks and that pairs with the certificate', async () => {
    const { key, cert, minted } = await mintedFiles('pair');
    expect(Buffer.from(minted.keyPem).toString()).toMatch(
      /^-----BEGIN EC PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END EC PRIVATE KEY-----\n$/,
    );
    expect(
      execFileSync('/bin/sh', ['-c', `openssl ec -in '${key}' -check -noout 2>&1`], { encoding: 'utf8' }),
    ).toContain('EC Key valid.');
    // The DER inside is SEC1 itself (openssl re-encodes it byte for byte), not PKCS#8 relabelled.
    expect(openssl(['ec', '-in', key])).toBe(Buffer.from(minted.keyPem).toString());
    const fromKey = openssl(['pkey', '-in', key, '-pubout']);
    const fromCert = openssl(['x509', '-in', cert, '-pubkey', '-noout']);
    expect(fromKey).toBe(fromCert);
    expect(openssl(['pkey', '-in', key, '-noout', '-text'])).toContain('NIST CURVE: P-256');
  });

  it('is a P-256 CA with pathlen 0, the three key usages, CN and O = the deployment, in separate RDNs', async () => {
    const { cert } = await mintedFiles('fields');
    const text = openssl(['x509', '-in', cert, '-noout', '-text']);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:TRUE, pathlen:0/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign/);
    expect(text).toContain('NIST CURVE: P-256');
    expect(openssl(['x509', '-in', cert, '-noout', '-subject', '-nameopt', 'RFC2253']).trim()).toBe(
      `subject=O=${DEPLOYMENT},CN=billet node wire CA`,
    );
    expect(openssl(['x509', '-in', cert, '-noout', '-issuer', '-nameopt', 'RFC2253']).trim()).toBe(
      `issuer=O=${DEPLOYMENT},CN=billet node wire CA`,
    );
  });

  it('is valid from an hour before now for ten years', async () => {
    const { minted } = await mintedFiles('dates');
    const facts = parseCertificate(minted.certPem)!;
    expect(facts.notBefore.toISOString()).toBe('2026-11-30T09:00:00.000Z');
    expect(facts.notAfter.toISOString()).toBe('2036-11-30T10:00:00.000Z');
  });

  it('has a random positive 128-bit serial, different each time', async () => {
    const serials = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const facts = parseCertificate((await mintCa({ deployment: DEPLOYMENT, now: NOW })).certPem)!;
      expect(facts.serialHex).toMatch(/^[0-7][0-9a-f]{31}$/);
      expect(facts.serialHex.startsWith('00')).toBe(false);
      serials.add(facts.serialHex);
    }
    expect(serials.size).toBe(8);
  });

  it('names the authority it replaces in its OU, which openssl shows', async () => {
    const first = await mintedFiles('first');
    const old = parseCertificate(first.minted.certPem)!.fingerprint;
    const next = await mintedFiles('next', old);
    expect(parseCertificate(next.minted.certPem)!.replaces).toBe(old);
    expect(
      openssl(['x509', '-in', next.cert, '-noout', '-subject', '-nameopt', 'sep_multiline,utf8'])
        .split('\n')
        .map((l) => l.trim()),
    ).toContain(`OU=billet-replaces:${old}`);
    expect(parseCertificate(first.minted.certPem)!.replaces).toBeUndefined();
  });
});

describe('inspectPair, the one check of an authority pair', () => {
  it('accepts a minted pair of this deployment', async () => {
    const { minted } = await mintCa({ deployment: DEPLOYMENT, now: NOW }).then((m) => ({ minted: m }));
    const inspection = await inspectPair(minted.keyPem, minted.certPem, DEPLOYMENT);
    expect(inspection.ok).toBe(true);
  });

  it("refuses a key that is not the certificate's as mismatched", async () => {
    const a = await mintCa({ deployment: DEPLOYMENT, now: NOW });
    const b = await mintCa({ deployment: DEPLOYMENT, now: NOW });
    expect(await inspectPair(b.keyPem, a.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'mismatched' },
    });
  });

  it("refuses another deployment's authority as foreign, naming its Organization", async () => {
    const a = await mintCa({ deployment: 'another-deployment', now: NOW });
    expect(await inspectPair(a.keyPem, a.certPem, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'foreign', organization: 'another-deployment' },
    });
  });

  it('refuses a self-signed certificate that is not a CA', async () => {
    const key = path.join(temp.dir, 'leaf.key');
    const cert = path.join(temp.dir, 'leaf.crt');
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
      '-subj',
      `/CN=baton node wire CA/O=${DEPLOYMENT}`,
      '-addext',
      'basicConstraints=critical,CA:FALSE',
      '-addext',
      'keyUsage=critical,digitalSignature',
    ]);
    const inspection = await inspectPair(readBytes(key), readBytes(cert), DEPLOYMENT);
    expect(inspection).toMatchObject({ ok: false, fault: { kind: 'not-ca' } });
  });

  it('refuses a CA certificate that another CA signed as not self-signed', async () => {
    const rootKey = path.join(temp.dir, 'root.key');
    const rootCert = path.join(temp.dir, 'root.crt');
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      rootKey,
      '-out',
      rootCert,
      '-days',
      '30',
      '-subj',
      '/CN=other root',
    ]);
    const key = path.join(temp.dir, 'sub.key');
    const csr = path.join(temp.dir, 'sub.csr');
    const cert = path.join(temp.dir, 'sub.crt');
    const ext = path.join(temp.dir, 'sub.ext');
    writeFileSync(
      ext,
      'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n',
    );
    openssl([
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      csr,
      '-subj',
      `/CN=baton node wire CA/O=${DEPLOYMENT}`,
    ]);
    openssl([
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      rootCert,
      '-CAkey',
      rootKey,
      '-CAcreateserial',
      '-out',
      cert,
      '-days',
      '30',
      '-extfile',
      ext,
    ]);
    const inspection = await inspectPair(readBytes(key), readBytes(cert), DEPLOYMENT);
    expect(inspection).toMatchObject({ ok: false, fault: { kind: 'not-self-signed' } });
  });

  it('refuses a certificate whose signature does not verify under its own key as not self-signed', async () => {
    const a = await mintCa({ deployment: DEPLOYMENT, now: NOW });
    const der = pemDecode('CERTIFICATE', a.certPem)!;
    der[der.length - 1] = der[der.length - 1]! ^ 0x01; // the last byte of the ECDSA signature's s
    const tampered = new TextEncoder().encode(pemEncode('CERTIFICATE', der));
    expect(await inspectPair(a.keyPem, tampered, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'not-self-signed', detail: 'its signature does not verify under its own key' },
    });
  });

  it('refuses a certificate file with two PEM blocks, or junk, as unparsable', async () => {
    const a = await mintCa({ deployment: DEPLOYMENT, now: NOW });
    const twice = Buffer.concat([Buffer.from(a.certPem), Buffer.from(a.certPem)]);
    expect(await inspectPair(a.keyPem, twice, DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'unparsable', file: 'certificate' },
    });
    expect(await inspectPair(a.keyPem, Buffer.from('not a certificate'), DEPLOYMENT)).toMatchObject({
      ok: false,
      fault: { kind: 'unparsable', file: 'certificate' },
    });
    expect(
      await inspectPair(
        Buffer.from('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'),
        a.certPem,
        DEPLOYMENT,
      ),
    ).toMatchObject({ ok: false, fault: { kind: 'unparsable', file: 'key' } });
  });
});

function readBytes(file: string): Uint8Array {
  return new Uint8Array(readFileSync(file));
}
