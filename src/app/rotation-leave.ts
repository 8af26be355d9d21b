/**
 * What happens once the operator has left an interactive rotation: the effect in flight
 * finishes, no next phase starts, and a prepare that never reached its commit is taken back —
 * staged files nobody will commit must not linger on the holders. Then the summary of what
 * changed where, which stays in the scrollback.
 */
import { EXIT_CODES } from '../errors.js';
import path from 'node:path';
import { unstageAll } from '../mesh/delivery.js';
import { JOURNAL_FILE } from '../mesh/journal.js';
import { rotationExitCode, isTerminal, type RotationFlow, type RotationState } from './rotation-flow.js';
import type { RotationDeps } from './rotation-run-effect.js';
import { summaryLines } from './rotation-text.js';
import { revokeSummaryLines } from './rotation-revoke.js';
import { nextStep, renderStep } from '../next-step.js';
import { PLAIN_SUGGESTER } from '../suggest-command.js';

/** Resolves with the exit code; `left` is what the view decided when the operator left, if it did. */
export async function finishAfterLeaving(
  flow: RotationFlow,
  deps: RotationDeps,
  left: { readonly code: number; readonly state: RotationState } | undefined,
  write: (line: string) => void,
): Promise<number> {
  // Past the commit, leaving ends the wait and rolls back what did not finish (never left for a person).
  if (flow.getState().step === 'applying')
    write(
      'Provider ends committed; the wait for receipts ends now and each pair that did not finish is rolled back…',
    );
  deps.stop?.abort(new Error('cancelled by the operator'));
  flow.stop();
  await flow.idle();
  const state = flow.getState();
  // The resume command carries the operator's flags: a bare one would read another journal.
  const resume = renderStep(deps.suggester ?? PLAIN_SUGGESTER, nextStep(`mesh resume ${state.id}`));
  const waitSeconds = Math.round(deps.waitMs / 1000);
  if (isTerminal(state)) {
    for (const line of summaryLines(state, waitSeconds, {
      journal: path.join(deps.journalDir, JOURNAL_FILE),
      ...(deps.suggester ? { suggester: deps.suggester } : {}),
    }))
      write(line);
    for (const line of revokeSummaryLines(state, deps.revoke, deps.suggester)) write(line);
    return left?.state.step === state.step ? left.code : rotationExitCode(state);
  }
  if (state.step === 'committing') {
    // Prepared but the operator left before the commit started: take the staged files back.
    const failures = await unstageAll(state.plan.holders, deps.transportFor, deps.concurrency);
    write(
      failures.length === 0
        ? 'Interrupted before the commit: every staged file was removed; nothing took effect.'
        : `Interrupted before the commit; staged files could NOT be removed on ${failures.map((f) => `${f.machine} (${f.reason})`).join(', ')}. They are never read; remove the *.next files there.`,
    );
    return EXIT_CODES.aborted;
  }
  if (state.step === 'applying' || state.step === 'rolling-back') {
    // Only without a stop to end the wait (a caller that gave none): say what is left, and how to finish or take it back.
    write(
      `Rotation ${state.id}: provider ends committed; consumer ends without a receipt are still staged. Finish with ${resume} or take it back with ${renderStep(deps.suggester ?? PLAIN_SUGGESTER, nextStep(`mesh rollback ${state.id}`))}`,
    );
    return EXIT_CODES['action-needed'];
  }
  write(`Left while ${state.step}: nothing was generated or sent.`);
  return left?.code ?? EXIT_CODES.aborted;
}
