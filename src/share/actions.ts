/**
 * The actions of docs/publishing.md — publish, adopt, force, first controller, leave — as UI-free
 * functions that `baton sync` and the console's failover flow both call. Each returns an
 * Outcome or throws a BatonError.
 *
 * EVERY ACTION RE-DECIDES INSIDE THE LOCK. What the operator looked at (`seen`) was read
 * before ca.lock was taken; another process may have rotated, adopted or published since.
 * Acting on that stale look could install over a host that meanwhile became whole, or set
 * aside an authority the operator never saw — so each action takes the lock, re-reads both
 * sides, decides again, and refuses (saying what changed) when the verdict moved.
 *
 * What an action says is in ./action-words.ts; every refusal and failure it throws is built in
 * ./refusals.ts.
 */
import {
  checkPair,
  installAuthority,
  mintAuthority,
  readAuthorityFiles,
  readLocalAuthority,
  restorePreviousCertificateLocked,
  setAsideAuthority,
  snapshotLocalAuthority,
  withAuthorityLock,
  type AuthorityFiles,
  type LocalAuthority,
} from '../authority/index.js';
import { isBatonError, type BatonError } from '../errors.js';
import { OutsideText } from '../outside-text.js';
import { confirmationPrefix, typedMatch, type Fingerprint } from '../pki/fingerprint-type.js';
import type { Store } from '../store/store.js';
import { decide, pushesOver } from './decide.js';
import { encodeDocument } from './document.js';
import { refuseTamperedHandover, signHandover } from './handover.js';
import { answerLost, lostAnswerError, reread } from './lost-answer.js';
import { refuseReplay } from './replay.js';
import { isStoppedInstall, overlapStillPublished } from './partial-install.js';
import { refuseClockOff } from './clock-check.js';
import { publishedSealedWithoutKey, refuseUnstatedSeal, unsealRefusal } from './publish-guards.js';
import { bodyReadFor, openPublished, readPublished, sameBytes } from './published.js';
import {
  blockedError,
  changedError,
  installAfterPublishFailed,
  installAfterSetAsideFailed,
  missingPairFileError,
  notAllowedError,
  publishedFilesMovedError,
  publishFailed,
  refusalError,
  refuseOutsideValidity,
  replaceNotAllowed,
  replaceUnreadableRefusal,
  retireInStoreUnconfirmed,
  storeFailure,
  etagUnstableError,
} from './refusals.js';
import type { ShareContext } from './share-context.js';
import { DOCUMENT_FORMAT, type DocumentHeader, type Look, type Outcome, type Verdict } from './types.js';
import { verdictSentence } from './verdict-words.js';

/**
 * A look WITHOUT the lock, for deciding what to offer (status, the start of sync and
 * failover). It changes nothing; an action re-reads under the lock before it writes.
 */
export async function look(ctx: ShareContext): Promise<Look> {
  const [local, read] = await Promise.all([
    snapshotLocalAuthority(ctx.stateDir, ctx.deployment),
    readPublished(ctx.store, ctx.deployment, ctx.sealKey),
  ]);
  const published = refuseTamperedHandover(local, read);
  return { local, published, verdict: decide(local, published) };
}

/** The look an action decides on: the locked reader, so a torn rotation is paired exactly. */
async function lookLocked(ctx: ShareContext): Promise<Look> {
  const local = await readLocalAuthority(ctx.stateDir, ctx.deployment);
  const published = refuseTamperedHandover(
    local,
    await readPublished(ctx.store, ctx.deployment, ctx.sealKey),
  );
  return { local, published, verdict: decide(local, published) };
}

/**
 * Runs an action under ca.lock on a fresh look. When the caller passes the verdict the
 * operator saw, a different verdict now is refused: the operator agreed to THAT action on
 * THOSE fingerprints, not to whatever the store or disk holds a moment later.
 */
