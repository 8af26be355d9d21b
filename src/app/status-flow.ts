/**
 * The status screen as a reducer. It only ever reads: the one effect is 'read', and a refresh
 * asked for while a read is in flight is dropped rather than queued, so a slow store under
 * `--watch` never piles up concurrent reads.
 */
import { EXIT_CODES, type BatonError } from '../errors.js';
import { statusExitCode, type StatusReport } from './status-report.js';
import { assertNever } from './status-verdict.js';

export type StatusState =
  | { readonly step: 'reading' }
  | { readonly step: 'showing'; readonly report: StatusReport; readonly refreshing: boolean }
  | { readonly step: 'failed'; readonly error: BatonError; readonly refreshing: boolean };

export type StatusEvent =
  /** `r`, or the watch timer. */
  | { readonly type: 'refresh' }
  | { readonly type: 'read'; readonly report: StatusReport }
  | { readonly type: 'read-failed'; readonly error: BatonError };

export type StatusEffect = { readonly type: 'read' };

export interface StatusStep {
  readonly state: StatusState;
  readonly effects: readonly StatusEffect[];
}

export const initialStatus: StatusStep = { state: { step: 'reading' }, effects: [{ type: 'read' }] };

export function statusFlow(state: StatusState, event: StatusEvent): StatusStep {
  switch (event.type) {
    case 'refresh':
      if (state.step === 'reading' || state.refreshing) return { state, effects: [] };
      return { state: { ...state, refreshing: true }, effects: [{ type: 'read' }] };
    case 'read':
      return { state: { step: 'showing', report: event.report, refreshing: false }, effects: [] };
    case 'read-failed':
      return { state: { step: 'failed', error: event.error, refreshing: false }, effects: [] };
    default:
      return assertNever(event);
  }
}

/**
 * The exit code when the screen ends here (docs/cli.md): the last read's code, or 1 when no
 * read was shown (still reading, or the read failed) — "could not read", never "in sync".
 */
export function statusStateExitCode(state: StatusState): number {
  return state.step === 'showing' ? statusExitCode(state.report) : EXIT_CODES.failed;
}
