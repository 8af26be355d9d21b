import { BatonError } from '../errors.js';
import { shown } from '../outside-text.js';
import { inspectPair, isPkcs8Key, type CertificateFacts, type PairFault } from '../pki/inspect-pair.js';
import type { LocalProblem, PairSummary } from './types.js';

/** The problem a pair fault is filed under in LocalAuthority. */
export function problemOf(fault: PairFault): LocalProblem {
  switch (fault.kind) {
    case 'unparsable':
      return 'unreadable';
    case 'not-ca':
    case 'not-self-signed':
      return 'not-ca';
    case 'foreign':
    case 'ambiguous-claim':
      return 'foreign';
    case 'mismatched':
      return 'mismatched';
    default: {
      const unreachable: never = fault;
      return unreachable;
    }
  }
}

/** One sentence naming what is wrong with a pair, in the words of the files it names. */
export function faultText(
  fault: PairFault,
  labels: { readonly key: string; readonly cert: string },
  deployment: string,
): string {
  switch (fault.kind) {
    case 'unparsable':
      return fault.file === 'key'
        ? `${labels.key} cannot be parsed: it is ${fault.detail}.`
        : `${labels.cert} cannot be parsed: it is ${fault.detail}.`;
    case 'not-ca':
      return `${labels.cert} is not a CA certificate: ${fault.detail}.`;
    case 'not-self-signed':
      return `${labels.cert} is not self-signed: ${fault.detail}.`;
    case 'foreign':
      return fault.organization === undefined
        ? `${labels.cert} belongs to no deployment: it has no single Organization, and this deployment is "${deployment}".`
        : `${labels.cert} belongs to another deployment: its Organization is "${shown(fault.organization)}", not "${deployment}".`;
    case 'ambiguous-claim':
      return `${labels.cert} names ${fault.count} predecessors in its OU (billet-replaces:); one certificate replaces at most one authority, so it was edited and is not trusted.`;
    case 'mismatched':
      return `The key does not pair: ${labels.key} is not the private key of ${labels.cert}.`;
    default: {
      const unreachable: never = fault;
      return unreachable;
    }
  }
}

export function summaryOf(facts: CertificateFacts): PairSummary {
  return {
    fingerprint: facts.fingerprint,
    notBefore: facts.notBefore,
    notAfter: facts.notAfter,
    replaces: facts.replaces,
    claim: facts.claim,
    publicKey: facts.publicKey,
    serialHex: facts.serialHex,
  };
}

/** The summary, marked when its key is one billet cannot parse. */
export function withKeyFormat(summary: PairSummary, key: Uint8Array): PairSummary {
  return isPkcs8Key(key) ? { ...summary, keyFormat: 'pkcs8' } : summary;
}

/**
 * Checks a key+certificate pair exactly as the reader does (pairs, self-signed CA, O =
 * deployment) — the one implementation used for files on disk AND files in a published
 * document. Throws BatonError('refused') naming the reason and `where`.
 */
export async function checkPair(
  key: Uint8Array,
  cert: Uint8Array,
  deployment: string,
  where: string,
): Promise<PairSummary> {
  const inspection = await inspectPair(key, cert, deployment);
  if (inspection.ok) return withKeyFormat(summaryOf(inspection.facts), key);
  throw new BatonError('refused', {
    what: faultText(inspection.fault, { key: 'the key', cert: 'the certificate' }, deployment),
    where,
    next:
      inspection.fault.kind === 'foreign'
        ? 'Check the deployment id (--deployment) and the store or state dir this came from.'
        : 'This is not an authority baton can use; restore the right files or take them from a known-good copy.',
    changed: 'Nothing was written.',
  });
}
