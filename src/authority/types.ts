/**
 * The contract between the authority on disk (src/authority) and everything that reads it
 * (the rules in src/share, the flows in src/app, the views). docs/authority-on-disk.md.
 */
import type { BatonError } from '../errors.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';

/** The closed set of files an authority consists of; also the document's allowlist (§5). */
export const AUTHORITY_FILES = [
  'ca.crt',
  'ca.key',
  'ca-previous.crt',
  'ca-previous.key',
  'authority-created',
] as const;
export type AuthorityFileName = (typeof AUTHORITY_FILES)[number];

/** Bytes of an authority's files, by allowlisted name. `authority-created` is the marker. */
export type AuthorityFiles = Partial<Record<AuthorityFileName, Uint8Array>>;

/** What a reader knows of one key+certificate pair that checked out. */
export interface PairSummary {
  readonly fingerprint: Fingerprint;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** The `billet-replaces:<fingerprint>` claim in the certificate's OU (legacy `baton-replaces:` read too), if well-formed. */
  readonly replaces: Fingerprint | undefined;
  /** The claim's text as written, well-formed or not (undefined: the certificate names no predecessor). */
  readonly claim?: string | undefined;
  /** The DER SubjectPublicKeyInfo: what verifies a handover signature made with this pair's key. */
  readonly publicKey?: Uint8Array | undefined;
  readonly serialHex: string;
  /** Set only when the key is PKCS#8 (`PRIVATE KEY`), which billet cannot parse (pki/inspect-pair.ts). */
  readonly keyFormat?: 'pkcs8';
}

/** Why a local authority cannot be used as it is. Every one of these blocks every action. */
export type LocalProblem =
  /** One of key/cert present (current or previous pair). Never repaired by minting. */
  | 'half-initialised'
  /** Key and certificate do not pair (and the torn-read repair did not apply). */
  | 'mismatched'
  /** Not self-signed, or not a CA (basicConstraints cA, keyCertSign). */
  | 'not-ca'
  /** The certificate's Organization is not this deployment id. */
  | 'foreign'
  /** A key file that is a symlink, not regular, readable by group/other, or over 1 MiB. */
  | 'unsafe-key'
  /** Could not be read (permissions, I/O). Never counts as "absent". */
  | 'unreadable'
  /** The unlocked snapshot reader saw two different reads three times. */
  | 'changing';

export type LocalAuthority =
  /** No key, no cert, no marker: a host that never held this deployment's authority. */
  | { readonly state: 'fresh'; readonly stateDir: string; readonly unexpected: readonly string[] }
  /** Marker present, no key, no cert. NEVER MINTED OVER: adopt or restore. */
  | { readonly state: 'lost'; readonly stateDir: string; readonly unexpected: readonly string[] }
  | {
      readonly state: 'whole';
      readonly stateDir: string;
      readonly current: PairSummary;
      /** Present during a rotation overlap. */
      readonly previous: PairSummary | undefined;
      /** The marker was missing; the next locked operation backfills it. */
      readonly markerMissing: boolean;
      /** The "new key beside old cert" tear was read and paired with ca-previous.key. */
      readonly repairedTear: boolean;
      /**
       * An interrupted operation's footprint was read (files of a rotation that had not
       * finished, or the certificate a retire had not yet removed). The current pair is whole
       * and is the one in use; `baton ca rotate` / `baton ca retire` finishes the operation,
       * and nothing is published until it has.
       */
      readonly pending?: 'rotate' | 'retire' | undefined;
      /**
       * With pending 'retire': the one file of the previous pair an interrupted retire left, and
       * its fingerprint (proved to be the predecessor the current certificate names). A key left
       * is still a key: finishing deletes it, bound to this fingerprint like any retire.
       */
      /** Exactly one file of the previous pair is present (no torn read): which one. */
      readonly alone?: 'ca-previous.crt' | 'ca-previous.key' | undefined;
      readonly leftover?:
        | { readonly file: 'ca-previous.crt' | 'ca-previous.key'; readonly fingerprint: Fingerprint }
        | undefined;
      readonly unexpected: readonly string[];
    }
  | {
      readonly state: 'blocked';
      readonly stateDir: string;
      readonly problem: LocalProblem;
      /** Three-part message: what, where (the file), what to do next. */
      readonly error: BatonError;
      readonly unexpected: readonly string[];
    };
