/**
 * An ETag that is a digest of the content (quoted sha256 hex), for the stores that make their
 * own: the same bytes always get the same tag, so an if-match can never pass against content
 * other than what the caller read.
 */
import { sha256Hex } from '../sha256.js';

/** Up to this size the digest is computed in JavaScript: a status reads its document without loading node:crypto. */
const IN_JAVASCRIPT_MAX = 256 * 1024;

export function contentEtag(body: Uint8Array): string {
  const hex =
    body.length <= IN_JAVASCRIPT_MAX
      ? sha256Hex(body)
      : process.getBuiltinModule('node:crypto').createHash('sha256').update(body).digest('hex');
  return `"${hex}"`;
}
