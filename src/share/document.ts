/**
 * The published document (docs/publishing.md), encoded and decoded EXACTLY:
 *
 *   { "format": "baton.authority/1", "deployment", "fingerprint", "previous_fingerprint",
 *     "published_at", "published_by", "files": { "<allowlisted name>": "<base64>" } }
 *
 * Sealed, `files` is replaced by
 *
 *   "sealed": { "alg": "AES-256-GCM", "nonce": <b64, 12 bytes>, "ciphertext": <b64>,
 *               "tag": <b64, 16 bytes> }
 *
 * whose plaintext is the `files` object's JSON, and whose associated data is the header
 * (seal.ts). Decoding is a closed set: anything the decoder does not understand is refused,
 * naming the reason, because a field it skipped could be the one that mattered — and a host
 * that installs a document it half understood gives the fleet an authority nobody checked.
 *
 * BILLET'S WIRE FORM is read too (docs/publishing.md, "billet's document"): billet's
 * wireshare.Publish writes `{ "deployment", "fingerprint", "published_at", "files" }` and no
 * `format`. A document with no `format` and exactly those fields is read by billet's rules
 * (the same closed set of file names; ca.key, ca.crt AND authority-created required; the
 * previous pair whole or absent), then checked like baton's own. Anything else without
 * `format` is refused as before: guessing at a shape is how a half-read document gets installed.
 */
import { ETAG_8, nextStep, replaceElsewhere, type Said } from '../next-step.js';
import { BatonError } from '../errors.js';
import { OutsideText, shown } from '../outside-text.js';
import { checkPair, markerDeployment } from '../authority/index.js';
import {
  AUTHORITY_FILES,
  type AuthorityFileName,
  type AuthorityFiles,
  type PairSummary,
} from '../authority/types.js';
import { asFingerprint, type Fingerprint } from '../pki/fingerprint-type.js';
import { markerBytes } from '../authority/write-marker.js';
import { MAX_DOCUMENT_BYTES } from '../store/body-limit.js';
import { handoverVerifies, tamperedError } from './handover.js';
import { SEAL_ALGORITHM, seal, unseal, type SealedBytes } from './seal.js';
import { DOCUMENT_FORMAT, type DocumentHeader } from './types.js';

const HEADER_FIELDS = [
  'format',
  'deployment',
  'fingerprint',
  'previous_fingerprint',
  'published_at',
  'published_by',
] as const;
/** Written only on a rotation signed by the previous key, so every other document reads as before. */
const HANDOVER_FIELD = 'handover_signature';
const SEALED_FIELDS = ['alg', 'nonce', 'ciphertext', 'tag'] as const;
const REQUIRED_FILES: readonly AuthorityFileName[] = ['ca.crt', 'ca.key'];
const MARKER = 'authority-created';
/**
 * billet's `document` struct (internal/wireshare, b2b42c1a), every field it writes. Its
 * decodeFiles requires the marker as well as the pair: "not a whole one" without it.
 */
const BILLET_FIELDS = ['deployment', 'fingerprint', 'published_at', 'files'] as const;
const BILLET_REQUIRED_FILES: readonly AuthorityFileName[] = ['ca.key', 'ca.crt', MARKER];
/** billet's document names no publisher: what status shows in its place. */
const BILLET_PUBLISHER = 'billet (its document names no host)';

/** A document whose structure and header checked out; its files not yet opened. */
export interface ParsedDocument {
  readonly header: DocumentHeader;
  /** Present when the files are sealed. */
  readonly sealed: SealedBytes | undefined;
  /** Present when the files are not sealed (decoded, names allowlisted, not yet checked). */
  readonly files: AuthorityFiles | undefined;
}

/** A document whose files were opened and checked: what adopt installs. */
export interface OpenedDocument {
  readonly header: DocumentHeader;
  readonly sealed: boolean;
  readonly files: AuthorityFiles;
  readonly current: PairSummary;
  readonly previous: PairSummary | undefined;
}

