import type { KeyObject } from 'node:crypto';
import { rememberChecked, wasChecked } from './checked-pairs.js';
import { pemDecode } from './pem.js';
import { fingerprintOfSpki } from './fingerprint.js';
import { asFingerprint, type Fingerprint } from './fingerprint-type.js';
import { LEGACY_REPLACES_PREFIX, OID, REPLACES_PREFIX } from './names.js';
import {
  allowsKeyCertSign,
  isCa,
  opensslCertificate,
  readCertificate,
  type ReadCertificate,
} from './read-certificate.js';

/** node:crypto, loaded when a key is parsed or a signature checked, not when this module is. */
const nodeCrypto = () => process.getBuiltinModule('node:crypto');

/** What a certificate says about itself, once parsed. */
export interface CertificateFacts {
  readonly fingerprint: Fingerprint;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly organization: string | undefined;
  /** The `billet-replaces:` (or legacy `baton-replaces:`) claim, only when it holds a well-formed fingerprint. */
  readonly replaces: Fingerprint | undefined;
  /**
   * The claim's text exactly as written, well-formed or not: the retire guard compares THIS, so
   * a malformed claim counts as naming another authority, never as naming none.
   */
  readonly claim: string | undefined;
  /** More than one predecessor claim: a certificate somebody edited (billet refuses it too). */
  readonly claimCount: number;
  /** The DER SubjectPublicKeyInfo (public): what a handover signature is verified with. */
  readonly publicKey: Uint8Array;
  readonly serialHex: string;
}

/** Why a key+certificate pair is not an authority of this deployment. */
export type PairFault =
  | { readonly kind: 'unparsable'; readonly file: 'certificate' | 'key'; readonly detail: string }
  | { readonly kind: 'not-ca'; readonly detail: string }
  | { readonly kind: 'not-self-signed'; readonly detail: string }
  | { readonly kind: 'foreign'; readonly organization: string | undefined }
  | { readonly kind: 'ambiguous-claim'; readonly count: number }
  | { readonly kind: 'mismatched' };

export type PairInspection =
  | { readonly ok: true; readonly facts: CertificateFacts }
  | { readonly ok: false; readonly fault: PairFault; readonly facts: CertificateFacts | undefined };

export function parseCertificate(pem: Uint8Array): CertificateFacts | undefined {
  return parsed(pem)?.facts;
}

function parsed(
  pem: Uint8Array,
  options: { readonly openssl?: boolean } = {},
):
  | { readonly certificate: ReadCertificate; readonly der: Uint8Array; readonly facts: CertificateFacts }
  | undefined {
  const der = pemDecode('CERTIFICATE', pem);
  const certificate = der ? readCertificate(der, options) : undefined;
  if (!certificate) return undefined;
  // Read from the RDNs themselves, never from a printed subject: a value holding
  // "\nOU=billet-replaces:…" must stay one Organization, not become a claim.
  const values = (type: string) => certificate.subject.filter((a) => a.type === type).map((a) => a.value);
  const claims = values(OID.organizationalUnit).flatMap((ou) => {
    const prefix = [REPLACES_PREFIX, LEGACY_REPLACES_PREFIX].find((p) => ou.startsWith(p));
    return prefix === undefined ? [] : [ou.slice(prefix.length)];
  });
  const claim = claims.length === 1 ? claims[0] : undefined;
  const organizations = values(OID.organization);
  return {
    certificate,
    der: der!,
    facts: {
      fingerprint: fingerprintOfSpki(certificate.spkiDer),
      notBefore: certificate.notBefore,
      notAfter: certificate.notAfter,
      // Two O attributes are not "the deployment id": report none so the check refuses it.
      organization: organizations.length === 1 ? organizations[0] : undefined,
      replaces: claim === undefined ? undefined : asFingerprint(claim),
      claim,
      claimCount: claims.length,
      publicKey: certificate.spkiDer,
      serialHex: Buffer.from(certificate.serial).toString('hex'),
    },
  };
}

/**
 * The ONE check of "this key and this certificate are an authority of this deployment", for
 * files on disk and files in a published document alike: the certificate is a CA (cA, and
 * keyCertSign), self-signed (issuer = subject and the signature verifies under its own key),
 * its Organization is exactly `deployment`, and the key signs what the certificate's key
 * verifies. Two checkers would drift, and the looser one would let a foreign authority in.
 */
export async function inspectPair(
  keyPem: Uint8Array,
  certPem: Uint8Array,
  deployment: string,
): Promise<PairInspection> {
  // Exactly these bytes passed this whole check before: the fields are read again (they are
  // the answer's facts), the key and signatures are not proved again (checked-pairs.ts).
  if (wasChecked(keyPem, certPem, deployment)) {
    const known = parsed(certPem, { openssl: false });
    if (known) return { ok: true, facts: known.facts };
  }
  const inspection = inspectPairInFull(keyPem, certPem, deployment);
  if (inspection.ok) rememberChecked(keyPem, certPem, deployment);
  return inspection;
}

function inspectPairInFull(keyPem: Uint8Array, certPem: Uint8Array, deployment: string): PairInspection {
  const read = parsed(certPem);
  if (!read)
    return {
      ok: false,
      fault: {
        kind: 'unparsable',
        file: 'certificate',
        detail: 'not one PEM "CERTIFICATE" block holding an X.509 certificate',
      },
      facts: undefined,
    };
  const { certificate, der, facts } = read;
  const key = parsePrivateKey(keyPem);
  if (!key) return { ok: false, fault: { kind: 'unparsable', file: 'key', detail: KEY_SHAPE }, facts };

  const caFault = caFaultOf(certificate);
  if (caFault) return { ok: false, fault: { kind: 'not-ca', detail: caFault }, facts };
  const selfSigned = selfSignatureFault(certificate, der);
  if (selfSigned) return { ok: false, fault: { kind: 'not-self-signed', detail: selfSigned }, facts };
  if (facts.organization !== deployment)
    return { ok: false, fault: { kind: 'foreign', organization: facts.organization }, facts };
  // One certificate cannot have replaced two authorities; guessing which claim to believe is
  // the guess the retire guard exists to remove.
  if (facts.claimCount > 1)
    return { ok: false, fault: { kind: 'ambiguous-claim', count: facts.claimCount }, facts };
  if (!keyPairsWith(key, certificate)) return { ok: false, fault: { kind: 'mismatched' }, facts };
  return { ok: true, facts };
}

