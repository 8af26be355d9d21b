/**
 * Turns the status flow's one effect into a read, under the run-effect contract (flow.ts): a
 * read that throws becomes `read-failed` — a rejection would leave the screen stuck on
 * "reading" with the reason lost.
 */
import { asBatonError } from '../errors.js';
import { settleAlone, type EffectRunner } from './flow.js';
import type { StatusEffect, StatusEvent } from './status-flow.js';
import type { StatusReport } from './status-report.js';

export function statusRunner(
  read: () => Promise<StatusReport>,
): EffectRunner<unknown, StatusEvent, StatusEffect> {
  return {
    async run(effect) {
      switch (effect.type) {
        // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- one effect today; a second gets its case here
        case 'read':
          return { type: 'read', report: await read() };
      }
    },
    failed: (_effect, error) => ({
      type: 'read-failed',
      error: asBatonError(error, {
        what: 'Reading the status failed',
        next: 'Press r to read again, or q to quit.',
      }),
    }),
  };
}

/** One effect run alone (tests, plain output): always resolves to an event. */
export async function runStatusEffect(
  effect: StatusEffect,
  read: () => Promise<StatusReport>,
): Promise<StatusEvent> {
  return (await settleAlone(statusRunner(read), effect))!;
}
