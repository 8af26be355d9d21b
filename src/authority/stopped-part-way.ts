/**
 * How an authority operation that writes several files reports an OS failure part-way
 * (ENOSPC, EACCES…): the call and its code, and how to finish — rotate and retire both finish
 * what they left, so the operator is told to run them again rather than to clean up by hand.
 */
import { BatonError } from '../errors.js';
import { isSystemError } from '../fs/system-error.js';
import type { Said } from '../next-step.js';

/** A `.catch` handler: an OS error becomes a 'failed' BatonError; anything else is rethrown as is. */
export function stoppedPartWay(
  operation: string,
  where: string,
  words: { readonly next: string | Said; readonly changed: string },
): (error: unknown) => never {
  return (error) => {
    if (!isSystemError(error)) throw error;
    throw new BatonError('failed', {
      what: `The ${operation} stopped: ${error.syscall} ${error.path ?? ''} failed (${error.code}).`,
      where,
      ...words,
      cause: error,
    });
  };
}
