/**
 * A REPLAYED OLDER VERSION IS NOT THE FLEET'S AUTHORITY. Anyone who can write the store can put
 * an old document back (its bytes, sealed or not, are still valid): a fresh host adopting it
 * would install an authority the fleet rotated away from — a key retired because it leaked,
 * back in service. Where the store keeps versions, adopting first checks that no version is a
 * LATER rotation of the one being adopted: a version whose previous_fingerprint names it and
 * whose published_at is later. The replayed bytes carry their original published_at (sealed,
 * it is the cipher's associated data), so a replay is caught; publishing an authority again on
 * purpose writes a fresh published_at, so it is not. Read loosely, used only to REFUSE.
 */
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { shown } from '../outside-text.js';
import { storeChangedError } from '../store/store-changed.js';
import type { Store } from '../store/store.js';
import type { PublishedAuthority } from './types.js';

interface LooseHeader {
  readonly fingerprint: string;
  readonly previous: string | undefined;
  readonly publishedAt: number;
  readonly publishedAtRaw: string | undefined;
  readonly publishedBy: string;
}

/**
 * Throws 'replayed' (exit 3) only when the store's version history PROVES a replay, and
 * 'store-changed' (exit 6) when the history shows the document on top is no longer the one
 * read for this decision. Never for a store without versions.
 *
 * PROOF, NOT SUSPICION: a later rotation somewhere in the history is not enough — a
 * controller that published its rotation while this one was deciding leaves exactly that
 * (once read as an attack in 2 of 7 races, on an unversioned bucket). A replay is proved only
 * when the version on top (written last) is the document being adopted AND an OLDER version
 * (written before it) holds a later rotation of it: an older-stamped document was written after
 * a newer one.
 */
export async function refuseReplay(
  store: Store,
  published: Extract<PublishedAuthority, { state: 'present' }>,
): Promise<void> {
  if (!store.documentVersions) return;
  const listed = await store.documentVersions().catch(() => undefined);
  if (!listed?.listed) return;
  const adopted = published.header.fingerprint;
  const adoptedAtRaw = published.header.publishedAt.raw;
  const adoptedAt = Date.parse(adoptedAtRaw);
  const top = listed.versions.find((v) => v.isLatest);
  const topHeader = top?.body ? looseHeader(top.body) : undefined;
  // The store's current version is not what this decision read: another controller wrote
  // since. Re-read and decide again, never "replayed".
  if (top && topHeader && (topHeader.fingerprint !== adopted || topHeader.publishedAtRaw !== adoptedAtRaw))
    throw storeChangedError(store.location, 'replaced');
  if (!top) throw storeChangedError(store.location, 'removed');
  if (!topHeader) return;
  for (const version of listed.versions) {
    if (version === top || version.versionId === top.versionId) continue;
    const header = version.body ? looseHeader(version.body) : undefined;
    if (!header || header.previous !== adopted || header.fingerprint === adopted) continue;
    // Proved only when the rotation is stamped strictly later than the document on top.
    if (!(
      Number.isFinite(adoptedAt) &&
      Number.isFinite(header.publishedAt) &&
      header.publishedAt > adoptedAt
    ))
      continue;
    throw new BatonError('refused', {
      what: `The published authority ${adopted} (published_at ${published.header.publishedAt.shown()}) is replayed: the store's history holds ${shown(header.fingerprint)}, a later rotation of it (its previous_fingerprint is ${adopted}), published by ${shown(header.publishedBy)} at ${new Date(header.publishedAt).toISOString()}, and the older document was written over it afterwards. Adopting ${adopted} would install an authority the fleet rotated away from.`,
      where: `${store.location} (version ${shown(version.versionId)} holds the rotation; version ${shown(top.versionId)}, the latest, put the older one back)`,
      changed: 'Nothing was installed.',
      next: [
        'Find out who wrote the latest version. On the controller that holds the current authority, publish it again (',
        nextStep('sync --push', { host: 'that controller' }),
        '), then run this again.',
      ],
      reason: 'replayed',
    });
  }
}

function looseHeader(body: Uint8Array): LooseHeader | undefined {
  try {
    const value = JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>;
    if (typeof value.fingerprint !== 'string') return undefined;
    return {
      fingerprint: value.fingerprint,
      previous: typeof value.previous_fingerprint === 'string' ? value.previous_fingerprint : undefined,
      publishedAt: typeof value.published_at === 'string' ? Date.parse(value.published_at) : NaN,
      publishedAtRaw: typeof value.published_at === 'string' ? value.published_at : undefined,
      publishedBy: typeof value.published_by === 'string' ? value.published_by : 'unknown',
    };
  } catch {
    return undefined;
  }
}
