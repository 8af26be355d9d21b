/**
 * Turns a failover effect into adapter calls, under the run-effect contract (flow.ts): every
 * effect ends in an event, and a thrown error becomes the effect's own failure event. A
 * rejection would leave the screen on "acting…" with the reason lost, and a thrown S3 error
 * would reach the operator as a stack trace instead of the three-part message.
 */
import { asBatonError } from '../errors.js';
import type { Action, Outcome, Verdict } from '../share/types.js';
import { settleAlone, type EffectRunner } from './flow.js';
import type { FailoverEffect, FailoverEvent } from './failover-flow.js';
import type { StatusReport } from './status-report.js';
import { assertNever } from './status-verdict.js';

/** What the walk needs from the world; the real ports are built in src/operations/failover-ports.ts. */
export interface FailoverPorts {
  /** Lock probe, local, published — without taking the lock or writing anything. */
  read(): Promise<StatusReport>;
  /** Runs the operation; it takes the lock and re-decides against `seen` before writing. */
  act(action: Exclude<Action, 'leave'>, seen: Verdict, at: Date | undefined): Promise<Outcome>;
}

export function failoverRunner(ports: FailoverPorts): EffectRunner<unknown, FailoverEvent, FailoverEffect> {
  return {
    async run(effect) {
      switch (effect.type) {
        case 'read':
          return { type: 'read', reading: await ports.read() };
        case 'act':
          return { type: 'acted', outcome: await ports.act(effect.action, effect.seen, effect.at) };
        case 'reread':
          return { type: 'reread', reading: await ports.read() };
        default:
          return assertNever(effect);
      }
    },
    failed(effect, error) {
      switch (effect.type) {
        case 'read':
          return {
            type: 'read-failed',
            error: asBatonError(error, {
              what: 'Reading the authorities failed',
              next: 'Press r to read again, or q to quit.',
            }),
          };
        case 'act':
          return {
            type: 'act-failed',
            error: asBatonError(error, {
              what: `The ${effect.action} failed`,
              next: 'Press Esc to read again and decide again.',
            }),
          };
        case 'reread':
          return {
            type: 'reread-failed',
            error: asBatonError(error, {
              what: 'Reading the result failed',
              next: 'Run baton status to look again.',
            }),
          };
        default:
          return assertNever(effect);
      }
    },
  };
}

/** One effect run alone (the plain dialogue, the drill's script, tests): always resolves to an event. */
export async function runFailoverEffect(
  effect: FailoverEffect,
  ports: FailoverPorts,
): Promise<FailoverEvent> {
  return (await settleAlone(failoverRunner(ports), effect))!;
}
