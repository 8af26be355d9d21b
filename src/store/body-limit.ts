/**
 * A published document is a few kilobytes. Anything over 1 MiB is refused BEFORE it is
 * buffered, naming its size: a store (or an attacker with write access to it) must not be
 * able to make a status view allocate 100 MB.
 */
import { replaceElsewhere } from '../next-step.js';
import { BatonError } from '../errors.js';

export const MAX_DOCUMENT_BYTES = 1024 * 1024;

/** An oversize document, with the ETag of the object when the store gave one: the way out replaces it if-match on that. */
export class OversizeError extends BatonError {
  readonly etag: string | undefined;
  constructor(location: string, size: number | undefined, etag: string | undefined) {
    const said = size === undefined ? 'more than 1 MiB' : `${size} bytes`;
    super('refused', {
      what: `The published document is ${said}; a baton document is never over 1 MiB (${MAX_DOCUMENT_BYTES} bytes).`,
      where: location,
      next: [
        'Check what wrote this object; a controller that holds the authority replaces it with ',
        replaceElsewhere(),
        '.',
      ],
      changed: 'Nothing was read into memory or installed.',
      reason: 'oversize',
    });
    this.etag = etag;
  }
}

export function oversizeError(location: string, size: number | undefined, etag?: string): OversizeError {
  return new OversizeError(location, size, etag);
}
