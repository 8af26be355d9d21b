/**
 * `baton sync`'s decision as ONE operation: look, check the flags against the verdict, bind each
 * irreversible step to its value, then run the action the verdict and the flags choose — each
 * action re-deciding under ca.lock against what was seen (src/share/actions.ts). The command only
 * parses flags and supplies the two gates (`--confirm` or a terminal, --yes or the typed
 * deployment id); a test or another front end supplies its own and walks the same code.
 */
import { readSetAsideAuthorities } from '../authority/index.js';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { look } from '../share/actions.js';
import { describeOutcome } from '../share/action-words.js';
import type { Binding } from '../share/confirm-binding.js';
import { neighbourWords } from '../share/neighbours.js';
import { forceResumable, isStoppedInstall, type ResumableForce } from '../share/partial-install.js';
import { blockedError, refusalError, storeFailure } from '../share/refusals.js';
import type { ShareContext } from '../share/share-context.js';
import {
  checkSyncFlags,
  conflictingFlags,
  forceResumed,
  syncBindings,
  type SyncActionFlags,
} from '../share/sync-flags.js';
import type { Look, Outcome, Verdict } from '../share/types.js';
import { verdictSentence } from '../share/verdict-words.js';
import { runAction, type ActionRequest, type MintGate } from './share-action.js';

/**
 * The two gates a sync may pass through; the command decides how each is asked. Minting a first
 * authority is said, never inferred (--yes, or the typed deployment id: MintGate).
 */
export interface SyncGates extends MintGate {
  /** Every bound step's value (`--confirm`, or typed on a terminal); throws when not given. */
  confirmBound(bindings: readonly Binding[], explain: readonly string[]): Promise<void>;
}

/** What sync did, as the one sentence it prints. */
export interface SyncResult {
  readonly look: Look;
  readonly outcome: Outcome | undefined;
  readonly sentence: string;
}

export async function syncOperation(
  share: ShareContext,
  flags: SyncActionFlags,
  gates: SyncGates,
): Promise<SyncResult> {
  const conflict = conflictingFlags(flags);
  if (conflict) throw conflict;
  const seen = await look(share);
  const failure = storeFailure(seen);
  if (failure) throw failure;
  const { verdict } = seen;
  // A force cut short, run again as typed: what it set aside is how it is known.
  const resumable =
    flags.force && verdict.kind !== 'refuse'
      ? forceResumable(seen, await readSetAsideAuthorities(share.stateDir))
      : [];
  checkSyncFlags(share, seen, flags, resumable);
  // Every irreversible step is bound to a value read from the two sides, checked before the
  // lock: a wrong or missing value changes nothing.
  const resuming =
    flags.force && verdict.kind !== 'refuse' ? forceResumed(resumable, flags.confirm) : undefined;
  await gates.confirmBound(
    syncBindings(seen, flags, resumable),
    resuming ? resumeWords(seen, resuming) : explainBound(share, verdict, flags),
  );
  const done = (outcome: Outcome): SyncResult => ({
    look: seen,
    outcome,
    sentence: describeOutcome(share, outcome),
  });

  if (resuming) return done(await finishForce(share, resuming, gates));
  // Every write below is the one step of its action (share-action.ts), as the failover walk runs
  // it. Adopt and publish carry no `seen`: no one confirmed a look here, and the table's answer
  // under the lock is what plain sync asks for. The bound steps are held to the look.
  const step = async (request: ActionRequest) => done(await runAction(share, request, gates));
  const unseal = Boolean(flags.unseal);
  switch (verdict.kind) {
    case 'first-controller': {
      if (!flags.firstController) throw await nothingPublished(share);
      return step({ action: 'first-controller', seen: verdict });
    }
    case 'adopt': {
      const outcome = await runAction(share, { action: 'adopt' }, gates);
      if (outcome.kind === 'nothing-published') {
        // The document went away between the look and the lock: a first controller must not
        // be decided on a look that is already stale.
        throw new BatonError('store-changed', {
          what: `The published authority ${verdict.published} was there a moment ago and is gone now.`,
          where: share.store.location,
          changed: 'Nothing was written.',
          next: ['Find out who removed it, then run ', nextStep('sync'), ' again.'],
          reason: 'removed',
        });
      }
      return done(outcome);
    }
    case 'publish':
      return step({ action: 'publish' });
    case 'in-sync':
      return { look: seen, outcome: undefined, sentence: `${verdictSentence(verdict)} Nothing was changed.` };
    case 'blocked':
      // An adopt or a force cut short part-way through its install: the same sync finishes it
      // (adopt proves ca/ is the document's prefix, byte for byte, or refuses).
      if (!flags.replaceUnreadable && isStoppedInstall(seen.local, seen.published))
        return step({ action: 'adopt' });
      if (flags.replaceUnreadable) return step({ action: 'replace-unreadable', seen: verdict, unseal });
      throw blockedError(verdict, share.suggester);
    case 'refuse':
      if (flags.push) return step({ action: 'push-over', seen: verdict, unseal });
      if (flags.force) return step({ action: 'force', seen: verdict });
      throw refusalError(share, verdict);
  }
}

