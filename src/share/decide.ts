/**
 * docs/publishing.md's decision table as a pure function: status shows it, failover walks it, sync
 * does it. Fingerprints are compared EXACTLY here — this answer can authorise setting an
 * authority aside, and a tolerant comparison would let a look-alike through.
 */
import { interruptedOf } from '../authority/interrupted.js';
import { overlapStillPublished } from './partial-install.js';
import { layoutOf } from '../authority/layout.js';
import type { LocalAuthority } from '../authority/types.js';
import { refuseTamperedHandover } from './handover.js';
import { lineageOf } from './lineage.js';
import type { Action, PublishedAuthority, Verdict } from './types.js';
import { ETAG_8, nextStep } from '../next-step.js';
import { replaceBinding, UNSEAL_BINDING } from './confirm-binding.js';
import { shown } from '../outside-text.js';

export { lineageOf };

export function decide(local: LocalAuthority, read: PublishedAuthority): Verdict {
  // A handover signature that fails under this host's own key is tampering: refused like any
  // document that cannot be used, before any lineage is read from it.
  const published = refuseTamperedHandover(local, read);
  // The host is what must be repaired first: a blocked local authority wins over a bad document.
  if (local.state === 'blocked') {
    return {
      kind: 'blocked',
      why: withWhere(local.error.what, local.error.where),
      next: local.error.next ?? 'Repair the local authority by hand, then look again.',
      ...(local.error.said ? { said: local.error.said } : {}),
    };
  }
  // An interrupted rotate or retire is not "whole ✓ in sync": billet may not start on it, and
  // nothing is published or adopted over it until the one command that finishes it has run.
  const interrupted = interruptedOf(local);
  // A stopped install of the overlap that is still published: adopt finishes it (never a retire
  // that would delete the previous key the fleet still needs; src/share/partial-install.ts).
  if (interrupted && overlapStillPublished(local, published) && published.state === 'present')
    return { kind: 'adopt', published: published.header.fingerprint, lostMarker: false };
  if (interrupted) {
    return {
      kind: 'blocked',
      why: `${interrupted.what}${interrupted.billetStops ? " billet's control plane will not start on this ca/ until it is finished." : ''}`,
      next: `Finish the ${interrupted.op === 'rotate' ? 'rotation' : 'retire'} on this host, then look again:`,
      step: interrupted.step,
    };
  }
  if (published.state === 'unreadable') return blockedByDocument(local, published);
  // ONCE SEALED, STAYS SEALED: without the seal key this host can compare fingerprints but can
  // neither install the sealed files nor replace them without unsealing. Saying "can be
  // adopted" here would send the operator to a sync that must refuse.
  const sealedWithoutKey =
    published.state === 'present' && published.sealed && published.current === undefined;
  if (sealedWithoutKey && (local.state === 'fresh' || local.state === 'lost')) {
    return {
      kind: 'blocked',
      why: `The published authority ${published.header.fingerprint} is sealed; this host has no seal key; adopting needs it.`,
      next: 'Set seal_key_file in baton.yaml to the 32-byte key the other controllers use, then:',
      step: nextStep('sync'),
      sealedWithoutKey: true,
    };
  }
  switch (local.state) {
    case 'fresh':
      if (published.state === 'none' && published.nearMiss) return nearMissVerdict(published);
      return published.state === 'none'
        ? { kind: 'first-controller' }
        : { kind: 'adopt', published: published.header.fingerprint, lostMarker: false };
    case 'lost':
      // NEVER MINTED OVER A LOSS: a marker without files means this host held the authority
      // once; minting now would give the fleet a second one.
      return published.state === 'none'
        ? {
            kind: 'blocked',
            why: `This host held the authority once (the marker ${layoutOf(local.stateDir).marker} is present) but ca/ is empty, and nothing is published.`,
            next: 'Restore ca/ from a backup, or remove the marker on purpose if this deployment really must start over.',
          }
        : { kind: 'adopt', published: published.header.fingerprint, lostMarker: true };
    case 'whole': {
      const mine = local.current.fingerprint;
      if (published.state === 'none') return { kind: 'publish', local: mine };
      const theirs = published.header.fingerprint;
      // In sync with an overlap open is not "nothing to do": the next `ca rotate` refuses until
      // the previous authority is retired, and the words must say so before the operator finds out.
      if (mine === theirs) {
        // The store still carries a previous pair this host has retired: the next host to adopt
        // would install it, and billet would serve with it.
        const retired =
          !local.previous && published.header.previousFingerprint !== null
            ? published.header.previousFingerprint
            : undefined;
        return {
          kind: 'in-sync',
          fingerprint: mine,
          ...(local.previous ? { previous: local.previous.fingerprint } : {}),
          ...(retired ? { storeCarriesRetired: retired } : {}),
        };
      }
      return {
        kind: 'refuse',
        local: mine,
        published: theirs,
        lineage: lineageOf(local, published),
        caDir: layoutOf(local.stateDir).caDir,
        ...(sealedWithoutKey ? { sealedWithoutKey: true as const } : {}),
      };
    }
  }
}

