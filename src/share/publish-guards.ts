/**
 * Rules every write of the published document obeys (sealing stated, below, is the third):
 *
 * ONCE SEALED, STAYS SEALED. A host without the seal key never replaces a sealed document
 * with one in the clear — that would put ca.key in the bucket as base64, and the controllers
 * that do have the key would then refuse the document. Only an explicit, confirmed --unseal does.
 *
 * A LOST RESPONSE IS NOT A LOST RACE. When a write's answer may have been lost (the SDK retried
 * and met its own write as a 412), the object is re-read: the exact bytes this host wrote mean
 * the write happened — success, not "the store changed" (./lost-answer.ts, which also words
 * what the re-read shows when they are not there).
 */
import { nextStep } from '../next-step.js';
import { UNSEAL_BINDING } from './confirm-binding.js';
import { BatonError } from '../errors.js';
import type { Store } from '../store/store.js';
import type { PublishedAuthority } from './types.js';

/** The published document is sealed and this host could not open it: it has no (usable) seal key. */
export function publishedSealedWithoutKey(
  published: PublishedAuthority,
  sealKey: Uint8Array | undefined,
): boolean {
  if (sealKey !== undefined) return false;
  if (published.state === 'present') return published.sealed;
  if (published.state === 'unreadable') return published.sealed === true;
  return false;
}

/**
 * SEALING IS STATED, NEVER INFERRED. A host without a seal key writes key material in the
 * clear only when the operator said so (`seal: none`, --no-seal): what the store holds cannot
 * decide it, because anyone who can write the store can corrupt or delete a sealed document
 * and make it look as if this deployment never sealed. Every write of a document checks this:
 * the first publish, --push, --replace-unreadable and a publish after the document was deleted.
 */
export function refuseUnstatedSeal(ctx: {
  readonly sealKey?: Uint8Array;
  readonly noSeal: boolean;
  readonly store: Store;
}): void {
  if (ctx.sealKey !== undefined || ctx.noSeal) return;
  throw new BatonError('refused', {
    what:
      'This host has no seal key and sealing is not stated, so publishing would put ca.key in the store in the clear. ' +
      'The store cannot decide this: anyone who can write it can corrupt or delete a sealed document.',
    where: ctx.store.location,
    changed: 'Nothing was written.',
    next:
      'Either give this host the seal key the other controllers use (seal_key_file in baton.yaml, or --seal-key-file FILE), ' +
      'or state that this deployment publishes in the clear (seal: none in baton.yaml, or --no-seal), then run the command again.',
    reason: 'seal-unstated',
  });
}

/** `retry` is the words of the command that was refused, after `baton`: 'sync --push'. */
export function unsealRefusal(location: string, retry: string): BatonError {
  return new BatonError('refused', {
    what: 'The published document is sealed and this host has no seal key: publishing would replace it with key material in the clear.',
    where: location,
    changed: 'Nothing was written.',
    next: [
      'Set seal_key_file in baton.yaml to the key the other controllers use, then run ',
      nextStep(retry),
      '. To stop sealing on purpose, run ',
      nextStep(`${retry} --unseal --confirm`, { placeholders: [UNSEAL_BINDING.placeholder] }),
      ' (on a terminal it asks for the word typed instead).',
    ],
    reason: 'would-unseal',
  });
}
