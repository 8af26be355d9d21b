/**
 * An ETag that is a digest of the content (quoted sha256 hex), for the stores that make their
 * own: the same bytes always get the same tag, so an if-match can never pass against content
 * other than what the caller read.
 */
import { createHash } from 'node:crypto';

export function contentEtag(body: Uint8Array): string {
  return `"${createHash('sha256').update(body).digest('hex')}"`;
}
