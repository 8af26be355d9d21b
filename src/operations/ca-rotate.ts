/**
 * `baton ca rotate` as ONE operation: the local rotation (it takes ca.lock itself), then WHAT THE
 * OTHER SIDE NEEDS, read from the store and never written: billet's control plane refuses to
 * start while its identity store publishes another authority than the one on disk, and the other
 * controller keeps adopting the old one. The rotation here is done and stands whatever the store
 * says; a store that cannot be read is said, not fatal. baton does not publish by itself: the
 * push is the operator's (`sync --push`). The command says the result.
 */
import { rotateAuthority, type RotateResult } from '../authority/index.js';
import { BatonError } from '../errors.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { look } from '../share/actions.js';
import type { ShareContext } from '../share/share-context.js';
import type { Verdict } from '../share/types.js';

/** What the store says after the rotation, for the command's one line about it. */
export type StoreAfterRotate =
  /** The store could not be opened or read: the push waits until it answers. */
  | { readonly kind: 'unasked'; readonly what: string }
  /** It still publishes the authority this host rotated from: the push is what it needs. */
  | { readonly kind: 'behind'; readonly location: string; readonly published: Fingerprint }
  | { readonly kind: 'nothing-published'; readonly location: string }
  /** Anything else: said with its verdict, to be looked at before publishing. */
  | { readonly kind: 'other'; readonly location: string; readonly verdict: Verdict };

export async function caRotateOperation(options: {
  readonly stateDir: string;
  readonly deployment: string;
  /** Opens the store, when one is configured (after the rotation: a store that fails cannot stop it). */
  readonly openShare?: () => Promise<ShareContext>;
  /** Called once the local rotation is done, before the store is asked (the command says it first). */
  readonly rotated?: (result: RotateResult) => void;
}): Promise<{ readonly rotated: RotateResult; readonly store?: StoreAfterRotate }> {
  const rotated = await rotateAuthority(options.stateDir, options.deployment);
  options.rotated?.(rotated);
  if (!options.openShare) return { rotated };
  return { rotated, store: await storeAfterRotate(options.openShare) };
}

async function storeAfterRotate(openShare: () => Promise<ShareContext>): Promise<StoreAfterRotate> {
  let seen;
  try {
    seen = await look(await openShare());
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    return { kind: 'unasked', what: error.what };
  }
  const { published, verdict } = seen;
  const location = published.location;
  if (verdict.kind === 'refuse' && verdict.lineage.kind === 'ahead')
    return { kind: 'behind', location, published: verdict.published };
  if (verdict.kind === 'publish') return { kind: 'nothing-published', location };
  return { kind: 'other', location, verdict };
}