async function underLock<T>(
  ctx: ShareContext,
  seen: Verdict | undefined,
  act: (now: Look) => Promise<T>,
): Promise<T> {
  return withAuthorityLock(ctx.stateDir, async () => {
    const now = await lookLocked(ctx);
    const failure = storeFailure(now);
    if (failure) throw failure;
    if (seen !== undefined && !sameVerdict(seen, now.verdict)) throw changedError(ctx, seen, now.verdict);
    return act(now);
  });
}

// ---------------------------------------------------------------------------------------
// publish

export interface PublishOptions {
  /** The verdict the operator saw; a different verdict under the lock is refused. */
  readonly seen?: Verdict;
  /**
   * The operator unseals ON PURPOSE (sync --unseal, confirmed): replace a sealed document with
   * one in the clear. Without it, a sealed document is only ever replaced by a sealed one.
   */
  readonly unseal?: boolean;
  /**
   * The operator publishes over an authority this host is not proved ahead of (siblings,
   * unrelated, a claimed but unproved "left behind"), bound to the published fingerprint
   * (confirm-binding.ts) and held to `seen`. Never over one PROVED to have replaced this host's.
   */
  readonly over?: boolean;
}

/**
 * Writes this host's authority into the store. Create-only when nothing is published; over a
 * different document when this host is AHEAD (it rotated away from the published one), or on
 * purpose with `over` when it is not proved behind, with if-match on the ETag read for this decision. Never a blind overwrite: a failed
 * precondition is 'store-changed' (exit 6) and nothing was overwritten.
 */
export async function publish(ctx: ShareContext, options: PublishOptions = {}): Promise<Outcome> {
  return underLock(ctx, options.seen, async ({ local, published, verdict }) => {
    const overAhead = verdict.kind === 'refuse' && verdict.lineage.kind === 'ahead';
    const overOnPurpose = options.over === true && options.seen !== undefined && pushesOver(verdict);
    if (verdict.kind !== 'publish' && !overAhead && !overOnPurpose)
      throw notAllowedError(ctx, 'publish', verdict);
    if (local.state !== 'whole') throw notAllowedError(ctx, 'publish', verdict);
    if (publishedSealedWithoutKey(published, ctx.sealKey) && !options.unseal)
      throw unsealRefusal(ctx.store.location, 'sync --push');
    refuseUnstatedSeal(ctx);
    const { body, fingerprint } = await encodeLocalAuthority(ctx, local);
    const precondition =
      published.state === 'present'
        ? { kind: 'if-match' as const, etag: published.etag }
        : { kind: 'create-only' as const };
    await ctx.beforeWrite?.();
    const { etag } = await putDocument(
      ctx,
      body,
      precondition,
      published.state === 'present' ? bodyReadFor(published) : undefined,
    );
    return { kind: 'published', fingerprint, etag };
  });
}

/**
 * THE PUSH ON A REFUSAL, one piece of code for `sync --push [--confirm <PUBLISHED 8>]` and the
 * failover walk's "keep this host's authority": publish against the verdict the operator saw,
 * over the published document when this host is not proved behind it (its value already
 * checked by the caller: --confirm, or the walk's typed gate). Two copies would drift, and a
 * screen that skipped a guard the command keeps would be a way around it.
 */
export async function push(
  ctx: ShareContext,
  options: { readonly seen: Verdict; readonly unseal?: boolean },
): Promise<Outcome> {
  return publish(ctx, {
    seen: options.seen,
    unseal: Boolean(options.unseal),
    over: pushesOver(options.seen),
  });
}

/**
 * This host's whole authority as a document: the files read under the lock, checked to be
 * the pair that was decided on, sealed when this host has the seal key.
 */
