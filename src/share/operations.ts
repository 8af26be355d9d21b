/**
 * The actions of DESIGN.md §5 — publish, adopt, force, first controller, leave — as UI-free
 * functions that `baton sync` and the console's failover flow both call. Each returns an
 * Outcome or throws a BatonError.
 *
 * EVERY ACTION RE-DECIDES INSIDE THE LOCK. What the operator looked at (`seen`) was read
 * before ca.lock was taken; another process may have rotated, adopted or published since.
 * Acting on that stale look could install over a host that meanwhile became whole, or set
 * aside an authority the operator never saw — so each action takes the lock, re-reads both
 * sides, decides again, and refuses (saying what changed) when the verdict moved.
 */
import {
  checkPair,
  installAuthority,
  layoutOf,
  mintAuthority,
  readAuthorityFiles,
  readLocalAuthority,
  setAsideAuthority,
  snapshotLocalAuthority,
  withAuthorityLock,
  type AuthorityFiles,
  type Clock,
  type LocalAuthority,
} from '../authority/index.js';
import { BatonError, isBatonError } from '../errors.js';
import { isStoreChangedReason, STORE_CHANGED_WORDS } from '../store/store-changed.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import type { Store } from '../store/store.js';
import { PLAIN_SUGGESTER, suggest, type Suggester } from '../suggest-command.js';
import { allowedActions, decide } from './decide.js';
import { isOurOwnWrite, publishedSealedWithoutKey, unsealRefusal } from './publish-guards.js';
import { encodeDocument } from './document.js';
import { openPublished, readPublished } from './published.js';
import { refuseTamperedHandover, signHandover } from './handover.js';
import { lineageWords, verdictSentence } from './verdict-words.js';
import { DOCUMENT_FORMAT, type Action, type DocumentHeader, type Outcome, type PublishedAuthority, type Verdict } from './types.js';

/** Everything an action needs, built once by the composition root (CLI or console). */
export interface ShareContext {
  readonly stateDir: string;
  readonly deployment: string;
  readonly store: Store;
  /** The 32-byte seal key when the deployment seals its document (seal_key_file). */
  readonly sealKey?: Uint8Array;
  readonly clock: Clock;
  /** This host's name, written into the document as published_by (diagnostic only). */
  readonly host: string;
  /**
   * The one builder of suggested commands (src/suggest-command.ts), with the global flags the
   * operator gave: a next step written as a bare `baton sync` would read another config and
   * act on another host. Default: plain `baton`.
   */
  readonly suggester?: Suggester;
}

/** A command to suggest, through the one builder. */
function cmd(ctx: Pick<ShareContext, 'suggester'>, args: string): string {
  return suggest(ctx.suggester ?? PLAIN_SUGGESTER, args);
}

/** Both sides as read, and the verdict of the table on them. */
export interface Look {
  readonly local: LocalAuthority;
  readonly published: PublishedAuthority;
  readonly verdict: Verdict;
}

const NOTHING_WRITTEN = 'Nothing was written.';

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
  const published = refuseTamperedHandover(local, await readPublished(ctx.store, ctx.deployment, ctx.sealKey));
  return { local, published, verdict: decide(local, published) };
}

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
 * Runs an action under ca.lock on a fresh look. When the caller passes the verdict the
 * operator saw, a different verdict now is refused: the operator agreed to THAT action on
 * THOSE fingerprints, not to whatever the store or disk holds a moment later.
 */
async function underLock<T>(ctx: ShareContext, seen: Verdict | undefined, act: (now: Look) => Promise<T>): Promise<T> {
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
}

/**
 * Writes this host's authority into the store. Create-only when nothing is published; over a
 * different document ONLY when this host is AHEAD (it rotated away from the published one),
 * with if-match on the ETag read for this decision. Never a blind overwrite: a failed
 * precondition is 'store-changed' (exit 6) and nothing was overwritten.
 */
