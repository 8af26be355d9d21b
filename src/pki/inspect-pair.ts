import { createPrivateKey, createPublicKey, sign, verify, randomBytes, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import { pkiEngine } from './engine.js';
import { pemDecode } from './pem.js';
import { fingerprintOf } from './fingerprint.js';
import { asFingerprint, type Fingerprint } from './fingerprint-type.js';
import { OID, REPLACES_PREFIX } from './names.js';

/** What a certificate says about itself, once parsed. */
export interface CertificateFacts {
  readonly certificate: pkijs.Certificate;
  readonly fingerprint: Fingerprint;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly organization: string | undefined;
  /** The `baton-replaces:` claim, only when it holds a well-formed fingerprint. */
  readonly replaces: Fingerprint | undefined;
  readonly serialHex: string;
}

/** Why a key+certificate pair is not an authority of this deployment. */
export type PairFault =
  | { readonly kind: 'unparsable'; readonly file: 'certificate' | 'key'; readonly detail: string }
  | { readonly kind: 'not-ca'; readonly detail: string }
  | { readonly kind: 'not-self-signed'; readonly detail: string }
  | { readonly kind: 'foreign'; readonly organization: string | undefined }
  | { readonly kind: 'mismatched' };

export type PairInspection =
  | { readonly ok: true; readonly facts: CertificateFacts }
  | { readonly ok: false; readonly fault: PairFault; readonly facts: CertificateFacts | undefined };

export function parseCertificate(pem: Uint8Array): CertificateFacts | undefined {
  const der = pemDecode('CERTIFICATE', pem);
  if (!der) return undefined;
  let certificate: pkijs.Certificate;
  try {
    const asn1 = asn1js.fromBER(der.slice().buffer);
    if (asn1.offset === -1 || asn1.offset !== der.length) return undefined;
    certificate = new pkijs.Certificate({ schema: asn1.result });
  } catch {
    return undefined;
  }
  const replacesClaim = attributeValues(certificate.subject, OID.organizationalUnit).find((ou) => ou.startsWith(REPLACES_PREFIX));
  const organizations = attributeValues(certificate.subject, OID.organization);
  return {
    certificate,
    fingerprint: fingerprintOf(certificate),
    notBefore: certificate.notBefore.value,
    notAfter: certificate.notAfter.value,
    // Two O attributes are not "the deployment id": report none so the check refuses it.
    organization: organizations.length === 1 ? organizations[0] : undefined,
    replaces: replacesClaim === undefined ? undefined : asFingerprint(replacesClaim.slice(REPLACES_PREFIX.length)),
    serialHex: Buffer.from(certificate.serialNumber.valueBlock.valueHexView).toString('hex'),
  };
}

/**
 * The ONE check of "this key and this certificate are an authority of this deployment", for
 * files on disk and files in a published document alike: the certificate is a CA (cA, and
 * keyCertSign), self-signed (issuer = subject and the signature verifies under its own key),
 * its Organization is exactly `deployment`, and the key signs what the certificate's key
 * verifies. Two checkers would drift, and the looser one would let a foreign authority in.
 */
export async function inspectPair(keyPem: Uint8Array, certPem: Uint8Array, deployment: string): Promise<PairInspection> {
  const facts = parseCertificate(certPem);
  if (!facts) return { ok: false, fault: { kind: 'unparsable', file: 'certificate', detail: 'not one PEM "CERTIFICATE" block holding an X.509 certificate' }, facts };
  const key = parsePrivateKey(keyPem);
  if (!key) return { ok: false, fault: { kind: 'unparsable', file: 'key', detail: 'not one PEM "PRIVATE KEY" block holding a PKCS#8 ECDSA P-256 key' }, facts };

  const caFault = caFaultOf(facts.certificate);
  if (caFault) return { ok: false, fault: { kind: 'not-ca', detail: caFault }, facts };
  const selfSigned = await selfSignatureFault(facts.certificate);
  if (selfSigned) return { ok: false, fault: { kind: 'not-self-signed', detail: selfSigned }, facts };
  if (facts.organization !== deployment) return { ok: false, fault: { kind: 'foreign', organization: facts.organization }, facts };
  if (!keyPairsWith(key, facts.certificate)) return { ok: false, fault: { kind: 'mismatched' }, facts };
  return { ok: true, facts };
}

function parsePrivateKey(pem: Uint8Array): KeyObject | undefined {
  const der = pemDecode('PRIVATE KEY', pem);
  if (!der) return undefined;
  try {
    const key = createPrivateKey({ key: Buffer.from(der), format: 'der', type: 'pkcs8' });
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') return undefined;
    return key;
  } catch {
    return undefined;
  }
}

/**
 * Pairing is proved by a signature, not by comparing the public half a PKCS#8 file may carry:
 * that copy is not checked against the private scalar, so a doctored file could match on it.
 */
function keyPairsWith(key: KeyObject, certificate: pkijs.Certificate): boolean {
  try {
    const spki = Buffer.from(certificate.subjectPublicKeyInfo.toSchema().toBER(false));
    const publicKey = createPublicKey({ key: spki, format: 'der', type: 'spki' });
    const challenge = randomBytes(32);
    return verify('sha256', challenge, publicKey, sign('sha256', challenge, key));
  } catch {
    return false;
  }
}

function caFaultOf(certificate: pkijs.Certificate): string | undefined {
  const extensions = certificate.extensions ?? [];
  const bc = extensions.find((e) => e.extnID === OID.basicConstraints)?.parsedValue as pkijs.BasicConstraints | undefined;
  if (!bc || bc.cA !== true) return 'its basicConstraints do not say cA';
  const ku = extensions.find((e) => e.extnID === OID.keyUsage)?.parsedValue as asn1js.BitString | undefined;
  const bits = ku ? new Uint8Array(ku.valueBlock.valueHexView) : undefined;
  if (!bits || bits.length === 0 || (bits[0]! & 0x04) === 0) return 'its keyUsage does not include keyCertSign';
  return undefined;
}

async function selfSignatureFault(certificate: pkijs.Certificate): Promise<string | undefined> {
  if (!certificate.issuer.isEqual(certificate.subject)) return 'its issuer is not its subject';
  try {
    if (await certificate.verify(undefined, pkiEngine())) return undefined;
  } catch {
    // fall through: a signature that cannot be checked is not a self-signature
  }
  return 'its signature does not verify under its own key';
}

function attributeValues(name: pkijs.RelativeDistinguishedNames, type: string): string[] {
  return name.typesAndValues
    .filter((tv) => tv.type === type)
    .map((tv) => String((tv.value as { valueBlock?: { value?: unknown } }).valueBlock?.value ?? ''));
}
