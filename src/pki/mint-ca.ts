import { createHash, createPrivateKey, webcrypto } from 'node:crypto';
import { NOT_BEFORE_BACKDATE_MS } from './backdate.js';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { pkiEngine } from './engine.js';
import { pemEncode } from './pem.js';
import { AUTHORITY_COMMON_NAME, OID, REPLACES_PREFIX } from './names.js';
import type { Fingerprint } from './fingerprint-type.js';

export interface MintedCa {
  /**
   * SEC1 PEM ("EC PRIVATE KEY"), what Go's x509.MarshalECPrivateKey writes: billet's wirecert
   * reads only this, so anything else would leave a billet controller unable to load it.
   */
  readonly keyPem: Uint8Array;
  readonly certPem: Uint8Array;
}

export interface MintCaOptions {
  readonly deployment: string;
  readonly now: Date;
  /** Sets the OU claim that lets the retire guard prove the predecessor exactly. */
  readonly replaces?: Fingerprint | undefined;
}

const LIFETIME_YEARS = 10;
const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/**
 * A self-signed node-wire CA: ECDSA P-256, random 128-bit serial, NotBefore an hour back (a
 * controller whose clock runs behind a node's must not present a "not yet valid" CA), ten
 * years, basicConstraints cA pathLen 0 and keyUsage keyCertSign+cRLSign+digitalSignature, both
 * critical; CN fixed, O = the deployment id.
 */
export async function mintCa(options: MintCaOptions): Promise<MintedCa> {
  const crypto = pkiEngine();
  const keys = await webcrypto.subtle.generateKey(ECDSA_P256, true, ['sign', 'verify']);
  const certificate = new pkijs.Certificate();
  certificate.version = 2;
  certificate.serialNumber = new asn1js.Integer({ valueHex: randomSerial() });

  certificate.subject = authorityName(options.deployment, options.replaces);
  certificate.issuer = authorityName(options.deployment, options.replaces);

  const notBefore = new Date(options.now.getTime() - NOT_BEFORE_BACKDATE_MS);
  const notAfter = new Date(options.now.getTime());
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + LIFETIME_YEARS);
  certificate.notBefore = timeOf(notBefore);
  certificate.notAfter = timeOf(notAfter);

  await certificate.subjectPublicKeyInfo.importKey(keys.publicKey, crypto);
  const keyBits = certificate.subjectPublicKeyInfo.subjectPublicKey.valueBlock.valueHexView;

  const basicConstraints = new pkijs.BasicConstraints({ cA: true, pathLenConstraint: 0 });
  // digitalSignature (bit 0), keyCertSign (bit 5), cRLSign (bit 6): 1000 0110, one unused bit.
  const keyUsage = new asn1js.BitString({ valueHex: new Uint8Array([0x86]).buffer, unusedBits: 1 });
  const skid = new asn1js.OctetString({ valueHex: createHash('sha1').update(keyBits).digest() });
  certificate.extensions = [
    new pkijs.Extension({
      extnID: OID.basicConstraints,
      critical: true,
      extnValue: basicConstraints.toSchema().toBER(false),
      parsedValue: basicConstraints,
    }),
    new pkijs.Extension({ extnID: OID.keyUsage, critical: true, extnValue: keyUsage.toBER(false) }),
    new pkijs.Extension({ extnID: OID.subjectKeyIdentifier, critical: false, extnValue: skid.toBER(false) }),
  ];

  await certificate.sign(keys.privateKey, 'SHA-256', crypto);
  const certDer = new Uint8Array(certificate.toSchema(true).toBER(false));
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const keyDer = new Uint8Array(
    createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ format: 'der', type: 'sec1' }),
  );
  return {
    keyPem: new TextEncoder().encode(pemEncode('EC PRIVATE KEY', keyDer)),
    certPem: new TextEncoder().encode(pemEncode('CERTIFICATE', certDer)),
  };
}

/**
 * One attribute per RDN (CN, O, OU as separate SETs): pkijs would put them all into one
 * multi-valued RDN, which openssl prints as "CN = … + O = …" and some verifiers mishandle.
 */
function authorityName(
  deployment: string,
  replaces: Fingerprint | undefined,
): pkijs.RelativeDistinguishedNames {
  const attr = (type: string, value: string) =>
    new asn1js.Set({
      value: [new pkijs.AttributeTypeAndValue({ type, value: new asn1js.Utf8String({ value }) }).toSchema()],
    });
  const sequence = new asn1js.Sequence({
    value: [
      attr(OID.commonName, AUTHORITY_COMMON_NAME),
      attr(OID.organization, deployment),
      ...(replaces ? [attr(OID.organizationalUnit, `${REPLACES_PREFIX}${replaces}`)] : []),
    ],
  });
  return new pkijs.RelativeDistinguishedNames({ schema: asn1js.fromBER(sequence.toBER(false)).result });
}

/** 128 random bits, top bit cleared: a set high bit would encode a negative INTEGER. */
function randomSerial(): ArrayBuffer {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  // A zero first byte would make the DER encoding non-minimal; 127 random bits remain.
  bytes[0] = bytes[0]! & 0x7f || 0x01;
  return bytes.buffer;
}

/** UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5). */
function timeOf(date: Date): pkijs.Time {
  return new pkijs.Time({ type: date.getUTCFullYear() >= 2050 ? 1 : 0, value: date });
}