export async function publish(ctx: ShareContext, options: PublishOptions = {}): Promise<Outcome> {
  return underLock(ctx, options.seen, async ({ local, published, verdict }) => {
    const overAhead = verdict.kind === 'refuse' && verdict.lineage.kind === 'ahead';
    if (verdict.kind !== 'publish' && !overAhead) throw notAllowedError(ctx, 'publish', verdict);
    if (local.state !== 'whole') throw notAllowedError(ctx, 'publish', verdict);
    if (publishedSealedWithoutKey(published, ctx.sealKey) && !options.unseal) throw unsealRefusal(ctx.store.location, cmd(ctx, 'sync --push'));
    const { body, fingerprint } = await encodeLocalAuthority(ctx, local);
    const precondition =
      published.state === 'present' ? { kind: 'if-match' as const, etag: published.etag } : { kind: 'create-only' as const };
    const { etag } = await putDocument(ctx, body, precondition);
    return { kind: 'published', fingerprint, etag };
  });
}

/**
 * This host's whole authority as a document: the files read under the lock, checked to be
 * the pair that was decided on, sealed when this host has the seal key.
 */
async function encodeLocalAuthority(
  ctx: ShareContext,
  local: Extract<LocalAuthority, { state: 'whole' }>,
): Promise<{ readonly body: Uint8Array; readonly fingerprint: Fingerprint }> {
  {
    const files = await readAuthorityFiles(ctx.stateDir, ctx.deployment);
    // The header must describe the files it carries: an adopter checks exactly that and would
    // refuse the document, after it had already replaced the good one in the store.
    const carried = await fingerprintOf(files, ctx.deployment);
    if (carried !== local.current.fingerprint) {
      throw new BatonError('failed', {
        what: `The authority files read for publishing are ${carried}, not the ${local.current.fingerprint} that was decided on.`,
        where: layoutOf(ctx.stateDir).caDir,
        changed: 'Nothing was published.',
        next: `Something changed ca/ without taking ca.lock; look at it (\`${cmd(ctx, 'ca show')}\`) and run sync again.`,
      });
    }
    const header: DocumentHeader = {
      format: DOCUMENT_FORMAT,
      deployment: ctx.deployment,
      fingerprint: local.current.fingerprint,
      // During a rotation overlap the previous pair travels with the document, so a
      // controller left behind can be diagnosed as such and nodes keep verifying.
      previousFingerprint: local.previous?.fingerprint ?? null,
      publishedAt: ctx.clock.now().toISOString(),
      publishedBy: ctx.host,
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
    if (options.seen !== undefined && !sameVerdict(options.seen, verdict)) throw changedError(ctx, options.seen, verdict);
    const refusal = replaceUnreadableRefusal(ctx, now);
    if (refusal) throw refusal;
    if (local.state !== 'whole' || published.state !== 'unreadable' || published.etag === undefined) throw replaceNotAllowed(ctx, now);
    if (published.sealed && !ctx.sealKey && !options.unseal) throw unsealRefusal(ctx.store.location, cmd(ctx, 'sync --replace-unreadable'));
    const { body, fingerprint } = await encodeLocalAuthority(ctx, local);
    const { etag } = await putDocument(ctx, body, { kind: 'if-match', etag: published.etag });
    return { kind: 'published', fingerprint, etag };
  });
}

/**
 * Why `sync --replace-unreadable` may not run on this look, or undefined when it may: callers
 * check it BEFORE taking the lock, so a refused run creates nothing.
 */
export function replaceUnreadableRefusal(ctx: ShareContext, look: Look): BatonError | undefined {
  const { local, published } = look;
  if (local.state === 'whole' && published.state === 'unreadable' && published.problem === 'unusable' && published.etag !== undefined) return undefined;
  return replaceNotAllowed(ctx, look);
}

