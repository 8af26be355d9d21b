/**
 * Sealing (docs/publishing.md, optional `seal_key_file`): the document's files are AES-256-GCM
 * ciphertext under a 32-byte key the controllers share, and the header fields are the AEAD's
 * ASSOCIATED DATA — readable without the key (a status view compares fingerprints), yet bound
 * to the ciphertext, so a header moved onto another sealed document fails to open instead of
 * vouching for files it does not describe.
 */
import { constants, promises as fs } from 'node:fs';
import { BatonError } from '../errors.js';
import type { DocumentHeader } from './types.js';
import { nextStep, replaceElsewhere, type Placeholder, type Said } from '../next-step.js';

const KEY_FILE: Placeholder = {
  placeholder: 'FILE',
  readFrom: 'the path to write the 32-byte key to (0600)',
};

export const SEAL_ALGORITHM = 'AES-256-GCM';
export const SEAL_KEY_BYTES = 32;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface SealedBytes {
  readonly nonce: Uint8Array;
  readonly ciphertext: Uint8Array;
  readonly tag: Uint8Array;
}

/**
 * The associated data: the six header fields in a fixed order, as a JSON array — one
 * canonical byte string per header, whatever order or spacing the document used — plus the
 * handover signature (base64) when there is one, so it cannot be stripped or swapped either.
 * Without one the array is the six fields exactly as before, so older sealed documents open.
 */
export function associatedData(header: DocumentHeader): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify([
      header.format,
      header.deployment,
      header.fingerprint,
      header.previousFingerprint,
      header.publishedAt.raw,
      header.publishedBy.raw,
      ...(header.handover ? [Buffer.from(header.handover).toString('base64')] : []),
    ]),
  );
}

export function seal(plaintext: Uint8Array, key: Uint8Array, header: DocumentHeader): SealedBytes {
  assertKeySize(key);
  // A fresh random 96-bit nonce per seal: a nonce reused under one key breaks GCM entirely.
  // node:crypto when a seal is made or opened, not when status imports this module.
  const { createCipheriv, randomBytes } = process.getBuiltinModule('node:crypto');
  const nonce = new Uint8Array(randomBytes(NONCE_BYTES));
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(header));
  const ciphertext = new Uint8Array(Buffer.concat([cipher.update(plaintext), cipher.final()]));
  return { nonce, ciphertext, tag: new Uint8Array(cipher.getAuthTag()) };
}

/**
 * Opens sealed files, or refuses: a wrong key, a tampered byte and a swapped header are the
 * same failure to GCM, and all three mean "install nothing". The refusal is "sealed with another
 * key" (reason 'sealed-with-another-key'), never "unusable": offering to replace it would let
 * a host whose key differs seal the fleet's authority with a key nobody else has.
 */
export function unseal(
  sealed: SealedBytes,
  key: Uint8Array,
  header: DocumentHeader,
  where: string,
): Uint8Array {
  assertKeySize(key);
  if (sealed.nonce.length !== NONCE_BYTES || sealed.tag.length !== TAG_BYTES) {
    throw unsealRefused(where, `the nonce must be ${NONCE_BYTES} bytes and the tag ${TAG_BYTES}`);
  }
  try {
    const { createDecipheriv } = process.getBuiltinModule('node:crypto');
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.nonce, { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(header));
    decipher.setAuthTag(sealed.tag);
    return new Uint8Array(Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]));
  } catch (error) {
    throw new BatonError('refused', {
      what: "The published document is sealed with another key: it does not open with this host's seal key. This host's key differs from the fleet's (or the document was altered, its files or its header).",
      where,
      next: "Copy seal_key_file from a controller that opens the document (the same 32-byte file on every controller), then look again. No replace is offered: replacing it would seal the fleet's authority with a key the other controllers do not have. If no controller opens it, it was altered: restore an earlier version from the store's history.",
      changed: 'Nothing was installed.',
      reason: 'sealed-with-another-key',
      cause: error,
    });
  }
}

function unsealRefused(where: string, why: string): BatonError {
  return new BatonError('refused', {
    what: `The published document was refused: it is sealed and ${why}.`,
    where,
    next: [
      'Check that seal_key_file is the key every controller of this deployment shares; if it is, replace the document with ',
      replaceElsewhere(),
      '.',
    ],
    changed: 'Nothing was installed.',
    reason: 'document-refused',
  });
}

function assertKeySize(key: Uint8Array): void {
  if (key.length !== SEAL_KEY_BYTES)
    throw new Error(`seal key must be ${SEAL_KEY_BYTES} bytes, got ${key.length}`);
}

/**
 * Reads `seal_key_file`: a regular file (not a link), exactly 32 bytes, with no group/other
 * permission bits — a key anyone on the host can read seals nothing.
 */
export async function readSealKey(file: string): Promise<Uint8Array> {
  const refuse = (what: string, next: string | Said, cause?: unknown) =>
    new BatonError('config', {
      what,
      where: file,
      next,
      changed: 'Nothing was read from the store or written.',
      ...(cause ? { cause } : {}),
    });
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP')
      throw refuse(
        'The seal key file is a symbolic link.',
        'Point seal_key_file at the key file itself.',
        error,
      );
    throw refuse(
      `The seal key file could not be opened (${code ?? String(error)}).`,
      [
        'Check seal_key_file; ',
        nextStep('key generate', { placeholders: [KEY_FILE] }),
        ' writes a new key (every controller needs the same one).',
      ],
      error,
    );
  }
  try {
    const st = await handle.stat();
    if (!st.isFile())
      throw refuse('The seal key file is not a regular file.', [
        'Point seal_key_file at a file made by ',
        nextStep('key generate', { placeholders: [KEY_FILE] }),
        '.',
      ]);
    if ((st.mode & 0o077) !== 0) {
      throw refuse(
        `The seal key file is readable by group or others (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}).`,
        `Run chmod 600 ${file}, and consider the key exposed if others could read it.`,
      );
    }
    if (st.size !== SEAL_KEY_BYTES) {
      throw refuse(
        `The seal key file holds ${st.size} bytes; a seal key is exactly ${SEAL_KEY_BYTES} random bytes.`,
        [
          nextStep('key generate', { placeholders: [KEY_FILE] }),
          ' writes one; copy the same file to every controller.',
        ],
      );
    }
    const key = new Uint8Array(await handle.readFile());
    if (key.length !== SEAL_KEY_BYTES)
      throw refuse('The seal key file changed while it was read.', 'Try again.');
    return key;
  } finally {
    await handle.close();
  }
}