export async function encodeLocalAuthority(
  ctx: ShareContext,
  local: Extract<LocalAuthority, { state: 'whole' }>,
): Promise<{ readonly body: Uint8Array; readonly fingerprint: Fingerprint }> {
  {
    const files = await readAuthorityFiles(ctx.stateDir, ctx.deployment);
    // The header must describe the files it carries: an adopter checks exactly that and would
    // refuse the document, after it had already replaced the good one in the store.
    const carried = await fingerprintOf(files, ctx.deployment);
    if (carried !== local.current.fingerprint) {
      throw publishedFilesMovedError(ctx, carried, local.current.fingerprint);
    }
    const header: DocumentHeader = {
      format: DOCUMENT_FORMAT,
      deployment: ctx.deployment,
      fingerprint: local.current.fingerprint,
      // During a rotation overlap the previous pair travels with the document, so a
      // controller left behind can be diagnosed as such and nodes keep verifying.
      previousFingerprint: local.previous?.fingerprint ?? null,
      publishedAt: new OutsideText(ctx.clock.now().toISOString()),
      publishedBy: new OutsideText(ctx.host),
    };
    // The previous key signs the handover, so the host it replaced can PROVE it was left behind.
    const handover = signHandover(header, files['ca-previous.key']);
    const body = await encodeDocument(handover ? { ...header, handover } : header, files, ctx.sealKey);
    return { body, fingerprint: local.current.fingerprint };
  }
}

// ---------------------------------------------------------------------------------------
// replace unreadable

/**
 * THE WAY OUT of a published document that cannot be used (damaged, lying fingerprint, key
 * not pairing, seal not opening with this host's key): replaced with this host's WHOLE
 * authority, if-match on the bad object's ETag, so a repair published meanwhile by another
 * controller is never overwritten. Never a valid document of another deployment (the wrong
 * store) nor one of a newer format (upgrade baton): both are refused with exit 3.
 */
export async function replaceUnreadable(ctx: ShareContext, options: PublishOptions = {}): Promise<Outcome> {
  return withAuthorityLock(ctx.stateDir, async () => {
    const now = await lookLocked(ctx);
    const { local, published, verdict } = now;
    if (options.seen !== undefined && !sameVerdict(options.seen, verdict))
      throw changedError(ctx, options.seen, verdict);
    const refusal = replaceUnreadableRefusal(ctx, now);
    if (refusal) throw refusal;
    if (local.state !== 'whole' || published.state !== 'unreadable' || published.etag === undefined)
      throw replaceNotAllowed(ctx, now);
    if (published.sealed && !ctx.sealKey && !options.unseal)
      throw unsealRefusal(ctx.store.location, 'sync --replace-unreadable');
    refuseUnstatedSeal(ctx);
    const { body, fingerprint } = await encodeLocalAuthority(ctx, local);
    await ctx.beforeWrite?.();
    const { etag } = await putDocument(ctx, body, { kind: 'if-match', etag: published.etag });
    return { kind: 'published', fingerprint, etag };
  });
}

// ---------------------------------------------------------------------------------------
// adopt

/**
 * Gives a host with no authority (fresh, or lost) the one this deployment already uses.
 *
 * THREE ANSWERS AND NOT TWO (the seed's words): 'nothing-published' says this host is the one
 * that has to publish; 'already-held' says there is nothing to do. Collapsing them would make
 * a first controller publish nothing. A local authority that differs is never replaced here.
 */
export async function adopt(ctx: ShareContext, options: { readonly seen?: Verdict } = {}): Promise<Outcome> {
  return underLock(ctx, options.seen, async (now) => adoptLocked(ctx, now));
}

