/**
 * The one wording of a failed precondition, shared by every store: it is its own error
 * ('store-changed', exit 6) so a caller re-reads and decides again instead of retrying a
 * write that would overwrite what another controller just published.
 */
import { BatonError } from '../errors.js';

export function storeChangedError(location: string, why: string, cause?: unknown): BatonError {
  return new BatonError('store-changed', {
    what: `The store changed since it was read (${why}).`,
    where: location,
    next: 'Re-read the published authority and decide again.',
    changed: 'Nothing was overwritten.',
    ...(cause === undefined ? {} : { cause }),
  });
}
