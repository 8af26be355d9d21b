/**
 * FLAGS MEAN ONE THING: which `baton sync` flag applies to which verdict of the decision table
 * (decide.ts). --force applies to a refusal, --push to a host that is ahead, --replace-unreadable
 * to a document that was read and cannot be used, --unseal to replacing a sealed document
 * without the key. Anywhere else the flag is a usage error (exit 2) naming the verdict and what
 * sync would have done — checked before the lock: a flag that meant "replace" must never
 * quietly publish, and a refused run creates nothing.
 */
import { BatonError } from '../errors.js';
import { unsealRefusal } from './publish-guards.js';
import { replaceUnreadableRefusal } from './refusals.js';
import type { ShareContext } from './share-context.js';
import type { Look, Verdict } from './types.js';
import { verdictSentence } from './verdict-words.js';

export interface SyncActionFlags {
  readonly push?: boolean;
  readonly force?: boolean;
  readonly replaceUnreadable?: boolean;
  readonly unseal?: boolean;
}

/** Two flags that each ask for a different action: refused before anything is read. */
export function conflictingFlags(flags: SyncActionFlags): BatonError | undefined {
  const chosen = (['force', 'push', 'replaceUnreadable'] as const).filter((f) => flags[f]);
  if (chosen.length <= 1) return undefined;
  return new BatonError('usage', {
    what: `${chosen.map(flagName).join(' and ')} ask for different things; each applies to one verdict only.`,
    next: 'Choose one (run `baton status` to see the verdict).',
    changed: 'Nothing was read or written.',
  });
}

function flagName(flag: 'force' | 'push' | 'replaceUnreadable' | 'unseal'): string {
  return flag === 'replaceUnreadable' ? '--replace-unreadable' : `--${flag}`;
}

/** What plain `sync` does on this verdict, for the usage error of a flag that does not apply. */
function withoutFlags(verdict: Verdict): string {
  switch (verdict.kind) {
    case 'first-controller':
      return 'become the first controller (mint, publish create-only, install)';
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
export function checkSyncFlags(share: ShareContext, seen: Look, flags: SyncActionFlags): void {
  const { verdict } = seen;
  const misuse = (flag: 'force' | 'push' | 'replaceUnreadable' | 'unseal', appliesTo: string) =>
    new BatonError('usage', {
      what: `${flagName(flag)} applies only ${appliesTo}. Here: ${verdictSentence(verdict)}`,
      where: share.store.location,
      changed: 'Nothing was written.',
      next: `Without ${flagName(flag)}, sync would ${withoutFlags(verdict)}: run \`baton sync\` for that, or \`baton status\` to look first.`,
    });
  if (flags.force && verdict.kind !== 'refuse') throw misuse('force', 'when sync refuses (this host holds a different authority than the published one)');
  if (flags.push && verdict.kind === 'refuse' && verdict.lineage.kind === 'siblings') {
    // This host rotated from the parent, and meanwhile another controller published ITS
    // rotation of the same parent: the race for the publish was lost, which is the store
    // changing underneath (exit 6), not a misused flag.
    throw new BatonError('store-changed', {
      what: `Another controller published its own rotation (${verdict.published}) of ${verdict.lineage.parent}, the authority this host rotated from: the store changed since this host's rotation. ${verdictSentence(verdict)}`,
      where: share.store.location,
      changed: 'Nothing was written.',
      next: 'Decide which of the two rotations the fleet keeps: run `baton status` to see both.',
      reason: 'replaced',
    });
  }
  if (flags.push && !(verdict.kind === 'refuse' && verdict.lineage.kind === 'ahead')) {
    throw misuse('push', 'when this host is ahead of the published authority (it rotated away from it)');
  }
  if (flags.replaceUnreadable) {
    if (verdict.kind !== 'blocked' || verdict.unreadable === undefined || verdict.unreadable === 'could-not-read') {
      throw misuse('replaceUnreadable', 'when the published document was read and cannot be used');
    }
    // A valid document of another deployment, or one of a newer format: refused (exit 3).
    const refusal = replaceUnreadableRefusal(share, seen);
    if (refusal) throw refusal;
  }
  if (flags.push && verdict.kind === 'refuse' && verdict.sealedWithoutKey && !flags.unseal) {
    throw unsealRefusal(share.store.location, 'baton sync --push');
  }
  if (flags.unseal) {
    const sealed =
      (flags.push && verdict.kind === 'refuse' && verdict.sealedWithoutKey === true) ||
      (flags.replaceUnreadable && seen.published.state === 'unreadable' && seen.published.sealed === true && share.sealKey === undefined);
    if (!sealed) throw misuse('unseal', 'with --push or --replace-unreadable, when the published document is sealed and this host has no seal key');
  }
}