const KEY_SHAPE =
  'not one PEM "EC PRIVATE KEY" (SEC1) or "PRIVATE KEY" (PKCS#8) block holding an ECDSA P-256 key';

/**
 * True when the key is PKCS#8 (`PRIVATE KEY`): baton reads it, but billet's wirecert reads a
 * key with x509.ParseECPrivateKey, which takes SEC1 `EC PRIVATE KEY` only — a host holding one
 * looks whole to baton and fails to start billet, so status says so.
 */
export function isPkcs8Key(pem: Uint8Array): boolean {
  return pemDecode('EC PRIVATE KEY', pem) === undefined && pemDecode('PRIVATE KEY', pem) !== undefined;
}

/**
 * The private key of a PEM file: SEC1 `EC PRIVATE KEY` (what billet's wirecert and openssl
 * ecparam write) or PKCS#8 `PRIVATE KEY` (what baton wrote before it matched billet). Both,
 * because a published document carries the bytes its minter wrote.
 */
export function parsePrivateKey(pem: Uint8Array): KeyObject | undefined {
  const sec1 = pemDecode('EC PRIVATE KEY', pem);
  const der = sec1 ?? pemDecode('PRIVATE KEY', pem);
  if (!der) return undefined;
  try {
    const key = nodeCrypto().createPrivateKey({
      key: Buffer.from(der),
      format: 'der',
      type: sec1 ? 'sec1' : 'pkcs8',
    });
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
      return undefined;
    // THE DER AS WRITTEN: OpenSSL reads an ECPrivateKey whose version is not 1 (or a PKCS#8 whose
    // version is not 0) as the same key, so a flipped version byte would be adopted as other
    // bytes that still pair. SEC1 (what billet and baton write) must re-export byte for byte.
    if (sec1 ? !sameDer(key.export({ format: 'der', type: 'sec1' }), der) : !pkcs8VersionZero(der))
      return undefined;
    return key;
  } catch {
    return undefined;
  }
}

function sameDer(exported: Buffer | string, der: Uint8Array): boolean {
  return Buffer.isBuffer(exported) && exported.equals(Buffer.from(der));
}

/** PrivateKeyInfo ::= SEQUENCE { version INTEGER (0), … }: the INTEGER right after the SEQUENCE's header. */
function pkcs8VersionZero(der: Uint8Array): boolean {
  if (der[0] !== 0x30 || der[1] === undefined) return false;
  const header = der[1] < 0x80 ? 2 : 2 + (der[1] & 0x7f);
  return der[header] === 0x02 && der[header + 1] === 0x01 && der[header + 2] === 0x00;
}

/**
 * The fingerprint of a private key's public half (SPKI, as a certificate's fingerprint), or
 * undefined when it is no key baton reads. Derived from the private scalar, never from a public
 * copy the file may carry: it names the key a retire left behind, to be proved a predecessor.
 */
export function keyFingerprint(pem: Uint8Array): Fingerprint | undefined {
  const key = parsePrivateKey(pem);
  if (!key) return undefined;
  const spki = nodeCrypto().createPublicKey(key).export({ format: 'der', type: 'spki' });
  return fingerprintOfSpki(new Uint8Array(spki));
}

/**
 * Pairing is proved by a signature, not by comparing the public half a PKCS#8 file may carry:
 * that copy is not checked against the private scalar, so a doctored file could match on it.
 */
function keyPairsWith(key: KeyObject, certificate: ReadCertificate): boolean {
  try {
    const { createPublicKey, randomBytes, sign, verify } = nodeCrypto();
    const publicKey = createPublicKey({ key: Buffer.from(certificate.spkiDer), format: 'der', type: 'spki' });
    const challenge = randomBytes(32);
    return verify('sha256', challenge, publicKey, sign('sha256', challenge, key));
  } catch {
    return false;
  }
}

function caFaultOf(certificate: ReadCertificate): string | undefined {
  if (!isCa(certificate.extensions.get(OID.basicConstraints))) return 'its basicConstraints do not say cA';
  if (!allowsKeyCertSign(certificate.extensions.get(OID.keyUsage)))
    return 'its keyUsage does not include keyCertSign';
  return undefined;
}

/**
 * Self-issued is the issuer Name's bytes equal to the subject's; self-signed is OpenSSL
 * verifying the signature (and that the outer algorithm matches the signed one) under the
 * certificate's own key.
 */
function selfSignatureFault(certificate: ReadCertificate, der: Uint8Array): string | undefined {
  if (Buffer.compare(certificate.issuerDer, certificate.subjectDer) !== 0)
    return 'its issuer is not its subject';
  try {
    // readCertificate had OpenSSL accept these bytes: it is asked again, now to verify.
    if (
      opensslCertificate(der)?.verify(
        nodeCrypto().createPublicKey({ key: Buffer.from(certificate.spkiDer), format: 'der', type: 'spki' }),
      )
    )
      return undefined;
  } catch {
    // fall through: a signature that cannot be checked is not a self-signature
  }
  return 'its signature does not verify under its own key';
}
