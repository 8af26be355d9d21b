/**
 * `baton failover` on a terminal without cursor addressing (TERM=dumb, a serial console, a
 * pty that reports 0×0): the same walk, the same reducer and the same typed gates, as a
 * line-by-line dialogue — one question, one answered line. No escape code is ever written.
 *
 * An empty answer is the safe one everywhere: at the choice it leaves, at a gate it goes back.
 * So Enter, Enter, Enter never writes anything.
 */
import { actionWords, pushOverCommand, pushOverConsequences } from './failover-actions.js';
import {
  failover,
  failoverExitCode,
  forcePrefix,
  forceTarget,
  pushPrefix,
  initialFailover,
  type FailoverEvent,
  type FailoverState,
} from './failover-flow.js';
import { outcomeWords } from './failover-outcome.js';
import { failoverRunner, type FailoverPorts } from './failover-run-effect.js';
import { createFlow } from './flow.js';
import { MARKS } from './marks.js';
import { statusText } from './status-text.js';
import { lineageSentence } from './status-verdict.js';
import { deploymentPrefix, mintGateQuestion, NOT_ACCEPTED } from './typed-gate.js';

export interface FailoverDialogue {
  readonly ports: FailoverPorts;
  readonly baton: string;
  /** The next answered line, or undefined at end of input (which leaves). */
  readonly ask: (question: string) => Promise<string | undefined>;
  readonly write: (line: string) => void;
  readonly now?: () => Date;
}

const GLYPHS = { ok: MARKS.ok.glyph, action: MARKS.action.glyph, refused: MARKS.refused.glyph };

export async function runFailoverDialogue({
  ports,
  baton,
  ask,
  write,
  now = () => new Date(),
}: FailoverDialogue): Promise<number> {
  // The flow runtime, as on the screen; each answer is applied once every effect has settled.
  const flow = createFlow(failover, initialFailover, failoverRunner(ports));
  await flow.idle();
  let state: FailoverState = flow.getState();
  const apply = async (event: FailoverEvent) => {
    flow.dispatch(event);
    await flow.idle();
    state = flow.getState();
  };

  for (;;) {
    switch (state.step) {
      case 'deciding': {
        write(statusText(state.reading, GLYPHS, baton).trimEnd());
        write('');
        const { actions, cursor, reading } = state;
        actions.forEach((action, i) => {
          const words = actionWords(action, reading);
          write(`  ${i + 1}. ${words.title}${i === cursor ? '  (default)' : ''}`);
          write(`     ${words.consequence}`);
        });
        const answer = await ask(`Choose 1-${actions.length} (Enter = ${cursor + 1}, q quits): `);
        if (answer === undefined || answer.trim() === 'q') return failoverExitCode(state);
        const picked = answer.trim() === '' ? cursor : Number(answer.trim()) - 1;
        if (!Number.isInteger(picked) || picked < 0 || picked >= actions.length) {
          write(`${MARKS.refused.glyph} "${answer.trim()}" is not one of 1-${actions.length}.`);
          continue;
        }
        // `state` is reassigned by apply(): TS would keep the switch's narrowing across the await.
        while ((state as FailoverState).step === 'deciding' && state.cursor !== picked)
          await apply({ type: 'move', by: state.cursor < picked ? 1 : -1 });
        await apply({ type: 'select', at: now() });
        continue;
      }
      case 'confirming': {
        const words = actionWords(state.action, state.reading);
        write(`Confirm: ${words.title}`);
        write(words.consequence);
        if (state.gated) {
          const prefix = deploymentPrefix(state.reading.deployment);
          write('This cannot be undone.');
          if (state.action === 'first-controller') write(`Publishes to: ${state.reading.published.location}`);
          const typed = await ask(`${mintGateQuestion(prefix.length)} (Enter alone goes back) `);
          if (typed === undefined || typed.trim() === '') {
            await apply({ type: 'back' });
            continue;
          }
          await apply({ type: 'typed', text: typed });
        } else {
          const answer = await ask('Type yes to confirm, Enter alone goes back: ');
          if (answer?.trim().toLowerCase() !== 'yes') {
            await apply({ type: 'back' });
            continue;
          }
        }
        await apply({ type: 'confirm' });
        if ((state as FailoverState).step === 'confirming' && state.refusal)
          write(`${MARKS.refused.glyph} ${NOT_ACCEPTED}${state.refusal}`);
        continue;
      }
      case 'confirming-force': {
        const { verdict } = state;
        write('Replace the local authority (force)');
        write(`  LOCAL      ${verdict.local}   (set aside, kept)`);
        write(`  type these        ${forcePrefix(verdict)}`);
        write(`  PUBLISHED  ${verdict.published}   (installed in its place)`);
        write(`  Diagnosis: ${lineageSentence(verdict.lineage)}`);
        write(`  ${verdict.caDir} and its marker are moved to ${forceTarget(state)}`);
        const typed = await ask(
          'Type the 8 characters after SHA256: of the LOCAL fingerprint, Enter alone goes back: ',
        );
        if (typed === undefined || typed.trim() === '') {
          await apply({ type: 'back' });
          continue;
        }
        await apply({ type: 'typed', text: typed });
        await apply({ type: 'confirm' });
        if ((state as FailoverState).step === 'confirming-force' && state.refusal)
          write(`${MARKS.refused.glyph} ${NOT_ACCEPTED}${state.refusal}`);
        continue;
      }
      case 'confirming-push': {
        const { verdict } = state;
        write("Keep this host's authority: publish it over the store's");
        write(`  LOCAL      ${verdict.local}   (published in its place, kept here as it is)`);
        write(`  PUBLISHED  ${verdict.published}   (replaced in the store)`);
        write(`  type these        ${pushPrefix(verdict)}`);
        write(`  Diagnosis: ${lineageSentence(verdict.lineage)}`);
        for (const line of pushOverConsequences(verdict, state.reading)) write(`  ${line}`);
        write(`  ${pushOverCommand(verdict, baton)}`);
        const typed = await ask(
          'Type the 8 characters after SHA256: of the PUBLISHED fingerprint, Enter alone goes back: ',
        );
        if (typed === undefined || typed.trim() === '') {
          await apply({ type: 'back' });
          continue;
        }
        await apply({ type: 'typed', text: typed });
        await apply({ type: 'confirm' });
        if ((state as FailoverState).step === 'confirming-push' && state.refusal)
          write(`${MARKS.refused.glyph} ${NOT_ACCEPTED}${state.refusal}`);
        continue;
      }
      case 'done': {
        write(`${MARKS.ok.glyph} ${outcomeWords(state.outcome)}`);
        if (state.after && state.action !== 'leave') write(statusText(state.after, GLYPHS, baton).trimEnd());
        return failoverExitCode(state);
      }
      case 'failed':
        write(`${MARKS.refused.glyph} ${state.error.lines().join('\n  ')}`);
        return failoverExitCode(state);
      case 'reading':
      case 'acting':
        // Every effect has settled by now: these are never waited in.
        return failoverExitCode(state);
      default: {
        const never: never = state;
        return never;
      }
    }
  }
}