export interface DecodeOptions {
  /** This host's deployment: a document for another is refused. */
  readonly deployment: string;
  /** Where the document came from, for every message (e.g. s3://bucket/prefix/authority.json). */
  readonly where: string;
  /** The 32-byte seal key when the deployment seals its document. */
  readonly sealKey?: Uint8Array | undefined;
}

// ---------------------------------------------------------------------------------------
// encode

/**
 * The document's bytes. Sealed when `sealKey` is given. Files are written in allowlist order.
 *
 * EVERY DOCUMENT CARRIES THE MARKER: billet's decodeFiles refuses one without
 * `authority-created` ("not a whole one"), so a first controller's document — minted aside,
 * its marker not yet on any disk — would stop a billet controller from adopting. The header
 * names the deployment the marker names. The format is always baton's: a header read from
 * billet's wire form is never written back as if billet had a format.
 */
export async function encodeDocument(
  header: DocumentHeader,
  files: AuthorityFiles,
  sealKey?: Uint8Array,
): Promise<Uint8Array> {
  const carried: AuthorityFiles = { ...files, [MARKER]: files[MARKER] ?? markerBytes(header.deployment) };
  const encoded: Record<string, string> = {};
  for (const name of AUTHORITY_FILES) {
    const bytes = carried[name];
    if (bytes !== undefined) encoded[name] = Buffer.from(bytes).toString('base64');
  }
  const head = {
    format: DOCUMENT_FORMAT,
    deployment: header.deployment,
    fingerprint: header.fingerprint,
    previous_fingerprint: header.previousFingerprint,
    published_at: header.publishedAt.raw,
    published_by: header.publishedBy.raw,
    ...(header.handover ? { [HANDOVER_FIELD]: b64(header.handover) } : {}),
  };
  let document: Record<string, unknown>;
  if (sealKey) {
    const sealed = seal(new TextEncoder().encode(JSON.stringify(encoded)), sealKey, header);
    document = {
      ...head,
      sealed: {
        alg: SEAL_ALGORITHM,
        nonce: b64(sealed.nonce),
        ciphertext: b64(sealed.ciphertext),
        tag: b64(sealed.tag),
      },
    };
  } else {
    document = { ...head, files: encoded };
  }
  return new TextEncoder().encode(`${JSON.stringify(document, null, 2)}\n`);
}

/**
 * Seals an encoded, unsealed document with `sealKey` (its header unchanged). For tests and
 * tools that hold a plain document; refuses anything `parseDocument` refuses.
 */
export async function sealDocument(
  body: Uint8Array,
  sealKey: Uint8Array,
  where = 'the document to seal',
): Promise<Uint8Array> {
  const claimed = (() => {
    try {
      return (JSON.parse(new TextDecoder().decode(body)) as { deployment?: unknown }).deployment;
    } catch {
      return undefined;
    }
  })();
  const parsed = parseDocument(body, { deployment: typeof claimed === 'string' ? claimed : '', where });
  if (!parsed.files) throw refuser(where)('it is already sealed', 'Seal the unsealed document instead.');
  return encodeDocument(parsed.header, parsed.files, sealKey);
}

// ---------------------------------------------------------------------------------------
// decode

/** parse + open: the whole decode, for a caller that needs the files. */
export async function decodeDocument(body: Uint8Array, options: DecodeOptions): Promise<OpenedDocument> {
  return openDocument(parseDocument(body, options), options);
}

/**
 * The structural half of decoding: size, JSON, duplicate keys, format, closed field set,
 * header types, deployment, and (unsealed) file names and base64. Needs no key, so a status
 * view can read a sealed document's fingerprints.
 */
