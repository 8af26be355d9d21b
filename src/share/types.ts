/**
 * The contract between the store/document layer and the rules, flows and views (docs/publishing.md).
 */
import type { BatonError } from '../errors.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import type { OutsideText } from '../outside-text.js';
import type { LocalAuthority, PairSummary } from '../authority/types.js';
import type { NextStep, Said } from '../next-step.js';

export const DOCUMENT_FORMAT = 'baton.authority/1';

/** The header fields: readable without the seal key, and the AEAD's associated data. */
export interface DocumentHeader {
  readonly format: typeof DOCUMENT_FORMAT;
  readonly deployment: string;
  readonly fingerprint: Fingerprint;
  readonly previousFingerprint: Fingerprint | null;
  /**
   * Diagnostic only: never used in a decision. Written by whoever can write the store, so
   * OUTSIDE TEXT: drawn only through `shown` (its toString), serialized raw (toJSON).
   */
  readonly publishedAt: OutsideText;
  readonly publishedBy: OutsideText;
  /**
   * The handover signature (`handover_signature`): the PREVIOUS key's signature over
   * (deployment, fingerprint, previous_fingerprint, published_at). Present only on a rotation
   * published by a host that held the previous key; part of the AEAD's associated data.
   */
  readonly handover?: Uint8Array;
  /**
   * 'billet' when the document was billet's wire form (no `format`; src/share/document.ts):
   * billet signs no handover, so a rotation it published is a claim no host can prove.
   */
  readonly wire?: 'billet';
}

/** Why an empty store is not "nothing published" (src/share/near-miss.ts). */
export interface NearMiss {
  /** Locations of documents of THIS deployment at neighbouring prefixes (a mistyped --store). */
  readonly neighbours: readonly string[];
  /** How many earlier versions of this key a versioned store keeps (the document was deleted). */
  readonly earlierVersions: number;
}

export type PublishedAuthority =
  /** The store holds nothing for this deployment — an ordinary state, not a fault. */
  | {
      readonly state: 'none';
      readonly location: string;
      /**
       * Documents found at neighbouring prefixes (a mistyped store), with the deployment each
       * names; read only by status and failover, shown and never trusted.
       */
      readonly neighbours?: readonly { readonly location: string; readonly deployment: string | undefined }[];
      /**
       * Evidence that "nothing" here is a near miss, not a fresh deployment (./near-miss.ts): a
       * document of THIS deployment at a neighbouring prefix, or earlier versions of this very
       * key (a delete marker over them). Minting on it would give the fleet a second authority.
       */
      readonly nearMiss?: NearMiss;
    }
  | {
      readonly state: 'present';
      readonly location: string;
      /** The ETag read for this decision; a replace is conditional on it. */
      readonly etag: string;
      readonly header: DocumentHeader;
      readonly sealed: boolean;
      /** From the carried ca.crt when the files could be opened (unsealed, or key given). */
      readonly current: PairSummary | undefined;
      readonly previous: PairSummary | undefined;
    }
  /** Unreadable, refused (closed set, bad base64, wrong deployment…) or unreachable. */
  | {
      readonly state: 'unreadable';
      readonly location: string;
      readonly error: BatonError;
      /** Why, in the terms that decide the way out; undefined reads as 'could-not-read'. */
      readonly problem?: UnreadableProblem;
      /** The ETag of the bad object when it was read: `sync --replace-unreadable` writes if-match on it. */
      readonly etag?: string;
      /** The bad object carries sealed files: replacing it in the clear needs the seal key or --unseal. */
      readonly sealed?: boolean;
      /**
       * What the bad object claims to have replaced — its previous_fingerprint, its ca-previous.crt's
       * fingerprint, its ca.crt's billet-replaces: claim — when it names any: claims, never checked.
       */
      readonly claimedPrevious?: readonly string[];
      /** This host has a seal key: a replacement would be sealed, so `--unseal` never applies here. */
      readonly sealKeyHere?: true;
      /**
       * The header, when the document parsed as a valid one of this deployment but its files
       * could not be opened ('other-seal-key'): shown (through src/outside-text.ts), never trusted.
       */
      readonly header?: DocumentHeader;
    };

/**
 * Whether "left behind" is a proof: the handover signature verified with this host's own
 * current authority key, or a claim and why it is not more than that.
 */
export type HandoverProof =
  | { readonly kind: 'proved' }
  | {
      readonly kind: 'claimed';
      readonly reason: 'no-signature' | 'bad-signature' | 'other-key' | 'billet-signs-none';
      /** The key that signed (the published previous_fingerprint), when there is a signature. */
      readonly signer?: Fingerprint;
    };

