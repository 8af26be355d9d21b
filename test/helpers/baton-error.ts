import { expect } from 'vitest';
import { BatonError } from '../../src/errors.js';

/** The BatonError `promise` rejects with; fails the test when it resolves or rejects with anything else. */
export async function batonErrorOf(promise: Promise<unknown>): Promise<BatonError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(BatonError);
    return error as BatonError;
  }
  throw new Error('expected a BatonError, but the promise resolved');
}
