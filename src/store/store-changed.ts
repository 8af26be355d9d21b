/**
 * The one wording of a failed precondition, shared by every store: it is its own error
 * ('store-changed', exit 6) so a caller re-reads and decides again instead of retrying a
 * write that would overwrite what another controller just published. The reason travels as a
 * field, so a caller that re-words the refusal never parses this sentence back.
 */
import { BatonError, type ErrorReason, type StoreChangedReason } from '../errors.js';

/** Each reason in the words an operator reads. */
export const STORE_CHANGED_WORDS: Record<StoreChangedReason, string> = {
  'published-meanwhile': 'something was published after it was read as empty',
  replaced: 'the published document is not the one that was read',
  removed: 'the document that was read has been removed',
  'write-in-progress': 'another write to the same object was in progress',
};

export function storeChangedError(location: string, reason: StoreChangedReason, cause?: unknown): BatonError {
  return new BatonError('store-changed', {
    what: `The store changed since it was read (${STORE_CHANGED_WORDS[reason]}).`,
    where: location,
    next: 'Re-read the published authority and decide again.',
    changed: 'Nothing was overwritten.',
    reason,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** True for the reasons of a failed precondition (each has its words above). */
export function isStoreChangedReason(reason: ErrorReason | undefined): reason is StoreChangedReason {
  return reason !== undefined && Object.hasOwn(STORE_CHANGED_WORDS, reason);
}