/**
 * Who is behind whom, from everything both sides hold (src/share/lineage.ts). A chain runs from
 * the newer authority back to the older, each link a predecessor one side recorded.
 */
export type Lineage =
  /** Local descends from the published one by a chain this host's own files record: the store is behind. */
  | { readonly kind: 'ahead'; readonly chain: readonly Fingerprint[] }
  /** The published one descends from local, by the published side's claims. */
  | { readonly kind: 'left-behind'; readonly chain: readonly Fingerprint[]; readonly proof: HandoverProof }
  /** Both rotated from the same parent: one of the two must be forced on purpose. */
  | { readonly kind: 'siblings'; readonly parent: Fingerprint }
  /** Nothing links them: possibly the wrong deployment or store. */
  | { readonly kind: 'unrelated' };

/** docs/publishing.md decision table, as data. */
export type Verdict =
  | { readonly kind: 'first-controller' }
  | { readonly kind: 'adopt'; readonly published: Fingerprint; readonly lostMarker: boolean }
  | { readonly kind: 'publish'; readonly local: Fingerprint }
  | {
      readonly kind: 'in-sync';
      readonly fingerprint: Fingerprint;
      /** A rotation overlap is open here: the previous authority, still trusted until `ca retire`. */
      readonly previous?: Fingerprint;
      /**
       * This host holds no previous pair but the published document still carries one (this
       * host retired it and the store did not follow): `ca retire` re-publishes without it.
       */
      readonly storeCarriesRetired?: Fingerprint;
    }
  | {
      readonly kind: 'refuse';
      readonly local: Fingerprint;
      readonly published: Fingerprint;
      readonly lineage: Lineage;
      /** The ca/ directory a force would set aside. */
      readonly caDir: string;
      /** The published document is sealed and this host has no seal key: force cannot open it, push would unseal. */
      readonly sealedWithoutKey?: true;
    }
  | {
      readonly kind: 'blocked';
      readonly why: string;
      readonly next: string;
      /** The command of the way out, when there is one (rendered after `next`). */
      readonly step?: NextStep;
      /** `next` as structure, when the error it came from said it so (rendered instead of `next`). */
      readonly said?: Said;
      /** Set when the published document is what blocks; 'unusable' is what --replace-unreadable replaces. */
      readonly unreadable?: UnreadableProblem;
      /** Set when the published authority is sealed and this host, holding none, has no key to adopt it. */
      readonly sealedWithoutKey?: true;
      /** Set when nothing is published here but the store URL is probably wrong: never mint (near-miss.ts). */
      readonly nearMiss?: true;
    };

/**
 * What an operator can ask for; only those `allowedActions(verdict)` lists are offered.
 * 'push-over' keeps THIS host's authority over a published one it is not proved ahead of
 * (`sync --push --confirm <PUBLISHED 8>`); 'publish' is the plain push of a host that is.
 */
export type Action = 'first-controller' | 'adopt' | 'publish' | 'push-over' | 'force' | 'leave';

/** The three outcomes of adopt (seed: "three answers and not two"), plus the other actions'. */
export type Outcome =
  | { readonly kind: 'nothing-published' }
  | { readonly kind: 'installed'; readonly fingerprint: Fingerprint }
  | { readonly kind: 'already-held'; readonly fingerprint: Fingerprint }
  | { readonly kind: 'published'; readonly fingerprint: Fingerprint; readonly etag: string }
  | { readonly kind: 'first-controller'; readonly fingerprint: Fingerprint; readonly wonRace: boolean }
  | {
      readonly kind: 'forced';
      readonly fingerprint: Fingerprint;
      readonly supersededDir: string;
      /**
       * Set when this run FINISHED a force cut short (run again as typed): 'installed' when it
       * wrote what was missing, 'already-held' when the cut came after the last file.
       */
      readonly finished?: 'installed' | 'already-held';
    }
  | { readonly kind: 'left'; readonly why: string };

export type { LocalAuthority };

/** Why a published document cannot be used; each has its own way out (see unreadable.ts). */
export type UnreadableProblem =
  'unusable' | 'other-seal-key' | 'foreign-deployment' | 'newer-format' | 'could-not-read';

/** Both sides as read, and the verdict of the table on them. */
export interface Look {
  readonly local: LocalAuthority;
  readonly published: PublishedAuthority;
  readonly verdict: Verdict;
}
