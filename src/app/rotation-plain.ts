/**
 * A rotation without a terminal (`--yes`, pipes, cron): the same flow and effects as the
 * view, reported as plain lines — one per holder as it resolves, one per phase — with no
 * escape codes, so a log over SSH stays small and greppable.
 */
import { MARKS } from './marks.js';
import { countRefusal, NOT_ACCEPTED } from './typed-gate.js';
import {
  startRotation,
  confirmationText,
  rotationExitCode,
  rotationOutcome,
  isTerminal,
  progress,
  rotationFlow,
  type RotationOutcome,
  type RotationState,
} from './rotation-flow.js';
import { rotationRunner, type RotationDeps } from './rotation-run-effect.js';
import { allOf, planHeadline, plural, summaryLines } from './rotation-text.js';
import type { RotationPlan } from '../mesh/rotation-plan.js';
import { appPreviewLines } from './rotation-app-text.js';
import { revokePreviewLines, revokeSummaryLines } from './rotation-revoke.js';

export interface PlainRotation {
  readonly id: string;
  readonly plan: RotationPlan;
  readonly deps: RotationDeps;
  /** The operator's `--yes`: confirm without typing. */
  readonly yes: boolean;
  readonly write: (line: string) => void;
  /**
   * Without --yes, on a line-by-line terminal (the drill's dialogue): the typed count, asked
   * again after a wrong one; undefined (Enter alone, q, end of input) cancels before anything is written.
   */
  readonly askCount?: (question: string) => Promise<string | undefined>;
}

export async function runRotationPlain(
  options: PlainRotation,
): Promise<{ code: number; outcome: RotationOutcome; state: RotationState }> {
  const { plan, write } = options;
  write(`Rotation ${options.id}: ${planHeadline(plan)}`);
  let lastStep = '';
  let confirmed = false;
  const flow = rotationFlow(startRotation(options.id, plan), rotationRunner(options.deps));
  flow.subscribe((state, event) => {
    if (event?.type === 'holder-resolved') {
      const r = event.resolution;
      write(
        r.status === 'resolved'
          ? `  ${MARKS.ok.glyph} ${event.machine} resolved`
          : `  ${MARKS.refused.glyph} ${event.machine} unresolved: ${r.status === 'unresolved' ? r.reason : ''}`,
      );
    }
    if (state.step === lastStep) return;
    lastStep = state.step;
    if (state.step === 'confirming') {
      write(`Gate open: ${allOf(plan.holders.length, 'machine')} resolved.`);
      for (const pair of plan.pairs) write(`  window ${pair.key}: ${pair.window}.`);
      for (const line of revokePreviewLines(state.plan, options.deps.revoke)) write(line);
      for (const line of appPreviewLines(state.plan, options.deps.app)) write(line); // app-truth
      if (plan.ages)
        for (const pair of plan.pairs) write(`  age ${pair.key}: ${plan.ages.get(pair.key) ?? 'unknown'}`);
      if (options.yes && !confirmed) {
        confirmed = true;
        // After the current dispatch has launched its effects (the journal's "resolved" first).
        queueMicrotask(() => {
          flow.dispatch({ type: 'typed', text: confirmationText(plan) });
          flow.dispatch({ type: 'confirmed' });
        });
      } else if (options.askCount && !confirmed) {
        confirmed = true;
        const expected = confirmationText(plan);
        const askCount = options.askCount;
        void (async () => {
          for (;;) {
            const typed = await askCount(
              `Type the number of credentials to rotate to confirm, Enter alone cancels: `,
            );
            if (typed === undefined || typed.trim() === '') {
              flow.dispatch({ type: 'back' });
              return;
            }
            if (typed.trim() === expected) {
              flow.dispatch({ type: 'typed', text: typed.trim() });
              flow.dispatch({ type: 'confirmed' });
              return;
            }
            write(
              `${MARKS.refused.glyph} ${NOT_ACCEPTED}${countRefusal(typed, expected)} Nothing was written.`,
            );
          }
        })();
      }
    }
    const p = progress(state);
    if (state.step === 'committing')
      write(`prepared ${p.files}/${p.files} files on ${plural(p.holders, 'machine')}`);
    if (state.step === 'applying')
      write(
        `committed ${p.committed}/${p.pairs} provider ends; each consumer end follows its provider's receipt`,
      );
    if (state.step === 'done' || state.step === 'commit-failed' || state.step === 'rolling-back')
      write(`applied ${p.applied}/${p.pairs} (provider receipts, then consumer ends)`);
    if (state.step === 'rolling-back')
      write(
        `rolling back ${p.pairs - p.applied} unfinished pair(s)${state.stopped ? ` (${state.stopped})` : ''}: previous provider files back, staged consumer ends removed`,
      );
  });
  const state = await flow.finished();
  if (!isTerminal(state)) throw new Error('rotation ended in a non-terminal state');
  // Complete, however large: scripts and logs keep this output, and nothing else prints it.
  for (const line of summaryLines(state, Math.round(options.deps.waitMs / 1000), {
    full: true,
    ...(options.deps.suggester ? { suggester: options.deps.suggester } : {}),
  }))
    write(line);
  for (const line of revokeSummaryLines(state, options.deps.revoke, options.deps.suggester)) write(line);
  return { code: rotationExitCode(state), outcome: rotationOutcome(state), state };
}