/**
 * THE SAME FORCE AGAIN: exactly what plain sync does on the state the cut left (adopt into the
 * emptied ca/, or finish the install byte for byte under the lock, or nothing when it had
 * finished), said as the force it completes, naming where the old authority went. Nothing is
 * set aside a second time.
 */
async function finishForce(share: ShareContext, resuming: ResumableForce, gate: MintGate): Promise<Outcome> {
  const outcome = await runAction(share, { action: 'adopt' }, gate);
  if (outcome.kind !== 'installed' && outcome.kind !== 'already-held') return outcome;
  return {
    kind: 'forced',
    fingerprint: outcome.fingerprint,
    supersededDir: resuming.dir,
    finished: outcome.kind,
  };
}

/** What a re-run force says before it is confirmed: what the cut left, and what finishing it does. */
function resumeWords(seen: Look, resuming: ResumableForce): string[] {
  const published = seen.published.state === 'present' ? seen.published.header.fingerprint : undefined;
  return [
    `A sync --force stopped part-way here: it set ${resuming.fingerprint} aside in ${resuming.dir} (nothing was deleted). ${verdictSentence(seen.verdict)}`,
    `Run again, it finishes installing the published ${published ?? 'authority'} (only the files missing from ca/, each proved to be the document's) and sets nothing aside again.`,
  ];
}

/** What the terminal gate shows before it asks: both sides, and what the step moves or replaces. */
function explainBound(share: ShareContext, verdict: Verdict, flags: SyncActionFlags): string[] {
  if (verdict.kind !== 'refuse') return [verdictSentence(verdict)];
  const lines = [refusalError(share, verdict).what];
  if (flags.force)
    lines.push(
      `--force moves ${verdict.caDir} and its marker aside to ca.superseded-<UTC stamp> (nothing is deleted), then installs ${verdict.published}.`,
    );
  if (flags.push)
    lines.push(
      `--push publishes this host's ${verdict.local} over the published ${verdict.published}${flags.unseal ? ', IN THE CLEAR (--unseal)' : ''}.`,
    );
  return lines;
}

/**
 * Nothing is published and this host holds nothing: said, never taken as a reason to mint. A
 * mistyped --store lands here, so documents found at neighbouring prefixes are named.
 */
async function nothingPublished(share: ShareContext): Promise<BatonError> {
  const neighbours = await neighbourWords(share.store, share.deployment);
  return new BatonError('refused', {
    what: `Nothing is published at ${share.store.location}, and this host holds no authority.${neighbours}`,
    where: share.store.location,
    changed: 'Nothing was minted or written.',
    next: [
      "If --store and --deployment are right and this host is the deployment's first controller, mint on purpose: ",
      nextStep('sync --first-controller'),
      ' (it asks for the deployment id typed; --yes in scripts).',
    ],
    reason: 'nothing-to-publish',
  });
}