async function adoptLocked(ctx: ShareContext, { local, published, verdict }: Look): Promise<Outcome> {
  // THE SAME ADOPT AGAIN finishes an install that stopped after ca-previous.key.
  const stoppedPrevious = overlapStillPublished(local, published);
  if (verdict.kind === 'adopt' && stoppedPrevious && published.state === 'present') {
    refuseOutsideValidity(ctx, published);
    const files = await openPublished(ctx.store, ctx.deployment, ctx.sealKey, published);
    await restorePreviousCertificateLocked(ctx.stateDir, ctx.deployment, files, stoppedPrevious);
    return { kind: 'installed', fingerprint: verdict.published };
  }
  // THE SAME ADOPT (OR FORCE) AGAIN finishes an install cut short: installAuthority proves every
  // file in ca/ is the document's, byte for byte, and writes only what is missing.
  if (isStoppedInstall(local, published) && published.state === 'present') {
    refuseOutsideValidity(ctx, published);
    await refuseReplay(ctx.store, published);
    const files = await openPublished(ctx.store, ctx.deployment, ctx.sealKey, published);
    await installAuthority(ctx.stateDir, ctx.deployment, files, published.header.fingerprint, {
      resume: true,
    });
    return { kind: 'installed', fingerprint: published.header.fingerprint };
  }
  switch (verdict.kind) {
    case 'first-controller':
    case 'publish':
      return { kind: 'nothing-published' };
    case 'in-sync':
      return { kind: 'already-held', fingerprint: verdict.fingerprint };
    case 'adopt': {
      if (published.state !== 'present') throw notAllowedError(ctx, 'adopt', verdict);
      refuseOutsideValidity(ctx, published);
      await refuseReplay(ctx.store, published);
      const files = await openPublished(ctx.store, ctx.deployment, ctx.sealKey, published);
      await installAuthority(ctx.stateDir, ctx.deployment, files, verdict.published);
      return { kind: 'installed', fingerprint: verdict.published };
    }
    case 'refuse':
      throw refusalError(ctx, verdict);
    case 'blocked':
      throw blockedError(verdict, ctx.suggester);
  }
}

// ---------------------------------------------------------------------------------------
// force

export interface ForceOptions {
  /** The verdict the operator confirmed; a different verdict under the lock is refused. */
  readonly seen?: Verdict;
  /**
   * The instant that names ca.superseded-<stamp>, when the confirm screen already showed that
   * path: the path on the screen must be the path on disk.
   */
  readonly at?: Date;
}

/**
 * Replaces a local authority that differs from the published one — only after the operator
 * said so (typed confirmation, or --yes). NEVER OVERWRITES: ca/ and the marker are renamed to
 * ca.superseded-<UTC stamp> first, and a failure afterwards names where the old one went.
 * The published files are opened and checked BEFORE anything is moved, so a document that
 * cannot be installed leaves the host exactly as it was.
 */
export async function force(ctx: ShareContext, options: ForceOptions = {}): Promise<Outcome> {
  return underLock(ctx, options.seen, async ({ published, verdict }) => {
    if (verdict.kind !== 'refuse' || published.state !== 'present')
      throw notAllowedError(ctx, 'force', verdict);
    refuseOutsideValidity(ctx, published);
    await refuseReplay(ctx.store, published);
    const files = await openPublished(ctx.store, ctx.deployment, ctx.sealKey, published);
    const at = options.at;
    const supersededDir = await setAsideAuthority(ctx.stateDir, at ? { now: () => at } : ctx.clock, {
      deployment: ctx.deployment,
    });
    try {
      await installAuthority(ctx.stateDir, ctx.deployment, files, verdict.published);
    } catch (error) {
      throw installAfterSetAsideFailed(verdict, supersededDir, error);
    }
    return { kind: 'forced', fingerprint: verdict.published, supersededDir };
  });
}

// ---------------------------------------------------------------------------------------
// first controller

/**
 * The first controller of a deployment: mints ASIDE (in memory), publishes create-only, and
 * installs locally only after the publish succeeded. If another controller published first,
 * the mint is discarded and the winner is adopted — two controllers racing on a fresh
 * deployment always end with ONE authority, never one each.
 */