export function parseDocument(body: Uint8Array, options: DecodeOptions): ParsedDocument {
  const refuse = refuser(options.where);
  if (body.length > MAX_DOCUMENT_BYTES) {
    throw refuse(
      `it is ${body.length} bytes, over the 1 MiB (${MAX_DOCUMENT_BYTES} bytes) a baton document never exceeds`,
      REPUBLISH,
    );
  }
  const value = parseStrictJson(body, refuse);
  if (!isPlainObject(value)) throw refuse('it is not a JSON object', REPUBLISH);

  // The format first: a newer format may legitimately have other fields, and "a newer baton
  // wrote this" is the useful thing to say.
  if (!('format' in value)) {
    if (isBilletShaped(value)) return parseBilletDocument(value, options, refuse);
    throw refuse('it has no "format" field', REPUBLISH);
  }
  if (value.format !== DOCUMENT_FORMAT) {
    throw refuse(
      `its format is ${typeof value.format === 'string' ? `"${shown(value.format, 80)}"` : shown(String(JSON.stringify(value.format)), 80)}, not "${DOCUMENT_FORMAT}"`,
      'A newer baton may have written it: upgrade baton on this host, or publish again from a controller running this version.',
    );
  }
  const sealedDocument = 'sealed' in value;
  const required = [...HEADER_FIELDS, sealedDocument ? 'sealed' : 'files'];
  for (const field of required) {
    if (!(field in value)) throw refuse(`the field "${field}" is missing`, REPUBLISH);
  }
  const expected = new Set<string>([...required, HANDOVER_FIELD]);
  for (const field of Object.keys(value)) {
    if (!expected.has(field)) {
      const why =
        field === 'files' || field === 'sealed'
          ? 'a document carries "files" or "sealed", never both'
          : 'a newer baton may have written it';
      throw refuse(`it has the unknown field "${shown(field, 80)}" (${why})`, REPUBLISH);
    }
  }

  const header = parseHeader(value, refuse);
  refuseOtherDeployment(header, options, refuse);
  if (sealedDocument) return { header, sealed: parseSealed(value.sealed, refuse), files: undefined };
  return { header, sealed: undefined, files: parseFiles(value.files, 'files', refuse) };
}

/** A document of another deployment is never read further: this host may be pointed at another fleet's store. */
function refuseOtherDeployment(header: DocumentHeader, options: DecodeOptions, refuse: Refuse): void {
  if (header.deployment !== options.deployment) {
    throw refuse(
      `it is for the deployment "${shown(header.deployment, 80)}", and this host is "${options.deployment}"`,
      "Check --deployment and the store URL: this host may be pointed at another fleet's store.",
    );
  }
}

/**
 * billet's wire form: no `format`, and no field but billet's four, `files` among them. Only
 * that shape is read by billet's rules; a baton document that lost its `format` still carries
 * `published_by` and `previous_fingerprint`, and is refused as before.
 */
function isBilletShaped(value: Record<string, unknown>): boolean {
  const fields = Object.keys(value);
  return fields.includes('files') && fields.every((f) => (BILLET_FIELDS as readonly string[]).includes(f));
}

/**
 * billet's document (wireshare.Publish) read into baton's header: no publisher, no
 * previous_fingerprint (openDocument fills it from the ca-previous.crt carried, the only place
 * billet records it), never sealed. `wire: 'billet'` follows it so a handover is said to be
 * unprovable rather than missing (billet signs none).
 */
function parseBilletDocument(
  value: Record<string, unknown>,
  options: DecodeOptions,
  refuse: Refuse,
): ParsedDocument {
  const billetRefuse: Refuse = (reason, next) =>
    refuse(`it is billet's document (no "format") and ${reason}`, next);
  for (const field of BILLET_FIELDS) {
    if (!(field in value)) throw billetRefuse(`the field "${field}" is missing`, REPUBLISH);
  }
  const fields = parseHeaderFields(
    { ...value, previous_fingerprint: null, published_by: BILLET_PUBLISHER },
    billetRefuse,
  );
  const header: DocumentHeader = { ...fields, wire: 'billet' };
  refuseOtherDeployment(header, options, refuse);
  return { header, sealed: undefined, files: parseFiles(value.files, 'files', billetRefuse) };
}

