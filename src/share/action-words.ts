/**
 * What an action says: the action's name in a sentence and one full sentence per outcome
 * (a next step's command is data, src/next-step.ts). The verdict's own words are the one table
 * in ./verdict-words.ts; nothing here words a verdict a second way.
 */
import { layoutOf } from '../authority/layout.js';
import type { ShareContext } from './share-context.js';
import type { Action, Outcome } from './types.js';

/** Each action as the verb phrase of "Cannot …" and "Allowed now: …". */
export const ACTION_WORDS: Record<Action, string> = {
  'first-controller': 'become the first controller',
  adopt: 'adopt the published authority',
  publish: 'publish',
  'push-over': "publish this host's authority over the published one",
  force: 'replace the local authority',
  leave: 'leave things as they are',
};

/** One full sentence per outcome, the way sync prints it and the console's summary shows it. */
export function describeOutcome(
  ctx: Pick<ShareContext, 'stateDir' | 'store' | 'deployment'>,
  outcome: Outcome,
): string {
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
      if (outcome.finished === 'installed')
        return `A sync --force had stopped part-way: the old authority is set aside in ${outcome.supersededDir} (nothing was deleted), and this run finished installing the published ${outcome.fingerprint} in ${caDir}.`;
      if (outcome.finished === 'already-held')
        return `The sync --force had already finished: the old authority is set aside in ${outcome.supersededDir} (nothing was deleted) and the published ${outcome.fingerprint} is installed in ${caDir}; nothing was changed.`;
      return `The old authority was set aside in ${outcome.supersededDir} (nothing was deleted); the published ${outcome.fingerprint} is now installed in ${caDir}.`;
    case 'left':
      return outcome.why;
  }
}
