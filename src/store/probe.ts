/**
 * `baton store check`'s experiment, one implementation for every store. It probes BOTH
 * preconditions baton publishes with, because a store (or a proxy in front of it) can honour
 * one and drop the other — and either gap lets two controllers overwrite each other:
 *
 *   create-only           v1 with If-None-Match: *, then again: the second must be refused;
 *   replace-if-unchanged  v2 with If-Match: <v1's ETag> must be accepted, then v3 with the
 *                         now-stale v1 ETag must be refused.
 *
 * Everything it wrote is removed afterwards — every version of it on a versioned bucket.
 */
import { isBatonError } from '../errors.js';
import { randomHex } from '../fs/durable-write.js';
import type { ConditionalWriteCheck, Precondition, ProbeName } from './store.js';

export interface ProbeTarget {
  /** Where the probe objects live, for the detail sentence. */
  readonly location: string;
  /** A conditional write of `name` (beside the document); 'store-changed' when refused. */
  write(name: string, body: Uint8Array, precondition: Precondition): Promise<{ readonly etag: string }>;
  /** Removes `name` — every version of it where the store keeps versions; missing is fine. */
  remove(name: string): Promise<void>;
  /** The ETag a read of `name` answers with (undefined: nothing there). Absent: a store whose ETag is its content's digest. */
  readEtag?(name: string): Promise<string | undefined>;
}

export function probeName(): string {
  return `.baton-probe-${randomHex(8)}`;
}

export async function probeConditionalWrites(target: ProbeTarget): Promise<ConditionalWriteCheck> {
  const name = probeName();
  let check: ConditionalWriteCheck;
  try {
    check = await probe(target, name);
  } catch (error) {
    await target.remove(name).catch(() => undefined);
    throw error;
  }
  try {
    await target.remove(name);
  } catch {
    // The answer stands; the operator only needs to know a small object was left behind.
    return {
      ...check,
      detail: `${check.detail} The probe object ${name} could not be removed; delete it (and its versions) by hand.`,
    };
  }
  return check;
}

async function probe(target: ProbeTarget, name: string): Promise<ConditionalWriteCheck> {
  // Three different bodies: S3's ETag is a digest of the content, so a "stale" ETag of
  // identical bytes would still match and prove nothing.
  const body = (n: number) =>
    new TextEncoder().encode(`baton store check ${n} ${new Date().toISOString()} ${randomHex(4)}\n`);
  // The duplicate create-only write repeats v1's exact bytes: when a store wrongly accepts it,
  // the object's ETag is still v1's, so the If-Match probes below test If-Match alone and a
  // store that drops only If-None-Match is not blamed for If-Match too.
  const v1 = body(1);
  const { etag: first } = await target.write(name, v1, { kind: 'create-only' });
  // THE SAME BYTES, THE SAME ETAG: a publish replaces if-match on the ETag it READ. A store (or a
  // proxy) that gives the same bytes another ETag on each answer refuses every such replace
  // though nothing changed; it is named here rather than met as "the store changed" later.
  const etagsSeen = target.readEtag
    ? [first, await target.readEtag(name), await target.readEtag(name)].filter(
        (e): e is string => e !== undefined,
      )
    : [];
  const etagUnstable = new Set(etagsSeen).size > 1;
  const unstableWords = etagUnstable
    ? ` But it gave the same bytes ${new Set(etagsSeen).size} different ETags (on the write and two reads of one unchanged object): every publish that replaces the document (If-Match on the ETag read) will be refused though nothing changed. Check for a proxy or gateway that rewrites ETags.`
    : '';
  const createOnly = await refused(target.write(name, v1, { kind: 'create-only' }));
  const failed: ProbeName[] = [];
  const why: string[] = [];
  if (!createOnly) {
    failed.push('create-only');
    why.push('a second create-only write (If-None-Match: *) of the same object was accepted');
  }
  // After an accepted duplicate create-only write the object is v1 again (same bytes), so
  // its ETag still names the current content and the If-Match probe below stays meaningful.
  const matchEtag = first;
  const rightAccepted = !(await refused(target.write(name, body(2), { kind: 'if-match', etag: matchEtag })));
  const staleRefused = await refused(target.write(name, body(3), { kind: 'if-match', etag: matchEtag }));
  if (!rightAccepted) {
    failed.push('replace-if-unchanged');
    why.push(
      'a replace with the current ETag (If-Match) was refused, so no publish could ever replace the document',
    );
  } else if (!staleRefused) {
    failed.push('replace-if-unchanged');
    why.push('a replace with a stale ETag (If-Match) was accepted');
  }
  if (failed.length === 0) {
    return {
      enforced: true,
      failed,
      ...(etagUnstable ? { etagUnstable } : {}),
      detail: `The store at ${target.location} refused a second create-only write and a replace with a stale ETag, and accepted a replace with the current ETag: conditional writes are enforced.${unstableWords}`,
    };
  }
  return {
    enforced: false,
    failed,
    ...(etagUnstable ? { etagUnstable } : {}),
    detail: `The store at ${target.location} failed the ${failed.join(' and ')} probe: ${why.join('; ')}. Two controllers publishing at once could overwrite each other.${unstableWords}`,
  };
}

/** True when the write was refused as a failed precondition; any other failure propagates. */
async function refused(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return false;
  } catch (error) {
    if (isBatonError(error) && error.code === 'store-changed') return true;
    throw error;
  }
}
