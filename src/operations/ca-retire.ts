/**
 * `baton ca retire`'s decision as ONE operation: the guard that keeps a key the published
 * overlap still carries, the local retire under ca.lock (bound to the PREVIOUS 8, compared
 * there with what is on disk), and the store's copy following it. The command only parses
 * flags, supplies the confirmation (--confirm, or typed on a terminal) and says the outcome;
 * the crash harness runs this same code on every state whose words name `ca retire`.
 */
import { layoutOf, retireAuthority, type RetireResult } from '../authority/index.js';
import { BatonError } from '../errors.js';
import { nextStep, retireStep } from '../next-step.js';
import { look, retirePublished, type RetirePublishedOutcome } from '../share/actions.js';
import { overlapStillPublished } from '../share/partial-install.js';
import type { ShareContext } from '../share/share-context.js';

export interface RetireOutcome {
  readonly local: RetireResult;
  /** With a store: what happened to the published copy. */
  readonly store?: RetirePublishedOutcome;
}

export async function retireOperation(options: {
  readonly stateDir: string;
  readonly deployment: string;
  /** The store, when one is configured: the guard reads it, and its copy follows the retire. */
  readonly share?: ShareContext;
  /** The PREVIOUS 8 given (--confirm), or asked for once the guard has passed. */
  readonly confirm: () => Promise<string | undefined>;
  /** Called once the local retire is done, before the store is written (the command says it first). */
  readonly localDone?: (local: RetireResult) => void;
}): Promise<RetireOutcome> {
  const { stateDir, deployment, share } = options;
  // NEVER THE KEY THE PUBLISHED OVERLAP STILL CARRIES, left alone by an install that stopped:
  // refused before anything is asked or deleted (src/share/partial-install.ts).
  if (share) await refuseRetireOfPublishedOverlap(share);
  const confirm = await options.confirm();
  const local = await retireAuthority(stateDir, deployment, { confirm });
  options.localDone?.(local);
  if (!share) return { local };
  return { local, store: await retireInStore(share, confirm) };
}

/**
 * A lone ca-previous.key whose pair the published document still carries in an overlap is an
 * install that stopped, not a retire: deleting it (and re-publishing without the pair) would end
 * the overlap for the whole fleet. Refused (exit 3), naming the way out: the same adopt again.
 */
async function refuseRetireOfPublishedOverlap(share: ShareContext): Promise<void> {
  const seen = await look(share);
  const previous = overlapStillPublished(seen.local, seen.published);
  if (previous === undefined) return;
  throw new BatonError('refused', {
    what: `ca-previous.key (the previous key ${previous}) is here without its certificate, and the published document still carries that previous pair in an overlap: an install of the overlap stopped part-way (it writes the previous key first). Retiring would delete a key the fleet may still verify against.`,
    where: `${layoutOf(share.stateDir).caDir} and ${share.store.location}`,
    next: [
      'Finish the install: ',
      nextStep('sync'),
      ' writes ca-previous.crt back from the published document. Retire later, on purpose, once every node trusts the current authority.',
    ],
    changed: 'Nothing was deleted or published.',
    reason: 'blocked',
  });
}

/**
 * The store's copy follows the retire (retirePublished); a store that cannot be written is a
 * failure that says the local retire is done and how to finish.
 */
async function retireInStore(
  share: ShareContext,
  confirm: string | undefined,
): Promise<RetirePublishedOutcome> {
  try {
    return await retirePublished(share, confirm);
  } catch (error) {
    if (!(error instanceof BatonError) || error.code === 'usage') throw error;
    throw new BatonError(error.code, {
      what: `This host's retire is done, but the published document could not be updated: ${error.what}`,
      where: share.store.location,
      next: [
        'Until it is, a host that adopts installs the retired pair. When the store answers, run ',
        retireStep(),
        ' again (',
        nextStep('status'),
        ' says whether the store still carries it).',
      ],
      changed: 'ca-previous.* are removed on this host; the store is unchanged.',
      cause: error,
    });
  }
}