/**
 * A document that cannot be used blocks every host, and the way out depends on why (see
 * unreadable.ts) and on whether THIS host holds an authority to replace it with: the "Next"
 * names a command that works here, or says that none does and what to do by hand.
 */
function blockedByDocument(
  local: Exclude<LocalAuthority, { state: 'blocked' }>,
  published: Extract<PublishedAuthority, { state: 'unreadable' }>,
): Verdict {
  const problem = published.problem ?? 'could-not-read';
  const why = withWhere(
    problem === 'could-not-read'
      ? `The published authority could not be read: ${published.error.what}`
      : `The published authority cannot be used: ${published.error.what}`,
    published.error.where ?? published.location,
  );
  const blocked = (next: string): Extract<Verdict, { kind: 'blocked' }> => ({
    kind: 'blocked',
    why,
    next,
    unreadable: problem,
  });
  switch (problem) {
    case 'could-not-read': {
      const said = published.error.said;
      return {
        ...blocked(published.error.next ?? `Check the store at ${published.location}, then look again.`),
        ...(said ? { said } : {}),
      };
    }
    case 'foreign-deployment':
      return blocked(
        `No baton command replaces it from this host: it is a valid document of another deployment, so this host is pointed at the wrong store or deployment. Check --store and --deployment (and baton.yaml).`,
      );
    case 'other-seal-key':
      return sealedWithAnotherKey(published, why);
    case 'newer-format':
      return blocked(
        'Upgrade baton on this host: a newer baton wrote this document, and no command of this version replaces it.',
      );
    case 'unusable': {
      const replace = published.etag === undefined ? undefined : replaceBinding(published.etag);
      if (local.state === 'whole' && replace) {
        // --unseal only where there is no key: a host with one seals its replacement itself.
        const sealedHere = published.sealed === true && published.sealKeyHere !== true;
        const words = sealedHere
          ? 'sync --replace-unreadable --unseal --confirm'
          : 'sync --replace-unreadable --confirm';
        const step = nextStep(words, {
          placeholders: sealedHere
            ? [replace.placeholder, UNSEAL_BINDING.placeholder]
            : [replace.placeholder],
        });
        const seal = sealedHere
          ? ' It is sealed: give this host the seal key (seal_key_file) and drop --unseal so the replacement stays sealed; as shown, it stops sealing on purpose.'
          : '';
        // The bad document claims to replace this host's authority (its previous_fingerprint, its
        // ca-previous.crt, or its certificate's billet-replaces: claim): the published one is
        // then newer, and replacing it with this host's would publish the authority it retired —
        // the seed's incident. No replace is offered, and replaceUnreadable refuses it.
        if (claimsToReplace(published, local.current.fingerprint)) {
          return blocked(
            `Do not replace it from this host: it claims to replace this host's authority ${local.current.fingerprint} (a newer rotation, NOT PROVED), so replacing it would publish the authority the fleet rotated away from. Publish it again from the controller that rotated (billet: \`billet ca sync --push\` there; baton: sync --push there), then look again.`,
          );
        }
        return {
          ...blocked(`Replace it with this host's authority ${local.current.fingerprint}.${seal}`),
          step,
        };
      }
      const elsewhere = nextStep('sync --replace-unreadable --confirm', {
        placeholders: [replace?.placeholder ?? ETAG_8],
        host: "a controller that holds this deployment's authority",
      });
      return {
        ...blocked(
          "No baton command fixes it from this host (it holds no authority to publish); or restore the object from the bucket's versions by hand. From a controller that holds the authority:",
        ),
        step: elsewhere,
      };
    }
  }
}

/** True when an unusable document claims, anywhere it can, to have replaced `fingerprint`. */
export function claimsToReplace(
  published: Extract<PublishedAuthority, { state: 'unreadable' }>,
  fingerprint: string,
): boolean {
  return (published.claimedPrevious ?? []).includes(fingerprint);
}

/**
 * Nothing at this store URL, but the store says this deployment lives nearby or lived here:
 * the way out is the store URL (or the deleted document), NEVER a mint (./near-miss.ts).
 */
