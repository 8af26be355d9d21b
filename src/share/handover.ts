/**
 * The handover proof (docs/publishing.md): a controller that still holds the PREVIOUS key signs
 * (deployment, new fingerprint, previous fingerprint, published_at) with it when it publishes a
 * rotation. The OU claim and previous_fingerprint are only claims — whoever can write the store
 * can mint a CA that names any fingerprint — so "left behind by a rotation" becomes a PROOF only
 * for a host that verifies this signature with its own authority's public key.
 */
import { BatonError } from '../errors.js';
import type { LocalAuthority, PairSummary } from '../authority/types.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { parsePrivateKey } from '../pki/inspect-pair.js';
import type { DocumentHeader, HandoverProof, PublishedAuthority } from './types.js';

const HANDOVER_CONTEXT = 'baton.handover/1';

/** The signed bytes: one canonical JSON array, so no reader can frame the fields two ways. */
export function handoverMessage(
  header: Pick<DocumentHeader, 'deployment' | 'fingerprint' | 'previousFingerprint' | 'publishedAt'>,
): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify([
      HANDOVER_CONTEXT,
      header.deployment,
      header.fingerprint,
      header.previousFingerprint,
      header.publishedAt.raw,
    ]),
  );
}

/** ECDSA P-256 / SHA-256 (DER) by the previous key; undefined when there is no previous pair. */
export function signHandover(
  header: DocumentHeader,
  previousKeyPem: Uint8Array | undefined,
): Uint8Array | undefined {
  if (!previousKeyPem || header.previousFingerprint === null) return undefined;
  const key = parsePrivateKey(previousKeyPem);
  if (!key) throw new Error('handover: ca-previous.key cannot be parsed (the reader checked it whole)');
  const { sign } = process.getBuiltinModule('node:crypto'); // loaded when used: status imports this module
  return new Uint8Array(sign('sha256', handoverMessage(header), { key, dsaEncoding: 'der' }));
}

/** True only when `signature` is the handover signature over `header` by the key of `spki`. */
export function handoverVerifies(header: DocumentHeader, signature: Uint8Array, spki: Uint8Array): boolean {
  try {
    const { createPublicKey, verify } = process.getBuiltinModule('node:crypto');
    const key = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
    return verify('sha256', handoverMessage(header), { key, dsaEncoding: 'der' }, signature);
  } catch {
    return false;
  }
}

/**
 * What this host can say about the published document's handover, with its own keys: PROVED
 * only when its CURRENT authority is the signer and the signature verifies. A signer that is
 * one of this host's keys and does NOT verify is 'bad-signature' (the caller refuses the
 * document as tampered); any other signer cannot be checked here ('other-key').
 */
export function handoverProof(
  local: Extract<LocalAuthority, { state: 'whole' }>,
  header: DocumentHeader,
): HandoverProof {
  // billet's wireshare signs nothing: its rotation is a claim, and says why it cannot be more.
  if (header.wire === 'billet') return { kind: 'claimed', reason: 'billet-signs-none' };
  const signature = header.handover;
  const signer = header.previousFingerprint;
  if (!signature || signer === null) return { kind: 'claimed', reason: 'no-signature' };
  const own = [local.current, local.previous].find(
    (pair): pair is PairSummary => pair?.fingerprint === signer && pair.publicKey !== undefined,
  );
  if (!own) return { kind: 'claimed', reason: 'other-key', signer };
  if (!handoverVerifies(header, signature, own.publicKey!))
    return { kind: 'claimed', reason: 'bad-signature', signer };
  return own === local.current ? { kind: 'proved' } : { kind: 'claimed', reason: 'other-key', signer };
}

/**
 * A handover signature that names one of this host's own keys and does not verify under it is
 * TAMPERING: the published side is turned into a refusal (nothing can be adopted or forced
 * from it), saying so. Everything else passes unchanged.
 */
export function refuseTamperedHandover(
  local: LocalAuthority,
  published: PublishedAuthority,
): PublishedAuthority {
  if (local.state !== 'whole' || published.state !== 'present') return published;
  const proof = handoverProof(local, published.header);
  if (proof.kind !== 'claimed' || proof.reason !== 'bad-signature') return published;
  return {
    state: 'unreadable',
    location: published.location,
    error: tamperedError(published.location, proof.signer!, "this host's own authority key"),
  };
}

export function tamperedError(where: string, signer: Fingerprint, whose: string): BatonError {
  return new BatonError('refused', {
    what: `The published document was refused as tampered: its handover signature does not verify under ${signer} (${whose}). CLAIMED, NOT PROVED: a bad signature.`,
    where,
    next: 'Do not adopt or force it. Find out who can write the store, then publish again from the controller that holds the authority.',
    changed: 'Nothing was installed.',
    reason: 'tampered',
  });
}

/** The proof in the words every view shows (status, the failover walk, the force screen, sync). */
export function proofWords(proof: HandoverProof): string {
  if (proof.kind === 'proved') return "PROVED: signed by this host's own authority key.";
  switch (proof.reason) {
    case 'no-signature':
      return 'CLAIMED, NOT PROVED: the document carries no handover signature.';
    case 'bad-signature':
      return `CLAIMED, NOT PROVED: a bad signature (it does not verify under ${proof.signer ?? 'the previous key'}).`;
    case 'other-key':
      return `CLAIMED, NOT PROVED: signed by another key (${proof.signer ?? 'unknown'}), not this host's own authority key.`;
    case 'billet-signs-none':
      return "CLAIMED, NOT PROVED: billet published it, and billet signs no handover (the claim is the certificate's billet-replaces: OU).";
  }
}
