/**
 * Every refusal and failure an action throws, in one place: what is wrong, where, what
 * changed (nearly always nothing) and the next step. The actions (./actions.ts) decide WHEN;
 * these say WHAT, so the same refusal reads the same from sync, failover and the drill. A
 * caller that acts on the kind of store failure reads its `reason` field, never these words.
 */
import { nextStep, retireStep } from '../next-step.js';
import { layoutOf } from '../authority/layout.js';
import { BatonError, isBatonError, type StoreChangedReason } from '../errors.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { isStoreChangedReason, STORE_CHANGED_WORDS } from '../store/store-changed.js';
import { ACTION_WORDS } from './action-words.js';
import { allowedActions, claimsToReplace } from './decide.js';
import type { ShareContext } from './share-context.js';
import type { Action, Look, PublishedAuthority, Verdict } from './types.js';
import { lineageWords, verdictSentence, verdictWords } from './verdict-words.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';

const NOTHING_WRITTEN = 'Nothing was written.';

/**
 * The store could not be READ (network, permissions, throttling) — a failure (exit 1), not a
 * refusal by the table: the verdict says "blocked", but the operator's next step is to fix
 * the path to the store, and a script must be able to tell the two apart.
 */
export function storeFailure(now: Look): BatonError | undefined {
  if (now.local.state === 'blocked' || now.published.state !== 'unreadable') return undefined;
  return now.published.error.code === 'failed' ? now.published.error : undefined;
}

/**
 * Why `sync --replace-unreadable` may not run on this look, or undefined when it may: callers
 * check it BEFORE taking the lock, so a refused run creates nothing.
 */
export function replaceUnreadableRefusal(ctx: ShareContext, look: Look): BatonError | undefined {
  const { local, published } = look;
  const rollback = replaceRollsBack(look);
  if (rollback) return rollback;
  if (
    local.state === 'whole' &&
    published.state === 'unreadable' &&
    published.problem === 'unusable' &&
    published.etag !== undefined
  )
    return undefined;
  return replaceNotAllowed(ctx, look);
}

/**
 * A document that claims to replace this host's authority is newer by its own word: replacing
 * it with this host's would publish the authority it retired (the seed's incident, where a
 * billet rotation was overwritten this way and a fresh billet adopted the retired key).
 */
function replaceRollsBack({ local, published }: Look): BatonError | undefined {
  if (local.state !== 'whole' || published.state !== 'unreadable') return undefined;
  if (!claimsToReplace(published, local.current.fingerprint)) return undefined;
  return new BatonError('refused', {
    what: `The published document claims to replace this host's authority ${local.current.fingerprint} (a newer rotation, NOT PROVED): replacing it with this host's would publish the authority the fleet rotated away from. ${published.error.what}`,
    where: published.location,
    changed: NOTHING_WRITTEN,
    next: [
      'Publish the rotation again from the controller that made it (billet: `billet ca sync --push` there; baton: ',
      nextStep('sync --push', { host: 'that controller' }),
      '), then look again.',
    ],
    reason: 'not-allowed',
  });
}

