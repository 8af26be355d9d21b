/**
 * WORDS AFTER A LOST ANSWER ARE READ, NOT ASSUMED. A write whose answer never came (timed out,
 * cut short, or a 412 the SDK's own retry met) may have landed: "Nothing was written" would be
 * a guess, and once it was false (the PUT had landed and the answer was held back). So the
 * object is re-read FIRST, and the words say what the re-read shows: this host's exact bytes
 * (the write happened: success), another document, nothing, or a re-read that failed too.
 */
import { BatonError, isBatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { shown } from '../outside-text.js';
import type { Store } from '../store/store.js';

export type Reread =
  | { readonly kind: 'ours'; readonly etag: string }
  | { readonly kind: 'other'; readonly body: Uint8Array }
  | { readonly kind: 'nothing' }
  | { readonly kind: 'failed'; readonly error: unknown };

/** What the store holds now, compared with the bytes this host wrote. Never throws. */
export async function reread(store: Store, body: Uint8Array): Promise<Reread> {
  try {
    const stored = await store.get();
    if (!stored) return { kind: 'nothing' };
    if (Buffer.from(stored.body).equals(Buffer.from(body))) return { kind: 'ours', etag: stored.etag };
    return { kind: 'other', body: stored.body };
  } catch (error) {
    return { kind: 'failed', error };
  }
}

/** A failure after which the store may have applied the write: no answer, or only part of one. */
export function answerLost(error: unknown): boolean {
  return (
    isBatonError(error) &&
    error.code === 'failed' &&
    (error.reason === 'cut-short' || error.reason === 'timed-out')
  );
}

/** The refusal after a lost answer whose re-read did NOT find this host's bytes. */
export function lostAnswerError(
  location: string,
  error: BatonError,
  found: Exclude<Reread, { kind: 'ours' }>,
): BatonError {
  const lost = `The store's answer was lost (${error.reason === 'timed-out' ? 'it did not answer in time' : 'the connection closed before the whole answer arrived'})`;
  switch (found.kind) {
    case 'nothing':
      return new BatonError('failed', {
        what: `${lost}; re-read shows nothing published at ${location}: this host's document did not land.`,
        where: location,
        changed: 'Nothing was written (the re-read found nothing at the store).',
        next: ['Check the network path to the store, then run ', nextStep('sync'), ' again.'],
        reason: error.reason,
        cause: error,
      });
    case 'other':
      return new BatonError('store-changed', {
        what: `${lost}; re-read shows another document there, ${headerWords(found.body)}: this host's document did not land, another controller's did.`,
        where: location,
        changed: "This host's document was not written; the store holds the other one.",
        next: ['Re-read and decide again (', nextStep('status'), ' shows both sides).'],
        reason: 'replaced',
        cause: error,
      });
    case 'failed':
      return new BatonError('failed', {
        what: `${lost}, and re-reading it failed too: whether this host's document landed is not known.`,
        where: location,
        changed: 'Unknown: the write may have reached the store.',
        next: [
          'Once the store answers, run ',
          nextStep('status'),
          ' to see what it holds before anything else.',
        ],
        reason: error.reason,
        cause: error,
      });
  }
}

/** "fingerprint SHA256:… published by H at T", read loosely and shown (it comes from the store). */
function headerWords(body: Uint8Array): string {
  try {
    const value = JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>;
    const field = (name: string) => (typeof value[name] === 'string' ? shown(value[name]) : 'unknown');
    return `fingerprint ${field('fingerprint')}, published by ${field('published_by')} at ${field('published_at')}`;
  } catch {
    return 'which is not a readable document';
  }
}