/**
 * The cryptographic half: unseal (when sealed), require the closed set's required files, and
 * check each pair with the SAME `checkPair` the local reader uses — pairs, self-signed CA,
 * O = deployment — then that the header's fingerprints are the carried certificates'.
 */
export async function openDocument(parsed: ParsedDocument, options: DecodeOptions): Promise<OpenedDocument> {
  const refuse = refuser(options.where);
  let files: AuthorityFiles;
  if (parsed.sealed) {
    if (!options.sealKey) {
      throw refuse(
        'it is sealed and this host has no seal key',
        'Set seal_key_file in baton.yaml to the key the other controllers use (the same 32-byte file on every controller).',
      );
    }
    const plaintext = unseal(parsed.sealed, options.sealKey, parsed.header, options.where);
    files = parseFiles(parseStrictJson(plaintext, refuse, 'the sealed files are'), 'sealed files', refuse);
  } else {
    if (options.sealKey) {
      throw refuse(
        'it is not sealed, and this host has a seal key (seal_key_file), so this deployment seals its documents',
        [
          'This host has the key: replace it with a sealed document with ',
          nextStep('sync --replace-unreadable --confirm', { placeholders: [ETAG_8] }),
          ". If this deployment does not seal, remove seal_key_file from this host's config instead.",
        ],
      );
    }
    files = parsed.files!;
  }

  const billet = parsed.header.wire === 'billet';
  // billet counts an empty file as absent (len(out[name]) == 0 in decodeFiles).
  const carries = (name: AuthorityFileName) => {
    const bytes = files[name];
    return bytes !== undefined && (!billet || bytes.length > 0);
  };
  for (const name of billet ? BILLET_REQUIRED_FILES : REQUIRED_FILES) {
    if (!carries(name)) {
      throw refuse(
        billet
          ? `it is billet's document and does not carry the required file "${name}" (billet's own reader refuses it as not a whole authority)`
          : `it does not carry the required file "${name}"`,
        REPUBLISH,
      );
    }
  }
  const parsedHeader = parsed.header;
  const current = await checkCarriedPair(files['ca.key']!, files['ca.crt']!, 'ca.key', 'ca.crt', options);
  if (current.fingerprint !== parsedHeader.fingerprint) {
    throw refuse(
      `its fingerprint ${parsedHeader.fingerprint} is not the fingerprint of the ca.crt it carries (${current.fingerprint})`,
      REPUBLISH,
    );
  }

  const previousKey = carries('ca-previous.key') ? files['ca-previous.key'] : undefined;
  const previousCert = carries('ca-previous.crt') ? files['ca-previous.crt'] : undefined;
  let previous: PairSummary | undefined;
  if ((previousKey === undefined) !== (previousCert === undefined)) {
    const missing = previousKey === undefined ? 'ca-previous.key' : 'ca-previous.crt';
    throw refuse(`it carries half of the previous pair ("${missing}" is missing)`, REPUBLISH);
  }
  if (previousKey && previousCert) {
    previous = await checkCarriedPair(
      previousKey,
      previousCert,
      'ca-previous.key',
      'ca-previous.crt',
      options,
    );
  }
  // billet writes no previous_fingerprint: the carried ca-previous.crt is its only record.
  const header: DocumentHeader = billet
    ? { ...parsedHeader, previousFingerprint: previous?.fingerprint ?? null }
    : parsedHeader;
  if ((previous?.fingerprint ?? null) !== header.previousFingerprint) {
    throw refuse(
      previous
        ? `its previous_fingerprint ${header.previousFingerprint ?? 'null'} is not the fingerprint of the ca-previous.crt it carries (${previous.fingerprint})`
        : `its previous_fingerprint is ${header.previousFingerprint}, but it carries no ca-previous.crt`,
      REPUBLISH,
    );
  }

  // A handover the carried previous key did not sign was altered or forged: nothing from this
  // document may be installed, whatever its files say.
  if (
    header.handover &&
    previous?.publicKey &&
    !handoverVerifies(header, header.handover, previous.publicKey)
  ) {
    throw tamperedError(options.where, previous.fingerprint, 'the ca-previous.crt the document carries');
  }

  const marker = carries(MARKER) ? files[MARKER] : undefined;
  if (marker !== undefined && markerDeployment(marker) !== options.deployment) {
    throw refuse(`its "${MARKER}" marker does not name the deployment "${options.deployment}"`, REPUBLISH);
  }
  return { header, sealed: parsed.sealed !== undefined, files, current, previous };
}

