/**
 * Why a published document cannot be used, in the terms that decide the way out (issue 14,
 * DESIGN.md §5 "a way out of every refusal"):
 *
 * - 'unusable'          damaged: empty, not JSON, bad base64, a fingerprint that lies, a key
 *                       that does not pair, a seal that does not open with this host's key.
 *                       A whole controller may replace it (`sync --replace-unreadable`).
 * - 'foreign-deployment' a document of ANOTHER deployment: this host is pointed at the wrong
 *                       store. Replacing it would destroy another fleet's authority: never.
 * - 'newer-format'      written by a newer baton: upgrade. Replacing it would downgrade.
 * - 'could-not-read'    the store itself failed: nothing is known about the document.
 */
import { DOCUMENT_FORMAT, type UnreadableProblem } from './types.js';


/** The problem of a document the decoder refused. Never throws. */
export function classifyRefusedDocument(body: Uint8Array, deployment: string): Exclude<UnreadableProblem, 'could-not-read'> {
  const value = looseJson(body);
  if (value === undefined) return 'unusable';
  const format = value.format;
  if (typeof format === 'string' && format !== DOCUMENT_FORMAT && isNewerFormat(format)) return 'newer-format';
  if (typeof value.deployment === 'string' && value.deployment !== '' && value.deployment !== deployment) return 'foreign-deployment';
  return 'unusable';
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
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
