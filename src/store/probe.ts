/**
 * `baton store check`'s experiment, one implementation for every store: write a probe object
 * create-only twice and see whether the second is refused. A store that accepts both ignores
 * preconditions, and two controllers publishing at once could overwrite each other.
 */
import { randomBytes } from 'node:crypto';
import { isBatonError } from '../errors.js';
import type { ConditionalWriteCheck } from './store.js';

export interface ProbeTarget {
  /** Where the probe objects live, for the detail sentence. */
  readonly location: string;
  /** Create-only write of `name` (beside the document); 'store-changed' when refused. */
  createOnly(name: string, body: Uint8Array): Promise<void>;
  /** Removes `name`; missing is fine. */
  remove(name: string): Promise<void>;
}

export function probeName(): string {
  return `.baton-probe-${randomBytes(8).toString('hex')}`;
}

export async function probeConditionalWrites(target: ProbeTarget): Promise<ConditionalWriteCheck> {
  const name = probeName();
  const body = new TextEncoder().encode(`baton store check ${new Date().toISOString()}\n`);
  let check: ConditionalWriteCheck;
  try {
    check = await twice(target, name, body);
  } catch (error) {
    await target.remove(name).catch(() => undefined);
    throw error;
  }
  try {
    await target.remove(name);
  } catch {
    // The answer stands; the operator only needs to know a small object was left behind.
    return { ...check, detail: `${check.detail} The probe object ${name} could not be removed; delete it by hand.` };
  }
  return check;
}

async function twice(target: ProbeTarget, name: string, body: Uint8Array): Promise<ConditionalWriteCheck> {
  await target.createOnly(name, body);
  try {
    await target.createOnly(name, body);
  } catch (error) {
    if (isBatonError(error) && error.code === 'store-changed') {
      return {
        enforced: true,
        detail: `The store at ${target.location} refused a second create-only write of the same object: conditional writes are enforced.`,
      };
    }
    throw error;
  }
  return {
    enforced: false,
    detail: `The store at ${target.location} accepted a second create-only write of the same object: it ignores conditional writes, so two controllers publishing at once could overwrite each other.`,
  };
}
