/**
 * What an action did, in a sentence naming what was written where. Seven outcomes, said seven
 * ways: "already held" and "nothing published" are both success and mean opposite things.
 */
import type { Outcome } from '../share/types.js';
import { assertNever } from './status-verdict.js';

export function outcomeWords(outcome: Outcome): string {
  switch (outcome.kind) {
    case 'nothing-published':
      return 'Nothing is published, so nothing was installed. This host is the one that has to publish.';
    case 'installed':
      return `Installed the published authority ${outcome.fingerprint} on this host.`;
    case 'already-held':
      return `This host already held ${outcome.fingerprint}. Nothing was written.`;
    case 'published':
      return `Published ${outcome.fingerprint} to the store.`;
    case 'first-controller':
      return outcome.wonRace
        ? `First controller: minted ${outcome.fingerprint}, published it, then installed it here.`
        : `Another controller published first: its authority ${outcome.fingerprint} was adopted and this host's own mint discarded.`;
    case 'forced':
      return `The old authority was set aside in ${outcome.supersededDir} (nothing deleted) and ${outcome.fingerprint} installed.`;
    case 'left':
      return `${outcome.why} Nothing was written.`;
    default:
      return assertNever(outcome);
  }
}