function nearMissVerdict(published: Extract<PublishedAuthority, { state: 'none' }>): Verdict {
  const { neighbours, earlierVersions } = published.nearMiss!;
  const where = shown(published.location);
  if (neighbours.length > 0) {
    return {
      kind: 'blocked',
      why: `Nothing is published at ${where}, but a document of THIS deployment is at a neighbouring prefix: ${neighbours.map((n) => shown(n)).join('; ')}. The store URL is probably mistyped.`,
      next: "Fix the store URL (--store, or store: in baton.yaml) to name the deployment's document, then look again. Minting here would give the fleet a second authority, so no mint is offered.",
      nearMiss: true,
    };
  }
  return {
    kind: 'blocked',
    why: `Nothing is published at ${where}, but the store keeps ${earlierVersions} earlier version(s) of it: the document was deleted (a delete marker hides them), so this deployment has published here before.`,
    next: "Find out who deleted it; restore its latest version from the store's history (aws s3api list-object-versions, then copy-object with --version-id), or publish again from a controller that holds the authority (sync there). Minting here would give the fleet a second authority, so no mint is offered.",
    nearMiss: true,
  };
}

/**
 * A document of THIS deployment (its readable header says so) that does not open with this
 * host's seal key: the key here is what differs. No replace is offered — the replacement would
 * be sealed with a key no other controller has, and the real controllers would be locked out.
 */
function sealedWithAnotherKey(
  published: Extract<PublishedAuthority, { state: 'unreadable' }>,
  fallback: string,
): Verdict {
  const header = published.header;
  const why = header
    ? `The published authority ${header.fingerprint} (published by ${header.publishedBy.shown()} at ${header.publishedAt.shown()}) is sealed with another key: it does not open with this host's seal key (${published.location}).`
    : fallback;
  return {
    kind: 'blocked',
    why,
    next: "This host's seal key differs from the fleet's: copy seal_key_file from a controller that opens the document (the same 32-byte file on every controller), then look again. No replace is offered here: it would seal the fleet's authority with a key the other controllers do not have. If no controller opens it, it was altered: restore an earlier version from the store's history.",
    unreadable: 'other-seal-key',
  };
}

/** A verdict carries one sentence for why: it names the file or object, once. */
function withWhere(what: string, where: string | undefined): string {
  return where && !what.includes(where) ? `${what} (${where})` : what;
}

/** Only the actions the table allows; 'leave' (change nothing) is always one of them. */
export function allowedActions(verdict: Verdict): readonly Action[] {
  switch (verdict.kind) {
    case 'first-controller':
      return ['first-controller', 'leave'];
    case 'adopt':
      return ['adopt', 'leave'];
    case 'publish':
      return ['publish', 'leave'];
    case 'in-sync':
      return ['leave'];
    case 'refuse':
      // Sealed without the key here: force cannot open the published files, and publishing
      // would unseal — neither is offered (sync --push --unseal is the deliberate way).
      if (verdict.sealedWithoutKey) return ['leave'];
      if (verdict.lineage.kind === 'ahead') return ['publish', 'leave', 'force'];
      // Not proved behind (siblings, unrelated, a claimed "left behind"): either side may be
      // kept, each on purpose and bound — the published one by force, this host's by push-over.
      return pushesOver(verdict) ? ['leave', 'force', 'push-over'] : ['leave', 'force'];
    case 'blocked':
      return ['leave'];
  }
}

/** The published authority PROVABLY replaced this host's: the one case a push must never undo. */
export function provedBehind(verdict: Extract<Verdict, { kind: 'refuse' }>): boolean {
  return verdict.lineage.kind === 'left-behind' && verdict.lineage.proof.kind === 'proved';
}

/**
 * The published authority replaced this host's by billet's word (its certificate's
 * billet-replaces: claim). billet signs no handover, so this is the strongest evidence a billet
 * rotation can carry — and a push over it would publish the very authority billet retired (the
 * seed's incident). Never offered, never done: the way on is to adopt the published one.
 */
export function billetReplaced(verdict: Extract<Verdict, { kind: 'refuse' }>): boolean {
  return (
    verdict.lineage.kind === 'left-behind' &&
    verdict.lineage.proof.kind === 'claimed' &&
    verdict.lineage.proof.reason === 'billet-signs-none'
  );
}

/** A push must never publish this host's authority over the published one (proved, or billet's claim). */
export function neverPushedOver(verdict: Extract<Verdict, { kind: 'refuse' }>): boolean {
  return provedBehind(verdict) || billetReplaced(verdict);
}

/** True when a push would publish over an authority this host is not proved ahead of (bound to PUBLISHED 8). */
export function pushesOver(verdict: Verdict): boolean {
  return verdict.kind === 'refuse' && verdict.lineage.kind !== 'ahead' && !neverPushedOver(verdict);
}

/** True when the verdict means "nothing to do" (status exit 0). */
export function isInSync(verdict: Verdict): boolean {
  return verdict.kind === 'in-sync' && verdict.storeCarriesRetired === undefined;
}
