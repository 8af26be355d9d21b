/**
 * Credentials are compared by digest and never by content (mesh seed): a secret does not
 * belong in a long-lived variable when a hash answers the same question. The one digest
 * function of the mesh, the journal, the provisioner and its receipts.
 */
import { createHash } from 'node:crypto';

/** `sha256:<64 hex>` of the secret's exact bytes. */
export type SecretDigest = string & { readonly __brand: 'SecretDigest' };

export function secretDigest(secret: Uint8Array | string): SecretDigest {
  return `sha256:${createHash('sha256').update(secret).digest('hex')}` as SecretDigest;
}

/** A short prefix for logs and screens: enough to tell two apart, nothing to brute-force. */
export function digestPrefix(digest: SecretDigest): string {
  return digest.slice(0, 'sha256:'.length + 12);
}

/**
 * Where receipts live beside a provider's delivered files: the provisioner writes there and
 * `baton mesh rotate` reads there, so the name is written once.
 */
export const RECEIPTS_DIR = '.applied';

/**
 * The provisioner's receipt, `<mesh_dir>/provides/<provider>/.applied/<role>` (0600): written
 * after the database accepted a credential; `baton mesh rotate` reads it as "applied".
 */
export interface Receipt {
  readonly role: string;
  readonly digest: SecretDigest;
  /** RFC 3339; diagnostic. */
  readonly applied_at: string;
}

export function parseReceipt(text: string): Receipt | undefined {
  try {
    const value = JSON.parse(text) as Partial<Receipt>;
    if (typeof value.role === 'string' && typeof value.digest === 'string' && /^sha256:[0-9a-f]{64}$/.test(value.digest)) {
      return { role: value.role, digest: value.digest as SecretDigest, applied_at: String(value.applied_at ?? '') };
    }
  } catch {
    // An unreadable receipt is "not applied yet", never an error that stops a rotation.
  }
  return undefined;
}

export function formatReceipt(receipt: Receipt): string {
  return `${JSON.stringify(receipt)}\n`;
}
