/**
 * `mesh rotate` refuses, before anything is generated, an alternating pair whose app is BEHIND
 * (app-status.ts): the rotation would give a new password to the very login that app still
 * opens sessions with, and every new connection of it would fail from then on — the seed's
 * incident again. The way out is to make the app move (restart it, configure `reload:`), or
 * to say, bound to the evidence, that breaking it is intended: `--app-behind CODE`, where CODE
 * is read off `mesh status` (the first 8 hex characters of a digest of the pair, the login and
 * the newest session seen), so an old command line cannot carry a new override.
 */
import { createHash } from 'node:crypto';
import { BatonError } from '../errors.js';
import { nextStep, type Placeholder, type Said } from '../next-step.js';
import { appStatus, type AppBehind } from './app-status.js';
import type { JournalHistory } from './journal-history.js';
import { groupBy } from './delivery.js';
import { mapBounded } from './map-bounded.js';
import type { PlannedPair, RotationPlan } from './rotation-plan.js';
import { parseCensus, sessionsPath } from './session-record.js';
import type { TransportFor } from './transport.js';

export const APP_BEHIND_CODE: Placeholder = {
  placeholder: 'APP 8',
  readFrom: 'the override code mesh status shows for the pair (it changes with every new session seen)',
};

/** The override code of one piece of evidence. */
export function appBehindCode(pair: string, behind: AppBehind): string {
  return createHash('sha256').update(`${pair}\0${behind.login}\0${behind.newest}`).digest('hex').slice(0, 8);
}

export interface BehindPair {
  readonly pair: PlannedPair;
  readonly behind: AppBehind;
  readonly detail: string;
  readonly code: string;
}

/**
 * The selected alternating pairs whose app is behind: the census of the login this rotation
 * would change (the one the consumer's file left), one read per provider machine.
 */
export async function behindPairs(
  plan: RotationPlan,
  transportFor: TransportFor,
  history: JournalHistory,
  concurrency: number,
): Promise<BehindPair[]> {
  const candidates = plan.pairs.filter((p) => p.login?.left && history.pair(p.key).lastRotatedAt);
  const out: BehindPair[] = [];
  await mapBounded(
    [...groupBy(candidates, (p) => p.providerMachine)],
    concurrency,
    async ([machine, pairs]) => {
      const paths = pairs.map((p) => sessionsPath(p.receiptPath, p.login!.role));
      // A census that cannot be read is no evidence: the rotation's own reads say whether the machine answers.
      const texts = await transportFor(machine)
        .readTexts(paths)
        .catch(() => paths.map(() => undefined));
      pairs.forEach((p, i) => {
        const text = texts[i];
        const app = appStatus({
          consumer: p.consumer,
          live: p.login!.left!.role,
          left: p.login!.role,
          movedAtMs: Date.parse(history.pair(p.key).lastRotatedAt!),
          lastReload: history.lastReload(p.key),
          liveCensus: undefined,
          leftCensus: text === undefined ? undefined : parseCensus(text),
        });
        if (app.behind)
          out.push({
            pair: p,
            behind: app.behind,
            detail: app.detail,
            code: appBehindCode(p.key, app.behind),
          });
      });
    },
  );
  return out;
}

/** The refusal, unless every behind pair's current code was given. */
export function appBehindRefusal(
  behind: readonly BehindPair[],
  codes: readonly string[],
): BatonError | undefined {
  const open = behind.filter((b) => !codes.includes(b.code));
  if (open.length === 0) return undefined;
  const next: Said = [
    `restart each app named (or give its consumer a reload: in the inventory and restart it once), wait for the provisioner to see it on the new login, then check `,
    nextStep('mesh status'),
    '; to rotate anyway, breaking that app: ',
    ...open.flatMap((b, i) => [
      ...(i > 0 ? ['; '] : []),
      nextStep(`mesh rotate --pair ${b.pair.key} --app-behind`, { placeholders: [APP_BEHIND_CODE] }),
    ]),
  ];
  return new BatonError('refused', {
    what: `mesh rotate refused: ${open.length === 1 ? "1 pair's app is" : `${open.length} pairs' apps are`} behind — ${open.map((b) => `${b.pair.key}: ${b.detail}`).join('; ')}.`,
    next,
    changed: 'Nothing was generated and nothing was sent.',
  });
}
