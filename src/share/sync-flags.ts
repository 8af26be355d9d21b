/**
 * FLAGS MEAN ONE THING: which `baton sync` flag applies to which verdict of the decision table
 * (decide.ts). --first-controller applies to an empty store and a fresh host, --force to a
 * refusal, --push to a refusal where this host is not proved BEHIND (plainly when it is ahead,
 * bound to the published fingerprint otherwise), --replace-unreadable to a document that was
 * read and cannot be used, --unseal to replacing a sealed document without the key. Which of
 * them needs `--confirm` and with what is `syncBindings` (confirm-binding.ts). Anywhere else the flag is a usage error (exit 2) naming the verdict and what
 * sync would have done — checked before the lock: a flag that meant "replace" must never
 * quietly publish, and a refused run creates nothing.
 */
import { nextStep } from '../next-step.js';
import { BatonError } from '../errors.js';
import {
  forceBinding,
  forceResumeBinding,
  pushOverBinding,
  replaceBinding,
  UNSEAL_BINDING,
  type Binding,
} from './confirm-binding.js';
import { unsealRefusal } from './publish-guards.js';
import { replaceUnreadableRefusal } from './refusals.js';
import { neverPushedOver, provedBehind, pushesOver } from './decide.js';
import type { ShareContext } from './share-context.js';
import type { Look, Verdict } from './types.js';
import type { ResumableForce } from './partial-install.js';
import { confirmationPrefix } from '../pki/fingerprint-type.js';
import { verdictSentence } from './verdict-words.js';

export interface SyncActionFlags {
  readonly firstController?: boolean;
  readonly push?: boolean;
  readonly force?: boolean;
  readonly replaceUnreadable?: boolean;
  readonly unseal?: boolean;
  /** The `--confirm` values given: a push over a sibling without one is a usage error (exit 2). */
  readonly confirm?: readonly string[];
}

/** Two flags that each ask for a different action: refused before anything is read. */
export function conflictingFlags(flags: SyncActionFlags): BatonError | undefined {
  const chosen = (['firstController', 'force', 'push', 'replaceUnreadable'] as const).filter((f) => flags[f]);
  if (chosen.length <= 1) return undefined;
  return new BatonError('usage', {
    what: `${chosen.map(flagName).join(' and ')} ask for different things; each applies to one verdict only.`,
    next: ['Choose one (run ', nextStep('status'), ' to see the verdict).'],
    changed: 'Nothing was read or written.',
  });
}

type FlagName = 'firstController' | 'force' | 'push' | 'replaceUnreadable' | 'unseal';

function flagName(flag: FlagName): string {
  return flag === 'replaceUnreadable'
    ? '--replace-unreadable'
    : flag === 'firstController'
      ? '--first-controller'
      : `--${flag}`;
}

/** What plain `sync` does on this verdict, for the usage error of a flag that does not apply. */
function withoutFlags(verdict: Verdict): string {
  switch (verdict.kind) {
    case 'first-controller':
      return 'refuse: nothing is published, and minting a first authority is asked for with --first-controller only';
    case 'adopt':
      return `adopt the published ${verdict.published}`;
    case 'publish':
      return `publish this host's ${verdict.local}`;
    case 'in-sync':
      return 'change nothing';
    case 'refuse':
      return 'refuse and change nothing';
    case 'blocked':
      return `refuse (${verdictSentence(verdict)})`;
  }
}