export async function firstController(
  ctx: ShareContext,
  options: { readonly seen?: Verdict } = {},
): Promise<Outcome> {
  return withAuthorityLock(ctx.stateDir, async () => {
    const now = await lookLocked(ctx);
    const failure = storeFailure(now);
    if (failure) throw failure;
    // Someone published between the look and the lock: that is the race lost early, and the
    // answer is the same as losing it at the put — adopt the winner.
    if (now.verdict.kind === 'adopt' && !now.verdict.lostMarker) return adoptWinner(ctx, now);
    if (options.seen !== undefined && !sameVerdict(options.seen, now.verdict))
      throw changedError(ctx, options.seen, now.verdict);
    if (now.verdict.kind !== 'first-controller') throw notAllowedError(ctx, 'first-controller', now.verdict);
    refuseUnstatedSeal(ctx);
    refuseClockOff(ctx.store, ctx.clock);
    const files = await mintAuthority(ctx.deployment, { clock: ctx.clock });
    const fingerprint = await fingerprintOf(files, ctx.deployment);
    const body = await encodeDocument(
      {
        format: DOCUMENT_FORMAT,
        deployment: ctx.deployment,
        fingerprint,
        previousFingerprint: null,
        publishedAt: new OutsideText(ctx.clock.now().toISOString()),
        publishedBy: new OutsideText(ctx.host),
      },
      files,
      ctx.sealKey,
    );
    await ctx.beforeWrite?.();
    try {
      await ctx.store.put(body, { kind: 'create-only' });
    } catch (error) {
      // The SDK retried a write whose answer was lost and met its own object (412): that is
      // this host's publish, not a race lost — adopting "the winner" would adopt itself.
      const found = mayHaveBeenApplied(error) ? await reread(ctx.store, body) : undefined;
      if (found?.kind !== 'ours') {
        if (found && answerLost(error)) {
          // Another controller's document is there: the race was lost while the answer was; adopt it.
          if (found.kind === 'other') return adoptWinner(ctx, await lookLocked(ctx));
          throw lostAnswerError(ctx.store.location, error as BatonError, found);
        }
        if (!(isBatonError(error) && error.code === 'store-changed')) throw publishFailed(ctx, error);
        // Lost the race: the mint is dropped here and never touched disk.
        return adoptWinner(ctx, await lookLocked(ctx));
      }
    }
    try {
      await installAuthority(ctx.stateDir, ctx.deployment, files, fingerprint);
    } catch (error) {
      throw installAfterPublishFailed(ctx, fingerprint, error);
    }
    return { kind: 'first-controller', fingerprint, wonRace: true };
  });
}

async function adoptWinner(ctx: ShareContext, now: Look): Promise<Outcome> {
  if (now.verdict.kind !== 'adopt') throw notAllowedError(ctx, 'adopt', now.verdict);
  const adopted = await adoptLocked(ctx, now);
  if (adopted.kind !== 'installed') throw notAllowedError(ctx, 'adopt', now.verdict);
  return { kind: 'first-controller', fingerprint: adopted.fingerprint, wonRace: false };
}

// ---------------------------------------------------------------------------------------
// retire in the store

export type RetirePublishedOutcome =
  /** The published document carried the retired pair; it now carries this host's one pair. */
  | { readonly kind: 'dropped'; readonly previous: Fingerprint; readonly etag: string }
  /** The published document already carries no previous pair. */
  | { readonly kind: 'clean' }
  /** The document is not this host's current authority (or this host is mid-operation): left alone. */
  | {
      readonly kind: 'left';
      readonly why: string;
      /** The store is behind this host (it rotated and has not published): the push is what it needs. */
      readonly storeBehind?: true;
    };

/**
 * THE STORE'S COPY FOLLOWS RETIRE. After `ca retire`, a document that still carries the retired
 * pair would hand it to the next host that adopts (billet then serves with a key retired
 * perhaps because it leaked). When the document is this host's current authority (in sync)
 * and this host holds no previous pair any more, it is re-published with the one pair,
 * if-match on the ETag read under the lock. Anything else is left as it is and said.
 */
