/**
 * What the store holds for this deployment, as the rules and views need it: 'none' (an
 * ordinary state — a first controller has not published yet), 'present' (header always; the
 * checked pairs when the files could be opened), or 'unreadable' with the BatonError saying
 * why. Reading NEVER throws: a status view must be able to show "the store cannot be read"
 * next to the local authority.
 */
import { asBatonError } from '../errors.js';
import type { AuthorityFiles } from '../authority/types.js';
import type { Store } from '../store/store.js';
import { openDocument, parseDocument, type DecodeOptions } from './document.js';
import { storeChangedError } from '../store/store-changed.js';
import type { DocumentHeader, PublishedAuthority, UnreadableProblem } from './types.js';
import { OversizeError } from '../store/body-limit.js';
import { lookAroundEmptyStore } from './near-miss.js';
import {
  claimedPrevious,
  classifyRefusedDocument,
  editedDeployment,
  editedDeploymentError,
  looksSealed,
} from './unreadable.js';

export type PresentAuthority = Extract<PublishedAuthority, { state: 'present' }> & {
  /** The checked files when they could be opened (what adopt installs), else undefined. */
  readonly files: AuthorityFiles | undefined;
};

/** The bytes this decision read, when they were kept (a read by `readPublished`, not a copy made by spreading). */
export function bodyReadFor(
  published: Extract<PublishedAuthority, { state: 'present' }>,
): Uint8Array | undefined {
  return (published as { body?: Uint8Array }).body;
}

export function sameBytes(a: Uint8Array, b: Uint8Array | undefined): boolean {
  return b !== undefined && Buffer.from(a).equals(Buffer.from(b));
}

export type PublishedRead =
  | Extract<PublishedAuthority, { state: 'none' }>
  | PresentAuthority
  | Extract<PublishedAuthority, { state: 'unreadable' }>;

/**
 * Reads and decodes the published document. Sealed without a key: 'present' with the header
 * (fingerprints comparable), `sealed: true`, `current` undefined. Any refusal of the decoder
 * or failure of the store: 'unreadable'.
 */
export async function readPublished(
  store: Store,
  deployment: string,
  sealKey?: Uint8Array,
): Promise<PublishedRead> {
  const location = store.location;
  let stored;
  try {
    stored = await store.get();
  } catch (error) {
    // Too large to read is still a document that was found and cannot be used: replaceable,
    // if-match on its ETag, from a controller that holds the authority.
    if (error instanceof OversizeError) {
      return {
        state: 'unreadable',
        location,
        problem: 'unusable',
        error,
        ...(error.etag ? { etag: error.etag } : {}),
      };
    }
    return {
      state: 'unreadable',
      location,
      problem: 'could-not-read',
      error: asBatonError(error, { what: 'The store could not be read', where: location, reason: 'other' }),
    };
  }
  if (!stored) {
    // Nothing here: look around before anyone reads this as a fresh deployment (near-miss.ts).
    const around = await lookAroundEmptyStore(store, deployment);
    return {
      state: 'none',
      location,
      ...(around.neighbours.length > 0 ? { neighbours: around.neighbours } : {}),
      ...(around.nearMiss ? { nearMiss: around.nearMiss } : {}),
    };
  }
  const options: DecodeOptions = { deployment, where: location, sealKey };
  let header: DocumentHeader | undefined;
  try {
    const parsed = parseDocument(stored.body, options);
    header = parsed.header;
    const canOpen = !parsed.sealed || sealKey !== undefined;
    const opened = canOpen ? await openDocument(parsed, options) : undefined;
    const present = {
      state: 'present' as const,
      location,
      etag: stored.etag,
      // The opened header when there is one: billet's document records its previous authority
      // only in the files, so its previous_fingerprint is known once they are opened.
      header: opened?.header ?? parsed.header,
      sealed: parsed.sealed !== undefined,
      current: opened?.current,
      previous: opened?.previous,
    };
    // NOT ENUMERABLE: the files carry the authority's private key, and a read is shown, logged
    // and serialised (status --json, test snapshots) — none of which may ever print a key. A
    // copy made by spreading loses them, and openPublished then re-reads, checking the ETag.
    Object.defineProperty(present, 'files', { value: opened?.files, enumerable: false });
    // The bytes read, for the same reason not enumerable (unsealed, they hold the key): a store
    // that gives the same bytes another ETag is told apart from one that changed by them.
    Object.defineProperty(present, 'body', { value: stored.body, enumerable: false });
    return present as PresentAuthority;
  } catch (error) {
    const decoded = asBatonError(error, {
      what: 'The published document could not be decoded',
      where: location,
    });
    // A decoder failure that is not a refusal (an I/O error inside it) says nothing about the
    // document: it is "could not read", never something to replace. A header valid for this
    // deployment whose seal does not open with this host's key is "sealed with another key":
    // this host's key is what differs, and its replacement would lock the fleet out.
    const problem: UnreadableProblem =
      decoded.code !== 'refused'
        ? 'could-not-read'
        : decoded.reason === 'sealed-with-another-key' && header !== undefined
          ? 'other-seal-key'
          : classifyRefusedDocument(stored.body, deployment);
    const said =
      decoded.code === 'refused' && problem === 'unusable' && editedDeployment(stored.body, deployment)
        ? editedDeploymentError(location, deployment)
        : decoded;
    const claims = claimedPrevious(stored.body);
    return {
      state: 'unreadable',
      location,
      error: said,
      problem,
      etag: stored.etag,
      sealed: looksSealed(stored.body),
      ...(claims ? { claimedPrevious: claims } : {}),
      ...(sealKey ? { sealKeyHere: true as const } : {}),
      ...(problem === 'other-seal-key' && header ? { header } : {}),
    };
  }
}

/**
 * The checked files of a 'present' read, for adopt and force. When the read could not open
 * them (sealed, no key), the refusal says so; when handed a plain PublishedAuthority without
 * files, the store is re-read and must still hold the SAME document (ETag), or it is
 * 'store-changed' — a decision is never carried out on a document other than the one decided on.
 */
export async function openPublished(
  store: Store,
  deployment: string,
  sealKey: Uint8Array | undefined,
  published: Extract<PublishedAuthority, { state: 'present' }>,
): Promise<AuthorityFiles> {
  const cached = (published as Partial<PresentAuthority>).files;
  if (cached) return cached;
  const stored = await store.get();
  // A new ETag on the very bytes decided on is not a change (a store or proxy that rewrites
  // ETags): only different bytes, or none, are.
  if (!stored || (stored.etag !== published.etag && !sameBytes(stored.body, bodyReadFor(published)))) {
    throw storeChangedError(store.location, stored ? 'replaced' : 'removed');
  }
  const options: DecodeOptions = { deployment, where: store.location, sealKey };
  const opened = await openDocument(parseDocument(stored.body, options), options);
  return opened.files;
}
