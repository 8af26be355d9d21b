/**
 * The lineage diagnosis (docs/publishing.md) from EVERYTHING both sides hold: this host's current and
 * previous pairs with their claims, and the published current and previous with theirs. A chain
 * of rotations (rotate → retire → rotate with no publish between) is followed link by link, so
 * a host that is ahead by several rotations is not mistaken for a stranger — and two hosts that
 * both rotated from one parent are called siblings, not unrelated.
 */
import type { LocalAuthority, PairSummary } from '../authority/types.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { handoverProof, proofWords } from './handover.js';
import type { Lineage, PublishedAuthority } from './types.js';

type Whole = Extract<LocalAuthority, { state: 'whole' }>;
type Present = Extract<PublishedAuthority, { state: 'present' }>;
/** child → the authorities it is recorded to have replaced. */
type Links = Map<Fingerprint, Set<Fingerprint>>;

function link(links: Links, child: Fingerprint, parent: Fingerprint | null | undefined): void {
  if (!parent || parent === child) return;
  const parents = links.get(child) ?? new Set<Fingerprint>();
  parents.add(parent);
  links.set(child, parents);
}

/**
 * This host's own record: the current certificate's claim, the overlap pair under
 * ca-previous.* (on this host's disk, so its predecessor whether or not an older billet wrote
 * a claim), and that pair's own claim.
 */
function localLinks(local: Whole): Links {
  const links: Links = new Map();
  const pairLinks = (pair: PairSummary) => link(links, pair.fingerprint, pair.replaces);
  pairLinks(local.current);
  if (local.previous) {
    link(links, local.current.fingerprint, local.previous.fingerprint);
    pairLinks(local.previous);
  }
  return links;
}

/** The published side's claims: previous_fingerprint, and each carried certificate's OU claim. */
function publishedLinks(published: Present): Links {
  const links: Links = new Map();
  link(links, published.header.fingerprint, published.header.previousFingerprint);
  if (published.current) link(links, published.current.fingerprint, published.current.replaces);
  if (published.previous) link(links, published.previous.fingerprint, published.previous.replaces);
  return links;
}

/** Every recorded ancestor of `start`, each with its chain (start first), nearest first. */
function ancestors(start: Fingerprint, links: Links): Map<Fingerprint, readonly Fingerprint[]> {
  const found = new Map<Fingerprint, readonly Fingerprint[]>();
  const queue: Array<readonly Fingerprint[]> = [[start]];
  while (queue.length > 0) {
    const chain = queue.shift()!;
    for (const parent of links.get(chain[chain.length - 1]!) ?? []) {
      if (parent === start || found.has(parent)) continue;
      const next = [...chain, parent];
      found.set(parent, next);
      queue.push(next);
    }
  }
  return found;
}

/**
 * Who is behind whom. AHEAD needs a chain this host's own files record (it authorises
 * `sync --push` over the store); LEFT BEHIND is what the published side claims, proved only by
 * the handover signature; a cycle of claims (impossible without a forged one) is unrelated.
 */
export function lineageOf(local: Whole, published: Present): Lineage {
  const mine = local.current.fingerprint;
  const theirs = published.header.fingerprint;
  const mineBack = ancestors(mine, localLinks(local));
  const theirsBack = ancestors(theirs, publishedLinks(published));
  const ahead = mineBack.get(theirs);
  const behind = theirsBack.get(mine);
  if (ahead && behind) return { kind: 'unrelated' };
  if (behind) return { kind: 'left-behind', chain: behind, proof: handoverProof(local, published.header) };
  if (ahead) return { kind: 'ahead', chain: ahead };
  for (const candidate of mineBack.keys()) {
    if (theirsBack.has(candidate)) return { kind: 'siblings', parent: candidate };
  }
  return { kind: 'unrelated' };
}

/** The diagnosis in words: one sentence, then the proof where there is one to give. */
export function lineageWords(lineage: Lineage): string {
  switch (lineage.kind) {
    case 'left-behind': {
      const rotations = lineage.chain.length - 1;
      const by = rotations === 1 ? 'a rotation' : `${rotations} rotations`;
      // Only a signature made with this host's own key says it happened; anyone who can write
      // the store can write a document that CLAIMS to replace this host's authority.
      if (lineage.proof.kind === 'claimed' && lineage.proof.reason === 'billet-signs-none') {
        return `this host was left behind by ${rotations === 1 ? 'a billet rotation' : `${rotations} billet rotations`} (the published certificate's billet-replaces: claim names the authority this host holds). ${proofWords(lineage.proof)} Publishing this host's authority over it would put back the one billet retired, so that is never offered: adopt the published one.`;
      }
      if (lineage.proof.kind === 'proved') {
        return `this host was left behind by ${by} (the published authority replaced the one this host holds, and is newer). ${proofWords(lineage.proof)}`;
      }
      return `the published authority claims to replace this host's (by ${by}) — NOT PROVED: ${proofWords(lineage.proof).replace(/^CLAIMED, NOT PROVED: /, '')} If the claim is true the published one is newer, and publishing over it would roll the fleet back.`;
    }
    case 'ahead': {
      const rotations = lineage.chain.length - 1;
      // The store is behind: billet's control plane refuses to start on a host whose authority
      // differs from its identity store's, so "not published yet" is said with what it stops.
      return `this host is ahead (it rotated away from the published authority${rotations > 1 ? ` by ${rotations} rotations its own certificates record` : ''} and has not published the new one). The store is behind this host: billet will not start here until it is published.`;
    }
    case 'siblings':
      return `this host and the published authority are siblings: both rotated from ${lineage.parent}, so neither is newer; one of the two must be chosen on purpose.`;
    case 'unrelated':
      return 'nothing links the two authorities, so neither is newer (this host may be pointed at the wrong deployment or store).';
  }
}