async function checkCarriedPair(
  key: Uint8Array,
  cert: Uint8Array,
  keyName: string,
  certName: string,
  options: DecodeOptions,
): Promise<PairSummary> {
  try {
    return await checkPair(key, cert, options.deployment, `${options.where} (${certName} + ${keyName})`);
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    throw new BatonError('refused', {
      what: `The published document was refused: ${lowerFirst(error.what)}`,
      where: error.where ?? options.where,
      next: error.next ?? REPUBLISH,
      changed: 'Nothing was installed.',
      reason: 'document-refused',
      cause: error,
    });
  }
}

// ---------------------------------------------------------------------------------------
// parts

type Refuse = (reason: string, next: string | Said) => BatonError;

// Not `sync --push`: the same document blocks it. Replacing an unusable document is its own,
// confirmed action, conditional on the bad object's ETag.
const REPUBLISH: Said = [
  "Replace it from a controller that holds this deployment's authority: ",
  replaceElsewhere(),
  '.',
];

function refuser(location: string): Refuse {
  return (reason, next) =>
    new BatonError('refused', {
      what: `The published document was refused: ${reason}.`,
      where: location,
      next,
      changed: 'Nothing was installed.',
      reason: 'document-refused',
    });
}

function parseHeader(value: Record<string, unknown>, refuse: Refuse): DocumentHeader {
  const header = parseHeaderFields(value, refuse);
  if (!(HANDOVER_FIELD in value)) return header;
  const text = value[HANDOVER_FIELD];
  const signature = typeof text === 'string' ? strictBase64(text) : undefined;
  if (!signature || signature.length === 0 || signature.length > 80) {
    throw refuse(
      `its "${HANDOVER_FIELD}" is not an ECDSA signature in base64 (standard alphabet, with padding)`,
      REPUBLISH,
    );
  }
  if (header.previousFingerprint === null) {
    throw refuse(
      `it carries a "${HANDOVER_FIELD}" but no previous_fingerprint, so no key could have signed a handover`,
      REPUBLISH,
    );
  }
  return { ...header, handover: signature };
}

function parseHeaderFields(value: Record<string, unknown>, refuse: Refuse): DocumentHeader {
  const text = (field: string): string => {
    const v = value[field];
    if (typeof v !== 'string' || v === '')
      throw refuse(`the field "${field}" is not a non-empty string`, REPUBLISH);
    return v;
  };
  const fingerprint = (field: string): Fingerprint => {
    const v = text(field);
    const fp = asFingerprint(v);
    if (!fp)
      throw refuse(`the field "${field}" is not a fingerprint (SHA256: and 43 base64 characters)`, REPUBLISH);
    return fp;
  };
  return {
    format: DOCUMENT_FORMAT,
    deployment: text('deployment'),
    fingerprint: fingerprint('fingerprint'),
    previousFingerprint: value.previous_fingerprint === null ? null : fingerprint('previous_fingerprint'),
    publishedAt: new OutsideText(text('published_at')),
    publishedBy: new OutsideText(text('published_by')),
  };
}

function parseFiles(value: unknown, what: string, refuse: Refuse): AuthorityFiles {
  if (!isPlainObject(value)) throw refuse(`its ${what} are not a JSON object`, REPUBLISH);
  const files: AuthorityFiles = {};
  for (const [name, content] of Object.entries(value)) {
    if (!(AUTHORITY_FILES as readonly string[]).includes(name)) {
      throw refuse(
        `it carries the unknown file name "${shown(name, 80)}" (a newer baton may have written it; known: ${AUTHORITY_FILES.join(', ')})`,
        'Upgrade baton on this host, or publish again from a controller running this version.',
      );
    }
    if (typeof content !== 'string') throw refuse(`the file "${name}" is not a base64 string`, REPUBLISH);
    const bytes = strictBase64(content);
    if (!bytes)
      throw refuse(`the file "${name}" is not valid base64 (standard alphabet, with padding)`, REPUBLISH);
    files[name as AuthorityFileName] = bytes;
  }
  return files;
}