/** The refusal of a replace on this look: the way out that applies (wrong store, upgrade, another host). */
export function replaceNotAllowed(ctx: ShareContext, { local, published, verdict }: Look): BatonError {
  if (published.state === 'unreadable' && published.problem === 'foreign-deployment') {
    return new BatonError('refused', {
      what: `The published document is a valid document of another deployment; replacing it would destroy that fleet's authority. ${published.error.what}`,
      where: published.location,
      changed: NOTHING_WRITTEN,
      next: 'Check --store and --deployment (and baton.yaml): this host is pointed at the wrong store or deployment.',
      reason: 'foreign-deployment',
    });
  }
  if (published.state === 'unreadable' && published.problem === 'other-seal-key') {
    return new BatonError('refused', {
      what: `The published document is sealed with another key: it is this deployment's by its header, and it does not open with this host's seal key. Replacing it would seal the fleet's authority with a key the other controllers do not have. ${verdict.kind === 'blocked' ? verdict.why : published.error.what}`,
      where: published.location,
      changed: NOTHING_WRITTEN,
      next: "This host's seal key differs from the fleet's: copy seal_key_file from a controller that opens the document, then look again.",
      reason: 'sealed-with-another-key',
    });
  }
  if (published.state === 'unreadable' && published.problem === 'newer-format') {
    return new BatonError('refused', {
      what: `The published document was written by a newer baton; replacing it would downgrade the fleet. ${published.error.what}`,
      where: published.location,
      changed: NOTHING_WRITTEN,
      next: 'Upgrade baton on this host, then look again.',
      reason: 'newer-format',
    });
  }
  if (published.state === 'unreadable' && (published.problem ?? 'could-not-read') === 'could-not-read')
    return published.error;
  if (local.state !== 'whole' && published.state === 'unreadable') {
    return new BatonError('refused', {
      what: 'This host holds no whole authority to replace the unusable document with.',
      where: layoutOf(ctx.stateDir).caDir,
      changed: NOTHING_WRITTEN,
      next:
        verdict.kind === 'blocked'
          ? (verdict.said ?? verdict.next)
          : "Run it on a controller that holds the deployment's authority.",
      reason: 'nothing-to-publish',
    });
  }
  return notAllowedError(ctx, 'publish', verdict);
}

/**
 * REFUSE: names both fingerprints, the lineage in words and the ca/ path, because the file a
 * replace would move is the key every node in the fleet verifies against.
 */
export function refusalError(
  ctx: Pick<ShareContext, 'store' | 'suggester'>,
  verdict: Extract<Verdict, { kind: 'refuse' }>,
): BatonError {
  // The verdict's own next step (one table, verdict-words.ts), as sync names it: every step
  // that replaces an authority shows its bound value as a placeholder, never the value.
  const next = verdictWords(verdict, {
    baton: { ...(ctx.suggester ?? PLAIN_SUGGESTER), terminal: false },
  }).next;
  return new BatonError('refused', {
    what: `This host's authority differs from the published one. Local: ${verdict.local}. Published: ${verdict.published}. Diagnosis: ${lineageWords(verdict.lineage)}`,
    where: `${verdict.caDir} (local); ${ctx.store.location} (published)`,
    changed: NOTHING_WRITTEN,
    next,
    reason: 'diverged',
  });
}

/** `s` renders the way out's command with the global flags given (a pipe's words: sync, never the walk). */
export function blockedError(
  verdict: Extract<Verdict, { kind: 'blocked' }>,
  s: Suggester = PLAIN_SUGGESTER,
): BatonError {
  const next =
    verdict.said ??
    (verdict.step ? verdictWords(verdict, { baton: { ...s, terminal: false } }).next : verdict.next);
  return new BatonError('refused', {
    what: `Blocked: ${verdict.why}`,
    changed: NOTHING_WRITTEN,
    next,
    reason: 'blocked',
  });
}

/** The action is not one the table allows for this verdict: the verdict's own refusal. */
export function notAllowedError(ctx: ShareContext, action: Action, verdict: Verdict): BatonError {
  if (verdict.kind === 'blocked') return blockedError(verdict, ctx.suggester);
  if (verdict.kind === 'refuse' && action !== 'force') {
    const refusal = refusalError(ctx, verdict);
    if (action !== 'publish') return refusal;
    return new BatonError('refused', {
      what: `Publishing over the published authority is allowed only when this host is ahead of it. ${refusal.what}`,
      where: refusal.where ?? verdict.caDir,
      changed: NOTHING_WRITTEN,
      next: refusal.next ?? '',
      reason: 'not-ahead',
    });
  }
  return new BatonError('refused', {
    what: `Cannot ${ACTION_WORDS[action]}: ${verdictSentence(verdict)}`,
    where: layoutOf(ctx.stateDir).caDir,
    changed: NOTHING_WRITTEN,
    next: `Allowed now: ${allowedActions(verdict)
      .map((a) => ACTION_WORDS[a])
      .join(', ')}.`,
    reason: 'not-allowed',
  });
}