function replaceNotAllowed(ctx: ShareContext, { local, published, verdict }: Look): BatonError {
  if (published.state === 'unreadable' && published.problem === 'foreign-deployment') {
    return new BatonError('refused', {
      what: `The published document is a valid document of another deployment; replacing it would destroy that fleet's authority. ${published.error.what}`,
      where: published.location,
      changed: NOTHING_WRITTEN,
      next: 'Check --store and --deployment (and baton.yaml): this host is pointed at the wrong store or deployment.',
    });
  }
  if (published.state === 'unreadable' && published.problem === 'newer-format') {
    return new BatonError('refused', {
      what: `The published document was written by a newer baton; replacing it would downgrade the fleet. ${published.error.what}`,
      where: published.location,
      changed: NOTHING_WRITTEN,
      next: 'Upgrade baton on this host, then look again.',
    });
  }
  if (published.state === 'unreadable' && (published.problem ?? 'could-not-read') === 'could-not-read') return published.error;
  if (local.state !== 'whole' && published.state === 'unreadable') {
    return new BatonError('refused', {
      what: 'This host holds no whole authority to replace the unusable document with.',
      where: layoutOf(ctx.stateDir).caDir,
      changed: NOTHING_WRITTEN,
      next: verdict.kind === 'blocked' ? verdict.next : 'Run it on a controller that holds the deployment\'s authority.',
    });
  }
  return notAllowedError(ctx, 'publish', verdict);
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

async function adoptLocked(ctx: ShareContext, { published, verdict }: Look): Promise<Outcome> {
  switch (verdict.kind) {
    case 'first-controller':
    case 'publish':
      return { kind: 'nothing-published' };
    case 'in-sync':
      return { kind: 'already-held', fingerprint: verdict.fingerprint };
    case 'adopt': {
      if (published.state !== 'present') throw notAllowedError(ctx, 'adopt', verdict);
      refuseOutsideValidity(ctx, published);
      const files = await openPublished(ctx.store, ctx.deployment, ctx.sealKey, published);
      await installAuthority(ctx.stateDir, ctx.deployment, files, verdict.published);
      return { kind: 'installed', fingerprint: verdict.published };
    }
    case 'refuse':
      throw refusalError(ctx, verdict);
    case 'blocked':
      throw blockedError(verdict);
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
    if (verdict.kind !== 'refuse' || published.state !== 'present') throw notAllowedError(ctx, 'force', verdict);
    refuseOutsideValidity(ctx, published);
    const files = await openPublished(ctx.store, ctx.deployment, ctx.sealKey, published);
    const at = options.at;
    const supersededDir = await setAsideAuthority(ctx.stateDir, at ? { now: () => at } : ctx.clock);
    try {
      await installAuthority(ctx.stateDir, ctx.deployment, files, verdict.published);
    } catch (error) {
      throw new BatonError('failed', {
        what: `The old authority ${verdict.local} was set aside, but installing the published ${verdict.published} failed: ${causeOf(error)}`,
        where: verdict.caDir,
        changed: `The old authority is intact in ${supersededDir} (with its marker); ${verdict.caDir} may hold a partial install.`,
        next: `Look at ${verdict.caDir}; to go back, move it away and rename ${supersededDir} to ${verdict.caDir} (and its .authority-created to authority-created).`,
        cause: error,
      });
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
export async function firstController(ctx: ShareContext, options: { readonly seen?: Verdict } = {}): Promise<Outcome> {
  return withAuthorityLock(ctx.stateDir, async () => {
    const now = await lookLocked(ctx);
    const failure = storeFailure(now);
    if (failure) throw failure;
    // Someone published between the look and the lock: that is the race lost early, and the
    // answer is the same as losing it at the put — adopt the winner.
    if (now.verdict.kind === 'adopt' && !now.verdict.lostMarker) return adoptWinner(ctx, now);
    if (options.seen !== undefined && !sameVerdict(options.seen, now.verdict)) throw changedError(ctx, options.seen, now.verdict);
    if (now.verdict.kind !== 'first-controller') throw notAllowedError(ctx, 'first-controller', now.verdict);
    const files = await mintAuthority(ctx.deployment, { clock: ctx.clock });
    const fingerprint = await fingerprintOf(files, ctx.deployment);
    const body = await encodeDocument(
      {
        format: DOCUMENT_FORMAT,
        deployment: ctx.deployment,
        fingerprint,
        previousFingerprint: null,
        publishedAt: ctx.clock.now().toISOString(),
        publishedBy: ctx.host,
      },
      files,
      ctx.sealKey,
    );
    try {
      await ctx.store.put(body, { kind: 'create-only' });
    } catch (error) {
      // The SDK retried a write whose answer was lost and met its own object (412): that is
      // this host's publish, not a race lost — adopting "the winner" would adopt itself.
      const ours = mayHaveBeenApplied(error) ? await isOurOwnWrite(ctx.store, body) : undefined;
      if (!ours) {
        if (!(isBatonError(error) && error.code === 'store-changed')) throw publishFailed(ctx, error);
        // Lost the race: the mint is dropped here and never touched disk.
        return adoptWinner(ctx, await lookLocked(ctx));
      }
    }
    try {
      await installAuthority(ctx.stateDir, ctx.deployment, files, fingerprint);
    } catch (error) {
      throw new BatonError('failed', {
        what: `The new authority ${fingerprint} was published, but installing it on this host failed: ${causeOf(error)}`,
        where: layoutOf(ctx.stateDir).caDir,
        changed: `The store at ${ctx.store.location} holds ${fingerprint}; this host may hold a partial install.`,
        next: `Fix what the message names, clear the partial files from ca/, and run \`${cmd(ctx, 'sync')}\` to adopt the published authority.`,
        cause: error,
      });
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
// leave

/** Changes nothing, takes no lock: the answer for "not now". */
export function leave(verdict: Verdict): Outcome {
  return { kind: 'left', why: `${describeVerdict(verdict)} Nothing was changed.` };
}

// ---------------------------------------------------------------------------------------
// words

/** One sentence per verdict: the table's words (./verdict-words.ts) with fingerprints. */
export const describeVerdict = verdictSentence;

export { lineageWords };

/** One full sentence per outcome, the way sync prints it and the console's summary shows it. */
export function describeOutcome(ctx: Pick<ShareContext, 'stateDir' | 'store' | 'deployment'>, outcome: Outcome): string {
  const { caDir } = layoutOf(ctx.stateDir);
  switch (outcome.kind) {
    case 'nothing-published':
      return `Nothing is published for deployment ${ctx.deployment} at ${ctx.store.location}; nothing was installed.`;
    case 'installed':
      return `This host had no authority; it adopted ${outcome.fingerprint} from ${ctx.store.location} into ${caDir}.`;
    case 'already-held':
      return `This host already holds the published authority ${outcome.fingerprint}; nothing was changed.`;
    case 'published':
      return `Published this host's authority ${outcome.fingerprint} to ${ctx.store.location}.`;
    case 'first-controller':
      return outcome.wonRace
        ? `This host is the first controller of deployment ${ctx.deployment}: it minted ${outcome.fingerprint}, published it to ${ctx.store.location}, then installed it in ${caDir}.`
        : `Another controller published first: this host discarded its own new authority and adopted ${outcome.fingerprint} from ${ctx.store.location} into ${caDir}.`;
    case 'forced':
      return `The old authority was set aside in ${outcome.supersededDir} (nothing was deleted); the published ${outcome.fingerprint} is now installed in ${caDir}.`;
    case 'left':
      return outcome.why;
  }
}

/**
 * REFUSE: names both fingerprints, the lineage in words and the ca/ path, because the file a
 * replace would move is the key every node in the fleet verifies against.
 */
export function refusalError(ctx: Pick<ShareContext, 'store' | 'suggester'>, verdict: Extract<Verdict, { kind: 'refuse' }>): BatonError {
  const force = cmd(ctx, 'sync --force');
  const push = cmd(ctx, 'sync --push');
  const lineage = verdict.lineage;
  const claimed =
    lineage.kind === 'left-behind' && lineage.proof.kind === 'claimed'
      ? 'The rotation is only claimed: confirm with whoever runs the other controller that it rotated (anyone who can write the store can mint a CA naming this host). '
      : '';
  // Sealed and no key here: force cannot open the published files, and a push must not
  // unseal by accident — the next step is the key, or an unseal on purpose.
  const next = verdict.sealedWithoutKey
    ? {
        'left-behind': `${claimed}The published authority is sealed and this host has no seal key: set seal_key_file to the key the other controllers use, then \`${force}\` sets ${verdict.caDir} aside and adopts it.`,
        ahead: `The published authority is sealed and this host has no seal key: set seal_key_file, then \`${push}\`; or stop sealing on purpose with \`${push} --unseal\`.`,
        siblings: `Decide which of the two rotations the fleet keeps. The published authority is sealed and this host has no seal key: keeping the published one needs seal_key_file, then \`${force}\`; baton never publishes over a sibling.`,
        unrelated: `Check the deployment id and the store first. The published authority is sealed and this host has no seal key: replacing this host's needs seal_key_file, then \`${force}\`.`,
      }[lineage.kind]
    : {
        'left-behind': `${claimed}If this host should follow the rotation, replace it on purpose: \`${force}\` sets ${verdict.caDir} aside as ca.superseded-<UTC stamp> and adopts the published authority.`,
        ahead: `Publish this host's authority with \`${push}\`, or, if the published one must win, replace this host's on purpose with \`${force}\`.`,
        siblings: `Decide which of the two rotations the fleet keeps. To keep the published one, replace this host's on purpose with \`${force}\` (it sets ${verdict.caDir} aside as ca.superseded-<UTC stamp>); baton never publishes over a sibling.`,
        unrelated: `Check the deployment id and the store first. Only if you are sure the published authority is the fleet's, replace this host's on purpose with \`${force}\`.`,
      }[lineage.kind];
  return new BatonError('refused', {
    what: `This host's authority differs from the published one. Local: ${verdict.local}. Published: ${verdict.published}. Diagnosis: ${lineageWords(verdict.lineage)}`,
    where: `${verdict.caDir} (local); ${ctx.store.location} (published)`,
    changed: NOTHING_WRITTEN,
    next,
  });
}

export function blockedError(verdict: Extract<Verdict, { kind: 'blocked' }>): BatonError {
  return new BatonError('refused', { what: `Blocked: ${verdict.why}`, changed: NOTHING_WRITTEN, next: verdict.next });
}

const ACTION_WORDS: Record<Action, string> = {
  'first-controller': 'become the first controller',
  adopt: 'adopt the published authority',
  publish: 'publish',
  force: 'replace the local authority',
  leave: 'leave things as they are',
};

/** The action is not one the table allows for this verdict: the verdict's own refusal. */
function notAllowedError(ctx: ShareContext, action: Action, verdict: Verdict): BatonError {
  if (verdict.kind === 'blocked') return blockedError(verdict);
  if (verdict.kind === 'refuse' && action !== 'force') {
    const refusal = refusalError(ctx, verdict);
    if (action !== 'publish') return refusal;
    return new BatonError('refused', {
      what: `Publishing over the published authority is allowed only when this host is ahead of it. ${refusal.what}`,
      where: refusal.where ?? verdict.caDir,
      changed: NOTHING_WRITTEN,
      next: refusal.next ?? '',
    });
  }
  return new BatonError('refused', {
    what: `Cannot ${ACTION_WORDS[action]}: ${describeVerdict(verdict)}`,
    where: layoutOf(ctx.stateDir).caDir,
    changed: NOTHING_WRITTEN,
    next: `Allowed now: ${allowedActions(verdict).map((a) => ACTION_WORDS[a]).join(', ')}.`,
  });
}

/** The verdict moved between the look and the lock: say from what to what. */
function changedError(ctx: ShareContext, seen: Verdict, now: Verdict): BatonError {
  const publishedMoved = publishedSide(seen) !== publishedSide(now);
  return new BatonError(publishedMoved ? 'store-changed' : 'refused', {
    what: `${publishedMoved ? 'The store' : 'This host\'s authority'} changed since you looked. Then: ${describeVerdict(seen)} Now: ${describeVerdict(now)}`,
    where: publishedMoved ? ctx.store.location : layoutOf(ctx.stateDir).caDir,
    changed: 'Nothing was overwritten.',
    next: 'Re-read and decide again.',
  });
}

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
async function putDocument(ctx: ShareContext, body: Uint8Array, precondition: Parameters<Store['put']>[1]): Promise<{ readonly etag: string }> {
  try {
    return await ctx.store.put(body, precondition);
  } catch (error) {
    if (mayHaveBeenApplied(error)) {
      const ours = await isOurOwnWrite(ctx.store, body);
      if (ours) return ours;
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

/** A failed precondition keeps its own code (exit 6) with the words an operator acts on. */
function publishFailed(ctx: ShareContext, error: unknown): BatonError {
  if (isBatonError(error) && error.code === 'store-changed') {
    const why = isStoreChangedReason(error.reason) ? STORE_CHANGED_WORDS[error.reason] : 'another controller wrote in between';
    return new BatonError('store-changed', {
      what: `The store changed since you looked (${why}).`,
      ...(error.reason === undefined ? {} : { reason: error.reason }),
      where: ctx.store.location,
      changed: 'Nothing was overwritten.',
      next: `Re-read and decide again (run \`${cmd(ctx, 'sync')}\` again, or refresh the console).`,
      cause: error,
    });
  }
  if (isBatonError(error)) return error;
  return new BatonError('failed', {
    what: `Publishing failed: ${error instanceof Error ? error.message : String(error)}`,
    where: ctx.store.location,
    changed: 'Nothing was published; this host is unchanged.',
    next: 'Check the store and try again.',
    cause: error,
  });
}

/** The fingerprint of the current pair in `files`, checked exactly as the reader checks it. */
async function fingerprintOf(files: AuthorityFiles, deployment: string): Promise<Fingerprint> {
  const key = files['ca.key'];
  const cert = files['ca.crt'];
  if (!key || !cert) {
    throw new BatonError('failed', {
      what: `The authority's ${key ? 'ca.crt' : 'ca.key'} is missing from the files read for publishing.`,
      changed: 'Nothing was published.',
      next: 'Look at ca/ (`baton ca show`) and run sync again.',
    });
  }
  return (await checkPair(key, cert, deployment, 'the authority being published (ca.key + ca.crt)')).fingerprint;
}

/**
 * A published authority outside its validity is refused BEFORE anything is installed or set
 * aside: every node would reject a control plane presenting it, and installing it would turn
 * that outage into a screen that says "in sync". The decoder accepts it on purpose, so a
 * controller that has rotated can still publish over it (`sync --push`). Certificates are
 * back-dated an hour when minted, so ordinary clock skew between controllers never trips this.
 */
function refuseOutsideValidity(ctx: ShareContext, published: Extract<PublishedAuthority, { state: 'present' }>): void {
  const current = published.current;
  if (current === undefined) return;
  const now = ctx.clock.now().getTime();
  if (current.notAfter.getTime() <= now) {
    throw new BatonError('refused', {
      what: `The published authority ${published.header.fingerprint} expired on ${current.notAfter.toISOString()}; installing it would leave this host presenting a certificate no node accepts.`,
      where: ctx.store.location,
      changed: NOTHING_WRITTEN,
      next: 'Rotate the authority on the controller that holds it (`baton ca rotate`, then `baton sync --push`), then run this again.',
    });
  }
  if (current.notBefore.getTime() > now) {
    throw new BatonError('refused', {
      what: `The published authority ${published.header.fingerprint} is not valid until ${current.notBefore.toISOString()}; this host's clock says ${new Date(now).toISOString()}.`,
      where: ctx.store.location,
      changed: NOTHING_WRITTEN,
      next: "Check this host's clock and the publishing controller's (NTP); nodes would reject the authority until then.",
    });
  }
}

function causeOf(error: unknown): string {
  return isBatonError(error) ? error.what : error instanceof Error ? error.message : String(error);
}