/** Exit 2 when a flag does not apply to the verdict; exit 3 for a replace that must never happen. */
export function checkSyncFlags(
  share: ShareContext,
  seen: Look,
  flags: SyncActionFlags,
  /** The authorities a force cut short set aside, when this is its state (partial-install.ts forceResumable). */
  resumable: readonly ResumableForce[] = [],
): void {
  const { verdict } = seen;
  const misuse = (flag: FlagName, appliesTo: string) =>
    new BatonError('usage', {
      what: `${flagName(flag)} applies only ${appliesTo}. Here: ${verdictSentence(verdict)}`,
      where: share.store.location,
      changed: 'Nothing was written.',
      next: [
        `Without ${flagName(flag)}, sync would ${withoutFlags(verdict)}: run `,
        nextStep('sync'),
        ' for that, or ',
        nextStep('status'),
        ' to look first.',
      ],
    });
  // Another controller publishing first is the race a first controller can lose: it adopts
  // the winner, exactly as the action does when it loses at the create-only write.
  const raceLost = verdict.kind === 'adopt' && !verdict.lostMarker;
  // A near miss is the rule refusing the mint (exit 3), not a flag out of place: the store URL
  // is what is wrong, and saying "usage" would invite a retry with the same typo.
  if (flags.firstController && verdict.kind === 'blocked' && verdict.nearMiss)
    throw nearMissRefusal(verdict, share.store.location);
  if (flags.firstController && verdict.kind !== 'first-controller' && !raceLost) {
    throw misuse('firstController', 'when nothing is published and this host holds no authority');
  }
  // A force cut short, run again as typed, finishes what it began (bound to what it set aside).
  if (flags.force && verdict.kind !== 'refuse' && resumable.length === 0)
    throw misuse(
      'force',
      'when sync refuses (this host holds a different authority than the published one), or to finish a force that stopped part-way (an authority it set aside in ca.superseded-*, and ca/ holding nothing else than the published one)',
    );
  if (
    flags.push &&
    verdict.kind === 'refuse' &&
    verdict.lineage.kind === 'siblings' &&
    (flags.confirm ?? []).length === 0
  ) {
    // This host rotated from the parent, and meanwhile another controller published ITS
    // rotation of the same parent. A push without the bound value is a usage error (exit 2):
    // "the store changed, re-read" (exit 6) would send a script round the same refusal for
    // ever. Keeping this host's rotation instead is a decision of its own, bound to the
    // published fingerprint.
    const pushOver = nextStep('sync --push --confirm', {
      placeholders: [pushOverBinding(verdict.published).placeholder],
    });
    const force = nextStep('sync --force --confirm', {
      placeholders: [forceBinding(verdict.local).placeholder],
    });
    throw new BatonError('usage', {
      what: `Another controller published its own rotation (${verdict.published}) of ${verdict.lineage.parent}, the authority this host rotated from: the store changed since this host's rotation. ${verdictSentence(verdict)} A push over it needs --confirm with ${pushOverBinding(verdict.published).describe}; none was given.`,
      where: share.store.location,
      changed: 'Nothing was written.',
      next: [
        'Decide which of the two rotations the fleet keeps (',
        nextStep('status'),
        ' shows both): the published one with ',
        force,
        ", or this host's with ",
        pushOver,
        '.',
      ],
    });
  }
  if (flags.push && !(verdict.kind === 'refuse' && !neverPushedOver(verdict))) {
    throw misuse(
      'push',
      verdict.kind === 'refuse' && !provedBehind(verdict)
        ? "when the published authority is billet's rotation of this host's (its certificate's billet-replaces: claim; billet signs no handover): publishing over it would put back the authority billet retired"
        : verdict.kind === 'refuse'
          ? "when this host is not PROVED behind the published authority: the published one replaced this host's (signed with this host's own key) and is newer, so publishing over it would roll the fleet back"
          : 'when this host holds a different authority than the published one and is not proved behind it',
    );
  }
  if (flags.replaceUnreadable) {
    if (
      verdict.kind !== 'blocked' ||
      verdict.unreadable === undefined ||
      verdict.unreadable === 'could-not-read'
    ) {
      throw misuse('replaceUnreadable', 'when the published document was read and cannot be used');
    }
    // A valid document of another deployment, or one of a newer format: refused (exit 3).
    const refusal = replaceUnreadableRefusal(share, seen);
    if (refusal) throw refusal;
  }
  if (flags.push && verdict.kind === 'refuse' && verdict.sealedWithoutKey && !flags.unseal) {
    throw unsealRefusal(share.store.location, 'sync --push');
  }
  if (flags.unseal) {
    const sealed =
      (flags.push && verdict.kind === 'refuse' && verdict.sealedWithoutKey === true) ||
      (flags.replaceUnreadable &&
        seen.published.state === 'unreadable' &&
        seen.published.sealed === true &&
        share.sealKey === undefined);
    if (!sealed)
      throw misuse(
        'unseal',
        'with --push or --replace-unreadable, when the published document is sealed and this host has no seal key',
      );
  }
}

/** `--first-controller` on a near miss: refused naming where this deployment's document is. */
function nearMissRefusal(verdict: Extract<Verdict, { kind: 'blocked' }>, where: string): BatonError {
  return new BatonError('refused', {
    what: `--first-controller is refused: ${verdict.why}`,
    where,
    changed: 'Nothing was minted or written.',
    next: verdict.next,
    reason: 'near-miss',
  });
}

// Beside the decision table, which offers the push over on the same condition (failover).
export { pushesOver };

/**
 * The values the flags' irreversible steps are bound to, on this look (checkSyncFlags has
 * already refused a flag outside its verdict). Empty: nothing needs --confirm.
 */
export function syncBindings(
  seen: Look,
  flags: SyncActionFlags,
  resumable: readonly ResumableForce[] = [],
): readonly Binding[] {
  const { verdict, published } = seen;
  const bindings: Binding[] = [];
  if (flags.force && verdict.kind === 'refuse') bindings.push(forceBinding(verdict.local));
  const resuming =
    flags.force && verdict.kind !== 'refuse' ? forceResumed(resumable, flags.confirm) : undefined;
  if (resuming) bindings.push(forceResumeBinding(resuming.fingerprint, resuming.dir));
  if (flags.push && pushesOver(verdict) && verdict.kind === 'refuse')
    bindings.push(pushOverBinding(verdict.published));
  if (flags.replaceUnreadable && published.state === 'unreadable' && published.etag !== undefined)
    bindings.push(replaceBinding(published.etag));
  if (flags.unseal) bindings.push(UNSEAL_BINDING);
  return bindings;
}

/**
 * Which set-aside authority a re-run force is bound to: the one its --confirm names (the LOCAL 8
 * typed before the cut), else the newest — whose value a terminal then asks for, and whose
 * absence without one is the usual exit 2.
 */
export function forceResumed(
  resumable: readonly ResumableForce[],
  confirm: readonly string[] | undefined,
): ResumableForce | undefined {
  return resumable.find((r) => (confirm ?? []).includes(confirmationPrefix(r.fingerprint))) ?? resumable[0];
}
