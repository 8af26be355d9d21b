/**
 * Turns the status flow's one effect into a read. Always resolves to an event — a rejected
 * promise would leave the screen stuck on "reading" with the reason lost.
 */
import { asBatonError } from '../errors.js';
import type { StatusEffect, StatusEvent } from './status-flow.js';
import type { StatusReport } from './status-report.js';

export async function runStatusEffect(effect: StatusEffect, read: () => Promise<StatusReport>): Promise<StatusEvent> {
  try {
    switch (effect.type) {
      case 'read':
        return { type: 'read', report: await read() };
    }
  } catch (error) {
    return { type: 'read-failed', error: asBatonError(error, { what: 'Reading the status failed', next: 'Press r to read again, or q to quit.' }) };
  }
}
