/**
 * An INDEPENDENT model of what billet (junioryono/billet at b2b42c1a, the version with
 * internal/wireshare) does with a published document, written from billet's source and from
 * nothing of baton's (node:crypto only — baton's reader is what is being checked against it):
 *
 * - internal/wireshare/wireshare.go `Adopt`: json.Unmarshal into `document` (unknown fields
 *   ignored, field names matched case-insensitively, a wrong JSON type is an error), then
 *   `doc.Deployment != deployment` ⇒ ErrForeignAuthority, then `decodeFiles`, then — a host that
 *   holds an authority — `adoptOverExisting` (SameFingerprint ⇒ AdoptedAlreadyHeld, else refused
 *   unless --force), or — a host with none — `wirecert.InstallAuthority`.
 * - `decodeFiles`: every name must be in wirecert.AuthorityFiles (the allowlist), each value
 *   base64.StdEncoding (padding required; Go skips \r and \n), and every Required file non-empty:
 *   ca.key, ca.crt, authority-created.
 * - internal/wirecert/authority.go `InstallAuthority`: `ParseAuthorityPair(ca.key, ca.crt)` (=
 *   `parsePair`: the first PEM block of each; x509.ParseCertificate; x509.ParseECPrivateKey, which
 *   takes SEC1 DER only; cert.IsCA; CheckSignatureFrom(itself); the key's public key = the
 *   certificate's), `AuthorityDeployment` (exactly one non-empty O, equal to the deployment), the
 *   previous pair whole or absent and, when present, a pair by the same rules; then
 *   `ReadAuthority`'s validate (the marker non-empty).
 * - internal/wirecert/fingerprint.go `Fingerprint`: "SHA256:" + unpadded base64 of SHA-256 over
 *   the certificate's DER SubjectPublicKeyInfo; `SameFingerprint`: case-insensitive, trimmed.
 */
import { createHash, createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';

/** billet's wirecert.AuthorityFiles, in its order, with its Required flags. */
export const BILLET_ALLOWLIST: readonly { readonly name: string; readonly required: boolean }[] = [
  { name: 'ca.key', required: true },
  { name: 'ca.crt', required: true },
  { name: 'ca-previous.key', required: false },
  { name: 'ca-previous.crt', required: false },
  { name: 'authority-created', required: true },
];

export type BilletAdopted =
  | { readonly kind: 'installed'; readonly files: Readonly<Record<string, Uint8Array>> }
  | { readonly kind: 'already-held' }
  | { readonly kind: 'refused'; readonly why: string };

interface BilletDocument {
  deployment: string;
  fingerprint: string;
  published_at: string;
  files: Record<string, string>;
}

/**
 * What billet's Adopt does with `body` on a host of `deployment` that holds `held` (its current
 * fingerprint) or nothing. `force` is `billet ca sync --force`.
 */
export function billetAdopt(
  body: Uint8Array,
  deployment: string,
  held: string | undefined,
  force = false,
): BilletAdopted {
  const refused = (why: string): BilletAdopted => ({ kind: 'refused', why });
  const doc = unmarshal(body);
  if (typeof doc === 'string') return refused(`not a document billet wrote: ${doc}`);
  if (doc.deployment !== deployment)
    return refused(`foreign authority: belongs to ${doc.deployment}, this host is ${deployment}`);
  const files = decodeFiles(doc);
  if (typeof files === 'string') return refused(files);
  if (held !== undefined) {
    if (held.trim().toLowerCase() === doc.fingerprint.trim().toLowerCase()) return { kind: 'already-held' };
    if (!force)
      return refused(`this host holds authority ${held} and the identity store publishes ${doc.fingerprint}`);
  }
  const installed = installAuthority(files, deployment);
  return typeof installed === 'string' ? refused(installed) : { kind: 'installed', files };
}

/** Go's json.Unmarshal into `document`: unknown fields ignored; names case-insensitive; types strict. */
function unmarshal(body: Uint8Array): BilletDocument | string {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(body));
  } catch (error) {
    return (error as Error).message;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'not a JSON object';
  const doc: BilletDocument = { deployment: '', fingerprint: '', published_at: '', files: {} };
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    const name = (['deployment', 'fingerprint', 'published_at', 'files'] as const).find(
      (n) => n.toLowerCase() === key.toLowerCase(),
    );
    if (name === undefined || field === null) continue;
    if (name === 'files') {
      if (typeof field !== 'object' || Array.isArray(field)) return 'files is not an object';
      for (const [file, text] of Object.entries(field as Record<string, unknown>)) {
        if (typeof text !== 'string') return `files.${file} is not a string`;
        doc.files[file] = text;
      }
    } else {
      if (typeof field !== 'string') return `${name} is not a string`;
      doc[name] = field;
    }
  }
  return doc;
}