/** The verdict moved between the look and the lock: say from what to what. */
export function changedError(ctx: ShareContext, seen: Verdict, now: Verdict): BatonError {
  const then = publishedSide(seen);
  const after = publishedSide(now);
  const publishedMoved = then !== after;
  const reason: StoreChangedReason | 'local-changed' = !publishedMoved
    ? 'local-changed'
    : then === 'none'
      ? 'published-meanwhile'
      : after === 'none'
        ? 'removed'
        : 'replaced';
  return new BatonError(publishedMoved ? 'store-changed' : 'refused', {
    what: `${publishedMoved ? 'The store' : "This host's authority"} changed since you looked. Then: ${verdictSentence(seen)} Now: ${verdictSentence(now)}`,
    where: publishedMoved ? ctx.store.location : layoutOf(ctx.stateDir).caDir,
    changed: 'Nothing was overwritten.',
    next: 'Re-read and decide again.',
    reason,
  });
}

/** What the store held when the verdict was made: 'none', a fingerprint, or 'blocked'. */
function publishedSide(verdict: Verdict): string {
  switch (verdict.kind) {
    case 'first-controller':
    case 'publish':
      return 'none';
    case 'adopt':
      return verdict.published;
    case 'in-sync':
      return verdict.fingerprint;
    case 'refuse':
      return verdict.published;
    case 'blocked':
      return 'blocked';
  }
}

/** A failed precondition keeps its own code (exit 6) with the words an operator acts on. */
export function publishFailed(ctx: ShareContext, error: unknown): BatonError {
  if (isBatonError(error) && error.code === 'store-changed') {
    const why = isStoreChangedReason(error.reason)
      ? STORE_CHANGED_WORDS[error.reason]
      : 'another controller wrote in between';
    return new BatonError('store-changed', {
      what: `The store changed since you looked (${why}).`,
      ...(error.reason === undefined ? {} : { reason: error.reason }),
      where: ctx.store.location,
      changed: 'Nothing was overwritten.',
      next: ['Re-read and decide again (run ', nextStep('sync'), ' again, or refresh the console).'],
      cause: error,
    });
  }
  if (isBatonError(error)) return error;
  return new BatonError('failed', {
    what: `Publishing failed: ${error instanceof Error ? error.message : String(error)}`,
    where: ctx.store.location,
    changed: 'Nothing was published; this host is unchanged.',
    next: 'Check the store and try again.',
    reason: 'other',
    cause: error,
  });
}

/**
 * A refused If-Match over the very bytes this decision read: nothing changed, the store (or a
 * proxy in front of it) gave the same bytes another ETag. "The store changed since you looked"
 * would be untrue and "run it again" would loop for ever; the store is named for what it does.
 */
export function etagUnstableError(ctx: ShareContext, cause: unknown): BatonError {
  return new BatonError('failed', {
    what: 'The store refused the conditional replace (If-Match on the ETag read), yet it still holds byte for byte the document read for this decision: nothing changed, the store gives the same bytes a different ETag, so no replace can ever be conditional on what was read.',
    where: ctx.store.location,
    changed: 'Nothing was overwritten.',
    next: [
      'Check for a proxy or gateway that rewrites ETags between baton and the store; ',
      nextStep('store check'),
      ' names such a store.',
    ],
    reason: 'etag-unstable',
    cause,
  });
}

/**
 * A published authority outside its validity is refused BEFORE anything is installed or set
 * aside: every node would reject a control plane presenting it, and installing it would turn
 * that outage into a screen that says "in sync". The decoder accepts it on purpose, so a
 * controller that has rotated can still publish over it (`sync --push`). Certificates are
 * back-dated an hour when minted, so ordinary clock skew between controllers never trips this.
 */
