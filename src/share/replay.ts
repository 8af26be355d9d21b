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
import type { Store } from '../store/store.js';
import type { PublishedAuthority } from './types.js';

interface LooseHeader {
  readonly fingerprint: string;
  readonly previous: string | undefined;
  readonly publishedAt: number;
  readonly publishedBy: string;
}

/** Throws 'replayed' (exit 3) when the store's history holds a later rotation of `published`. Never for a store without versions. */
export async function refuseReplay(
  store: Store,
  published: Extract<PublishedAuthority, { state: 'present' }>,
): Promise<void> {
  if (!store.documentVersions) return;
  const listed = await store.documentVersions().catch(() => undefined);
  if (!listed?.listed) return;
  const adopted = published.header.fingerprint;
  const adoptedAt = Date.parse(published.header.publishedAt.raw);
  for (const version of listed.versions) {
    const header = version.body ? looseHeader(version.body) : undefined;
    if (!header || header.previous !== adopted || header.fingerprint === adopted) continue;
    // Not provably older than the rotation: a re-publish on purpose is later; a replay is not.
    if (Number.isFinite(adoptedAt) && Number.isFinite(header.publishedAt) && adoptedAt > header.publishedAt)
      continue;
    throw new BatonError('refused', {
      what: `The published authority ${adopted} (published_at ${published.header.publishedAt.shown()}) looks replayed: the store's history holds ${shown(header.fingerprint)}, a later rotation of it (its previous_fingerprint is ${adopted}), published by ${shown(header.publishedBy)} at ${new Date(header.publishedAt).toISOString()}. Adopting ${adopted} would install an authority the fleet rotated away from.`,
      where: `${store.location} (version ${shown(version.versionId)} holds the rotation)`,
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
      publishedBy: typeof value.published_by === 'string' ? value.published_by : 'unknown',
    };
  } catch {
    return undefined;
  }
}
