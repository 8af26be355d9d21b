/**
 * A published document is a few kilobytes. Anything over 1 MiB is refused BEFORE it is
 * buffered, naming its size: a store (or an attacker with write access to it) must not be
 * able to make a status view allocate 100 MB.
 */
import { BatonError } from '../errors.js';

export const MAX_DOCUMENT_BYTES = 1024 * 1024;

export function oversizeError(location: string, size: number | undefined): BatonError {
  const said = size === undefined ? 'more than 1 MiB' : `${size} bytes`;
  return new BatonError('refused', {
    what: `The published document is ${said}; a baton document is never over 1 MiB (${MAX_DOCUMENT_BYTES} bytes).`,
    where: location,
    next: 'Check what wrote this object; publish again from a controller that holds the authority.',
    changed: 'Nothing was read into memory or installed.',
    reason: 'oversize',
  });
}