const STD_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function decodeFiles(doc: BilletDocument): Record<string, Uint8Array> | string {
  const allowed = new Set(BILLET_ALLOWLIST.map((f) => f.name));
  const out: Record<string, Uint8Array> = {};
  for (const [name, encoded] of Object.entries(doc.files)) {
    if (!allowed.has(name)) return `carries "${name}", which this billet does not know how to install`;
    const text = encoded.replace(/[\r\n]/g, '');
    if (!STD_BASE64.test(text)) return `decode ${name}: illegal base64 data`;
    out[name] = new Uint8Array(Buffer.from(text, 'base64'));
  }
  for (const f of BILLET_ALLOWLIST) {
    if (f.required && !(out[f.name]?.length ?? 0)) return `missing ${f.name}, so it is not a whole one`;
  }
  return out;
}

/** The DER of the first PEM block in `bytes` (Go's pem.Decode: the label is not checked by the callers). */
function firstPemBlock(bytes: Uint8Array): { label: string; der: Buffer } | undefined {
  const match = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/.exec(
    Buffer.from(bytes).toString('latin1'),
  );
  if (!match) return undefined;
  return { label: match[1]!, der: Buffer.from(match[2]!.replace(/\s+/g, ''), 'base64') };
}

/**
 * x509.ParseECPrivateKey reads an ECPrivateKey (RFC 5915): SEQUENCE { INTEGER 1, ... }. A PKCS#8
 * body starts SEQUENCE { INTEGER 0, SEQUENCE ... } and is refused (node's 'sec1' import is
 * more lenient, so the version is checked here).
 */
function isSec1(der: Buffer): boolean {
  if (der[0] !== 0x30) return false;
  const lengthBytes = der[1]! & 0x80 ? der[1]! & 0x7f : 0;
  const body = 2 + lengthBytes;
  return der[body] === 0x02 && der[body + 1] === 0x01 && der[body + 2] === 0x01;
}

/** The certificate, or why billet's parsePair refuses the pair. */
function parsePair(keyPem: Uint8Array, certPem: Uint8Array): X509Certificate | string {
  const certBlock = firstPemBlock(certPem);
  if (!certBlock) return 'the CA certificate is not PEM';
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certBlock.der);
  } catch (error) {
    return `parse the CA certificate: ${(error as Error).message}`;
  }
  const keyBlock = firstPemBlock(keyPem);
  if (!keyBlock) return 'the CA key is not PEM';
  if (!isSec1(keyBlock.der)) return 'parse the CA key: not SEC1 (use ParsePKCS8PrivateKey instead)';
  let key;
  try {
    // x509.ParseECPrivateKey: SEC1 DER only (a PKCS#8 body is refused, "use ParsePKCS8PrivateKey").
    key = createPrivateKey({ key: keyBlock.der, format: 'der', type: 'sec1' });
  } catch (error) {
    return `parse the CA key: ${(error as Error).message}`;
  }
  if (!cert.ca) return 'the CA certificate is not a certificate authority';
  if (!cert.verify(cert.publicKey)) return 'this authority did not sign itself';
  const derOf = (k: ReturnType<typeof createPublicKey>) => k.export({ type: 'spki', format: 'der' });
  if (!derOf(createPublicKey(key)).equals(derOf(cert.publicKey))) return 'ca.key is not the key for ca.crt';
  return cert;
}

/** wirecert.AuthorityDeployment: exactly one Organization, non-empty. */
function organizations(cert: X509Certificate): string[] {
  return cert.subject
    .split('\n')
    .filter((line) => line.startsWith('O='))
    .map((line) => line.slice(2));
}

function installAuthority(files: Record<string, Uint8Array>, deployment: string): true | string {
  const cert = parsePair(files['ca.key']!, files['ca.crt']!);
  if (typeof cert === 'string') return cert;
  const os = organizations(cert);
  if (os.length !== 1 || os[0] === '') return 'this authority names no deployment';
  if (os[0] !== deployment)
    return `the stored authority names deployment ${os[0]} and this one is ${deployment}`;
  const prevKey = files['ca-previous.key'];
  const prevCert = files['ca-previous.crt'];
  if ((prevKey?.length ?? 0) > 0 !== (prevCert?.length ?? 0) > 0)
    return 'the stored authority carries only half of a previous generation';
  if (prevKey?.length && prevCert?.length) {
    const previous = parsePair(prevKey, prevCert);
    if (typeof previous === 'string')
      return `the stored previous authority does not hold together: ${previous}`;
  }
  // ReadAuthority's validate after the install: the marker beside a complete authority.
  if (!(files['authority-created']?.length ?? 0)) return 'authority-created is missing';
  return true;
}

/** wirecert.FingerprintOfCert of a PEM certificate. */
export function billetFingerprint(certPem: Uint8Array): string {
  const block = firstPemBlock(certPem);
  if (!block) throw new Error('not PEM');
  const spki = new X509Certificate(block.der).publicKey.export({ type: 'spki', format: 'der' });
  return `SHA256:${createHash('sha256').update(spki).digest('base64').replace(/=+$/, '')}`;
}