export async function retirePublished(
  ctx: ShareContext,
  /** The 8 characters after `SHA256:` of the previous fingerprint the operator confirmed. */
  confirm: string | undefined,
): Promise<RetirePublishedOutcome> {
  return underLock(ctx, undefined, async ({ local, published, verdict }) => {
    if (published.state !== 'present' || verdict.kind !== 'in-sync' || local.state !== 'whole') {
      const behind = verdict.kind === 'refuse' && verdict.lineage.kind === 'ahead';
      return {
        kind: 'left',
        why: verdictSentence(verdict),
        ...(behind ? { storeBehind: true as const } : {}),
      };
    }
    const retired = published.header.previousFingerprint;
    if (retired === null) return { kind: 'clean' };
    if (local.previous !== undefined)
      return { kind: 'left', why: `This host still holds the previous authority ${retired}.` };
    // Bound like the local delete: the value names the pair dropped from the store, read now.
    if (confirm === undefined || typedMatch(confirm, confirmationPrefix(retired)) !== 'match')
      throw retireInStoreUnconfirmed(ctx.store.location, retired, confirm);
    if (publishedSealedWithoutKey(published, ctx.sealKey))
      throw unsealRefusal(ctx.store.location, 'ca retire');
    refuseUnstatedSeal(ctx);
    const { body } = await encodeLocalAuthority(ctx, local);
    await ctx.beforeWrite?.();
    const { etag } = await putDocument(
      ctx,
      body,
      { kind: 'if-match', etag: published.etag },
      bodyReadFor(published),
    );
    return { kind: 'dropped', previous: retired, etag };
  });
}

// ---------------------------------------------------------------------------------------
// leave

/** Changes nothing, takes no lock: the answer for "not now". */
export function leave(verdict: Verdict): Outcome {
  return { kind: 'left', why: `${verdictSentence(verdict)} Nothing was changed.` };
}

/** Verdicts are data; equal data is the same decision. */
export function sameVerdict(a: Verdict, b: Verdict): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * A conditional write that survives a lost response: after a failed precondition, or a
 * failure that may have happened after the store applied the write, the object is re-read and
 * the exact bytes written here count as success. The document carries published_at and (when
 * sealed) a fresh nonce, so another controller's write is never byte-identical to this one.
 */
async function putDocument(
  ctx: ShareContext,
  body: Uint8Array,
  precondition: Parameters<Store['put']>[1],
  /** The bytes the decision read (a replace): a refused If-Match over these same bytes is an unstable ETag, not a change. */
  readBody?: Uint8Array,
): Promise<{ readonly etag: string }> {
  try {
    return await ctx.store.put(body, precondition);
  } catch (error) {
    if (mayHaveBeenApplied(error)) {
      const found = await reread(ctx.store, body);
      if (found.kind === 'ours') return { etag: found.etag };
      if (answerLost(error)) throw lostAnswerError(ctx.store.location, error as BatonError, found);
      if (precondition?.kind === 'if-match' && found.kind === 'other' && sameBytes(found.body, readBody))
        throw etagUnstableError(ctx, error);
    }
    throw publishFailed(ctx, error);
  }
}

/**
 * A 412/409, or a connection that failed after the request may have reached the store (cut
 * short, timed out) — not a refusal by the store's rules, which certainly wrote nothing.
 */
function mayHaveBeenApplied(error: unknown): boolean {
  if (!isBatonError(error)) return true;
  if (error.code === 'store-changed') return true;
  return error.code === 'failed' && (error.reason === 'cut-short' || error.reason === 'timed-out');
}

/** The fingerprint of the current pair in `files`, checked exactly as the reader checks it. */
async function fingerprintOf(files: AuthorityFiles, deployment: string): Promise<Fingerprint> {
  const key = files['ca.key'];
  const cert = files['ca.crt'];
  if (!key || !cert) {
    throw missingPairFileError(key ? 'ca.crt' : 'ca.key');
  }
  return (await checkPair(key, cert, deployment, 'the authority being published (ca.key + ca.crt)'))
    .fingerprint;
}
