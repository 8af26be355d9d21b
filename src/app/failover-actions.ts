/**
 * Each action the walk can offer, with its consequence in one line (docs/cli.md): the
 * operator reads what will be written where before choosing, not after.
 */
import { layoutOf } from '../authority/index.js';
import { nextStep, renderStepSentence } from '../next-step.js';
import { pushOverBinding } from '../share/confirm-binding.js';
import type { Suggester } from '../suggest-command.js';
import type { Action, Verdict } from '../share/types.js';
import type { StatusReport } from './status-report.js';
import { assertNever } from './status-verdict.js';

export interface ActionWords {
  readonly title: string;
  readonly consequence: string;
}

export function actionWords(action: Action, reading: StatusReport): ActionWords {
  const caDir = layoutOf(reading.stateDir).caDir;
  const location = reading.published.location;
  const published = reading.published.state === 'present' ? reading.published.header.fingerprint : undefined;
  switch (action) {
    case 'first-controller':
      return {
        title: 'Become the first controller',
        consequence: `Mints a new authority aside, publishes it create-only to ${location}, installs it in ${caDir} only after that.`,
      };
    case 'adopt':
      return {
        title: 'Adopt the published authority',
        consequence: `Installs ${published ?? 'the published authority'} into the empty ${caDir}; the store is not written.`,
      };
    case 'publish':
      return {
        title: "Publish this host's authority",
        consequence:
          reading.published.state === 'present'
            ? `Replaces the document at ${location}, only if it is unchanged since this read.`
            : `Writes this host's authority to ${location}, create-only.`,
      };
    case 'push-over':
      return {
        title: "Keep this host's authority (push over the store's)",
        consequence: "Publishes this host's over the store's, if unchanged; asks for the PUBLISHED 8 first.",
      };
    case 'force':
      return {
        title: 'Replace the local authority (force)',
        consequence: `Moves ${caDir} aside to ca.superseded-<stamp> and installs the published one; asks you to type the LOCAL fingerprint first.`,
      };
    case 'leave':
      return { title: 'Leave it as it is', consequence: 'Changes nothing; quit and decide later.' };
    default:
      return assertNever(action);
  }
}

/**
 * What keeping this host's authority does, said on its gate before anything is typed: what the
 * store will hold, what this host keeps, and what the other side is left with. The operator
 * choosing between two rotations must read the cost of each, not only its name.
 */
export function pushOverConsequences(
  verdict: Extract<Verdict, { kind: 'refuse' }>,
  reading: StatusReport,
): string[] {
  return [
    `Writes LOCAL to ${reading.published.location} in place of PUBLISHED, only if the document is unchanged since this read (else nothing is written).`,
    `Nothing on this host changes: ${verdict.caDir} stays as it is.`,
    'Hosts that hold PUBLISHED are then refused by sync until each is forced onto LOCAL.',
  ];
}

/** The command that does the same without a screen, its value a placeholder (never the value). */
export function pushOverCommand(
  verdict: Extract<Verdict, { kind: 'refuse' }>,
  baton: string | Suggester,
): string {
  const s: Suggester =
    typeof baton === 'string' ? { prefix: baton, inventory: undefined, terminal: true } : baton;
  const step = nextStep('sync --push --confirm', {
    placeholders: [pushOverBinding(verdict.published).placeholder],
  });
  return `The same without a screen: ${renderStepSentence(s, step)}.`;
}