export function refuseOutsideValidity(
  ctx: ShareContext,
  published: Extract<PublishedAuthority, { state: 'present' }>,
): void {
  const current = published.current;
  if (current === undefined) return;
  const now = ctx.clock.now().getTime();
  if (current.notAfter.getTime() <= now) {
    throw new BatonError('refused', {
      what: `The published authority ${published.header.fingerprint} expired on ${current.notAfter.toISOString()}; installing it would leave this host presenting a certificate no node accepts.`,
      where: ctx.store.location,
      changed: NOTHING_WRITTEN,
      next: [
        'Rotate the authority on the controller that holds it (',
        nextStep('ca rotate', { host: 'that controller' }),
        ', then ',
        nextStep('sync --push', { host: 'that controller' }),
        '), then run this again.',
      ],
      reason: 'expired',
    });
  }
  if (current.notBefore.getTime() > now) {
    throw new BatonError('refused', {
      what: `The published authority ${published.header.fingerprint} is not valid until ${current.notBefore.toISOString()}; this host's clock says ${new Date(now).toISOString()}.`,
      where: ctx.store.location,
      changed: NOTHING_WRITTEN,
      next: "Check this host's clock and the publishing controller's (NTP); nodes would reject the authority until then.",
      reason: 'not-yet-valid',
    });
  }
}

/** The files read under the lock are not the pair decided on: something changed ca/ without the lock. */
export function publishedFilesMovedError(
  ctx: Pick<ShareContext, 'stateDir' | 'suggester'>,
  carried: Fingerprint,
  decided: Fingerprint,
): BatonError {
  return new BatonError('failed', {
    what: `The authority files read for publishing are ${carried}, not the ${decided} that was decided on.`,
    where: layoutOf(ctx.stateDir).caDir,
    changed: 'Nothing was published.',
    next: [
      'Something changed ca/ without taking ca.lock; look at it (',
      nextStep('ca show'),
      ') and run sync again.',
    ],
  });
}

export function missingPairFileError(missing: 'ca.key' | 'ca.crt'): BatonError {
  return new BatonError('failed', {
    what: `The authority's ${missing} is missing from the files read for publishing.`,
    changed: 'Nothing was published.',
    next: ['Look at ca/ (', nextStep('ca show'), ') and run sync again.'],
  });
}

/** Force set ca/ aside and then failed: the message names where the old authority went. */
export function installAfterSetAsideFailed(
  verdict: Extract<Verdict, { kind: 'refuse' }>,
  supersededDir: string,
  error: unknown,
): BatonError {
  return new BatonError('failed', {
    what: `The old authority ${verdict.local} was set aside, but installing the published ${verdict.published} failed: ${causeOf(error)}`,
    where: verdict.caDir,
    changed: `The old authority is intact in ${supersededDir} (with a copy of its marker; the marker itself stays in place); ${verdict.caDir} may hold a partial install.`,
    next: `Look at ${verdict.caDir}; to go back, move it away and rename ${supersededDir} to ${verdict.caDir}.`,
    cause: error,
  });
}

/** The first controller published and then failed to install: the store already holds it. */
export function installAfterPublishFailed(
  ctx: Pick<ShareContext, 'stateDir' | 'store' | 'suggester'>,
  fingerprint: Fingerprint,
  error: unknown,
): BatonError {
  return new BatonError('failed', {
    what: `The new authority ${fingerprint} was published, but installing it on this host failed: ${causeOf(error)}`,
    where: layoutOf(ctx.stateDir).caDir,
    changed: `The store at ${ctx.store.location} holds ${fingerprint}; this host may hold a partial install.`,
    next: [
      'Fix what the message names, clear the partial files from ca/, and run ',
      nextStep('sync'),
      ' to adopt the published authority.',
    ],
    cause: error,
  });
}

function causeOf(error: unknown): string {
  return isBatonError(error) ? error.what : error instanceof Error ? error.message : String(error);
}

/** The store still carries a retired pair and the --confirm for it is missing or is another's. */
export function retireInStoreUnconfirmed(
  location: string,
  retired: Fingerprint,
  confirm: string | undefined,
): BatonError {
  return new BatonError('usage', {
    what: `The published document still carries the previous authority ${retired}, which this host has retired; dropping it from the store needs --confirm with the 8 characters after "SHA256:" of that fingerprint. ${confirm === undefined ? 'No --confirm was given.' : 'The --confirm given is for another authority.'}`,
    where: location,
    next: ['Run ', retireStep(), ' with the characters of the previous fingerprint status shows.'],
    changed: 'Nothing was written to the store.',
  });
}
