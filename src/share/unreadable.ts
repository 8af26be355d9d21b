/**
 * Why a published document cannot be used, in the terms that decide the way out (the "way out
 * of every document" rule in docs/architecture.md):
 *
 * - 'unusable'          cannot be used: empty, not JSON, over 1 MiB, an unknown format, bad
 *                       base64, a fingerprint that lies, a key that does not pair, a seal that
 *                       does not open with this host's key, or a `deployment` field edited
 *                       while the certificate inside names THIS deployment. A whole controller
 *                       replaces it (`sync --replace-unreadable`, bound to the object's ETag).
 * - 'foreign-deployment' a document of ANOTHER deployment (its certificate says so too, or is
 *                       sealed): this host is pointed at the wrong store. Never replaced.
 * - 'newer-format'      it declares baton.authority/N above this version's: upgrade. Replacing
 *                       it would downgrade the fleet.
 * - 'could-not-read'    the store itself failed: nothing is known about the document.
 */
import { replaceElsewhere } from '../next-step.js';
import { BatonError } from '../errors.js';
import { DOCUMENT_FORMAT, type UnreadableProblem } from './types.js';
import { parseCertificate, type CertificateFacts } from '../pki/inspect-pair.js';

/** The problem of a document the decoder refused. Never throws. */
export function classifyRefusedDocument(
  body: Uint8Array,
  deployment: string,
): Exclude<UnreadableProblem, 'could-not-read'> {
  const value = looseJson(body);
  if (value === undefined) return 'unusable';
  const format = value.format;
  if (typeof format === 'string' && format !== DOCUMENT_FORMAT && isNewerFormat(format))
    return 'newer-format';
  // Only a document in this version's format can be a VALID document of another deployment;
  // one whose certificate names this deployment had its `deployment` field edited.
  // billet's wire form has no format (document.ts): its deployment field is as valid a claim.
  if (
    (format === DOCUMENT_FORMAT || !('format' in value)) &&
    typeof value.deployment === 'string' &&
    value.deployment !== '' &&
    value.deployment !== deployment
  ) {
    return certificateDeployment(value) === deployment ? 'unusable' : 'foreign-deployment';
  }
  return 'unusable';
}

/** True when the `deployment` field names another deployment but the certificate inside names this one. */
export function editedDeployment(body: Uint8Array, deployment: string): boolean {
  const value = looseJson(body);
  return (
    value !== undefined && value.deployment !== deployment && certificateDeployment(value) === deployment
  );
}

export function editedDeploymentError(location: string, deployment: string): BatonError {
  return new BatonError('refused', {
    what: `The published document cannot be used: its certificate names this deployment (${deployment}), but its "deployment" field was edited to name another.`,
    where: location,
    changed: 'Nothing was installed.',
    next: ["Replace it from a controller that holds this deployment's authority: ", replaceElsewhere(), '.'],
    reason: 'document-refused',
  });
}

/** The deployment (the O= of the subject) of an unsealed document's ca.crt; undefined when there is none to read. */
function certificateDeployment(value: Record<string, unknown>): string | undefined {
  const files = value.files;
  if (typeof files !== 'object' || files === null) return undefined;
  const cert = (files as Record<string, unknown>)['ca.crt'];
  if (typeof cert !== 'string') return undefined;
  try {
    // node:crypto only for a refused document's certificate, not when status imports this module.
    const subject = new (process.getBuiltinModule('node:crypto').X509Certificate)(Buffer.from(cert, 'base64'))
      .subject;
    return /^O=(.*)$/m.exec(subject)?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Every authority a refused document claims to replace: its header's previous_fingerprint, the
 * fingerprint of the ca-previous.crt it carries, and its ca.crt's billet-replaces: claim (billet's
 * document records a rotation only in its files). Undefined when it names none.
 */
export function claimedPrevious(body: Uint8Array): readonly string[] | undefined {
  const value = looseJson(body);
  if (value === undefined) return undefined;
  const claims: string[] = [];
  if (typeof value.previous_fingerprint === 'string' && value.previous_fingerprint !== '')
    claims.push(value.previous_fingerprint);
  const files =
    typeof value.files === 'object' && value.files !== null ? (value.files as Record<string, unknown>) : {};
  const previous = certificateOf(files['ca-previous.crt']);
  if (previous) claims.push(previous.fingerprint);
  const replaces = certificateOf(files['ca.crt'])?.replaces;
  if (replaces) claims.push(replaces);
  return claims.length > 0 ? claims : undefined;
}

/** baton's own certificate reader over a refused document's file: its fingerprint and claim, or undefined. */
function certificateOf(base64: unknown): CertificateFacts | undefined {
  if (typeof base64 !== 'string') return undefined;
  return parseCertificate(new Uint8Array(Buffer.from(base64, 'base64')));
}

/** True when the raw document carries sealed files (its writer had the seal key). */
export function looksSealed(body: Uint8Array): boolean {
  const value = looseJson(body);
  return value !== undefined && 'sealed' in value;
}

/** `baton.authority/N` with N above ours, or any other format name this baton does not know. */
function isNewerFormat(format: string): boolean {
  const ours = Number(DOCUMENT_FORMAT.split('/')[1]);
  const match = /^baton\.authority\/(\d+)$/.exec(format);
  if (!match) return false;
  return Number(match[1]) > ours;
}

function looseJson(body: Uint8Array): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(body));
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