function parseSealed(value: unknown, refuse: Refuse): SealedBytes {
  if (!isPlainObject(value)) throw refuse('its "sealed" field is not a JSON object', REPUBLISH);
  for (const field of SEALED_FIELDS) {
    if (!(field in value)) throw refuse(`its "sealed" field has no "${field}"`, REPUBLISH);
  }
  for (const field of Object.keys(value)) {
    if (!(SEALED_FIELDS as readonly string[]).includes(field))
      throw refuse(`its "sealed" field has the unknown field "${shown(field, 80)}"`, REPUBLISH);
  }
  if (value.alg !== SEAL_ALGORITHM) {
    throw refuse(
      `it is sealed with ${JSON.stringify(value.alg)}, not ${SEAL_ALGORITHM}`,
      'A newer baton may have sealed it: upgrade baton on this host.',
    );
  }
  const bytes = (field: 'nonce' | 'ciphertext' | 'tag') => {
    const v = value[field];
    const decoded = typeof v === 'string' ? strictBase64(v) : undefined;
    if (!decoded)
      throw refuse(`its sealed "${field}" is not valid base64 (standard alphabet, with padding)`, REPUBLISH);
    return decoded;
  };
  return { nonce: bytes('nonce'), ciphertext: bytes('ciphertext'), tag: bytes('tag') };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Strict base64: the standard alphabet, padding, no whitespace, and canonical (the unused bits
 * zero) — Buffer.from(…, 'base64') silently skips anything it does not like, which would let
 * a damaged file decode to different bytes instead of being refused.
 */
export function strictBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  if (bytes.toString('base64') !== text) return undefined;
  return new Uint8Array(bytes);
}

function b64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('base64');
}

function parseStrictJson(body: Uint8Array, refuse: Refuse, subject = 'it is'): unknown {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw refuse(`${subject} not UTF-8 text`, REPUBLISH);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw refuse(`${subject} not JSON (${(error as Error).message})`, REPUBLISH);
  }
  const duplicate = firstDuplicateKey(text);
  if (duplicate !== undefined) {
    throw refuse(
      `the key ${JSON.stringify(duplicate)} appears twice in one object (which one counts would depend on the reader)`,
      REPUBLISH,
    );
  }
  return value;
}

/**
 * The first key that appears twice in one object of already-valid JSON, or undefined.
 * JSON.parse silently keeps the last duplicate; another reader may keep the first — two
 * controllers must never read two different documents from the same bytes.
 */
export function firstDuplicateKey(json: string): string | undefined {
  type Frame = { readonly object: boolean; readonly keys: Set<string>; expectKey: boolean };
  const stack: Frame[] = [];
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    const top = stack[stack.length - 1];
    if (c === '{') stack.push({ object: true, keys: new Set(), expectKey: true });
    else if (c === '[') stack.push({ object: false, keys: new Set(), expectKey: false });
    else if (c === '}' || c === ']') stack.pop();
    else if (c === ',' && top?.object) top.expectKey = true;
    else if (c === ':' && top?.object) top.expectKey = false;
    else if (c === '"') {
      let j = i + 1;
      while (json[j] !== '"') j += json[j] === '\\' ? 2 : 1;
      if (top?.object && top.expectKey) {
        const key = JSON.parse(json.slice(i, j + 1)) as string;
        if (top.keys.has(key)) return key;
        top.keys.add(key);
      }
      i = j;
    }
  }
  return undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function lowerFirst(text: string): string {
  return text.length > 0 ? text[0]!.toLowerCase() + text.slice(1) : text;
}
