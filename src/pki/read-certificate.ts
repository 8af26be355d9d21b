import type { X509Certificate } from 'node:crypto';
import {
  derBitString,
  derBoolean,
  derChildren,
  derInteger,
  derOid,
  derRead,
  derString,
  derTime,
  TAG,
  type DerElement,
} from './der.js';

/** One attribute of a Name, in the order the certificate carries it (RDNs flattened). */
export interface NameAttribute {
  readonly type: string;
  readonly value: string;
}

export interface CertificateExtension {
  readonly critical: boolean;
  /** The extnValue OCTET STRING's content: the extension's own DER. */
  readonly value: Uint8Array;
}

/** The fields of an X.509 certificate baton decides on, read from its DER exactly. */
export interface ReadCertificate {
  /** The serial's content octets, as encoded. */
  readonly serial: Uint8Array;
  /** The issuer and subject Names as encoded: "self-issued" compares these bytes. */
  readonly issuerDer: Uint8Array;
  readonly subjectDer: Uint8Array;
  readonly subject: readonly NameAttribute[];
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** The DER SubjectPublicKeyInfo, as encoded: what the fingerprint hashes. */
  readonly spkiDer: Uint8Array;
  readonly extensions: ReadonlyMap<string, CertificateExtension>;
}

/**
 * OpenSSL's view of a DER certificate (it checks the signature), or undefined when OpenSSL
 * refuses it. node:crypto is loaded here, on first use, never by reading the fields: a status
 * whose pair was proved before (checked-pairs.ts) reads its certificates without OpenSSL.
 */
export function opensslCertificate(der: Uint8Array): X509Certificate | undefined {
  try {
    return new (process.getBuiltinModule('node:crypto').X509Certificate)(Buffer.from(der));
  } catch {
    return undefined;
  }
}

/**
 * Reads a DER certificate, or undefined when it is not exactly one well-formed certificate.
 * Node (OpenSSL) must accept it too: the fields baton decides on come from this strict walk
 * (Node exposes no keyUsage, and its subject text is escaped prose, not the RDNs), the
 * signature from OpenSSL — and both must be reading one and the same structure. `openssl:
 * false` only for bytes OpenSSL already accepted (a pair in checked-pairs.ts).
 */
export function readCertificate(
  der: Uint8Array,
  { openssl = true }: { readonly openssl?: boolean } = {},
): ReadCertificate | undefined {
  const certificate = derRead(der);
  if (certificate?.tag !== TAG.sequence) return undefined;
  const parts = derChildren(certificate);
  if (
    parts?.length !== 3 ||
    parts[0]!.tag !== TAG.sequence ||
    parts[1]!.tag !== TAG.sequence ||
    parts[2]!.tag !== TAG.bitString
  )
    return undefined;
  const tbs = derChildren(parts[0]!);
  if (!tbs) return undefined;

  let i = 0;
  const next = (tag: number): DerElement | undefined => (tbs[i]?.tag === tag ? tbs[i++] : undefined);
  const version = next(0xa0);
  if (version && !isVersion(version)) return undefined;
  const serialElement = next(TAG.integer);
  const signatureAlgorithm = next(TAG.sequence);
  const issuer = next(TAG.sequence);
  const validity = next(TAG.sequence);
  const subject = next(TAG.sequence);
  const spki = next(TAG.sequence);
  if (!serialElement || !signatureAlgorithm || !issuer || !validity || !subject || !spki) return undefined;
  next(0x81); // issuerUniqueID
  next(0x82); // subjectUniqueID
  const extensionsElement = next(0xa3);
  if (i !== tbs.length) return undefined;

  const serial = derInteger(serialElement);
  const times = derChildren(validity);
  const notBefore = times?.length === 2 ? derTime(times[0]!) : undefined;
  const notAfter = times?.length === 2 ? derTime(times[1]!) : undefined;
  const subjectAttributes = nameAttributes(subject);
  const extensions = extensionsElement
    ? readExtensions(extensionsElement)
    : new Map<string, CertificateExtension>();
  if (!serial || !notBefore || !notAfter || !subjectAttributes || !nameAttributes(issuer) || !extensions)
    return undefined;

  if (openssl && !opensslCertificate(der)) return undefined;
  return {
    serial,
    issuerDer: issuer.bytes,
    subjectDer: subject.bytes,
    subject: subjectAttributes,
    notBefore,
    notAfter,
    spkiDer: spki.bytes,
    extensions,
  };
}

function isVersion(element: DerElement): boolean {
  const inner = derChildren(element);
  const value = inner?.length === 1 ? derInteger(inner[0]!) : undefined;
  return value?.length === 1 && value[0]! <= 2;
}

/** RDNSequence → its attributes in order; multi-valued RDNs flattened, none skipped. */
function nameAttributes(name: DerElement): NameAttribute[] | undefined {
  const rdns = derChildren(name);
  if (!rdns) return undefined;
  const out: NameAttribute[] = [];
  for (const rdn of rdns) {
    const set = rdn.tag === TAG.set ? derChildren(rdn) : undefined;
    if (!set || set.length === 0) return undefined;
    for (const atv of set) {
      const pair = atv.tag === TAG.sequence ? derChildren(atv) : undefined;
      const type = pair?.length === 2 ? derOid(pair[0]!) : undefined;
      if (!pair || type === undefined) return undefined;
      out.push({ type, value: derString(pair[1]!) });
    }
  }
  return out;
}

/**
 * [3] { SEQUENCE OF Extension }. A second instance of one extension is refused (RFC 5280
 * §4.2): two basicConstraints would let the reader and a verifier each pick a different one.
 */
function readExtensions(wrapper: DerElement): Map<string, CertificateExtension> | undefined {
  const inner = derChildren(wrapper);
  const list = inner?.length === 1 && inner[0]!.tag === TAG.sequence ? derChildren(inner[0]!) : undefined;
  if (!list) return undefined;
  const out = new Map<string, CertificateExtension>();
  for (const extension of list) {
    const fields = extension.tag === TAG.sequence ? derChildren(extension) : undefined;
    if (!fields || (fields.length !== 2 && fields.length !== 3)) return undefined;
    const id = derOid(fields[0]!);
    const critical = fields.length === 3 ? derBoolean(fields[1]!) : false;
    const value = fields[fields.length - 1]!;
    if (id === undefined || critical === undefined || value.tag !== TAG.octetString || out.has(id))
      return undefined;
    out.set(id, { critical, value: value.content });
  }
  return out;
}

/** basicConstraints' cA, false when absent or not readable. */
export function isCa(extension: CertificateExtension | undefined): boolean {
  const sequence = extension ? derRead(extension.value) : undefined;
  const fields = sequence?.tag === TAG.sequence ? derChildren(sequence) : undefined;
  const first = fields?.[0];
  return first?.tag === TAG.boolean && derBoolean(first) === true;
}

/** keyUsage's keyCertSign bit (bit 5), false when absent or not readable. */
export function allowsKeyCertSign(extension: CertificateExtension | undefined): boolean {
  const bitString = extension ? derRead(extension.value) : undefined;
  const bits = bitString ? derBitString(bitString) : undefined;
  return bits !== undefined && bits.length > 0 && (bits[0]! & 0x04) !== 0;
}
