/**
 * Each action the walk can offer, with its consequence in one line (docs/cli.md): the
 * operator reads what will be written where before choosing, not after.
 */
import { layoutOf } from '../authority/index.js';
import { nextStep, renderStepSentence } from '../next-step.js';
import { pushOverBinding } from '../share/confirm-binding.js';
import type { Suggester } from '../suggest-command.js';
import type { Action } from '../share/types.js';
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
 * The choices the decision table allows that the walk does not perform itself, each with the
 * command and its bound value: for siblings (this host and the published document each rotated
 * the same parent) keeping THIS host's rotation is `sync --push --confirm <PUBLISHED 8>`, the
 * third of the three the table names. Offering only Leave and Replace hid it.
 */
export function byCommandChoices(reading: StatusReport, baton: string | Suggester): string[] {
  const s: Suggester =
    typeof baton === 'string' ? { prefix: baton, inventory: undefined, terminal: true } : baton;
  const verdict = reading.verdict;
  if (verdict.kind !== 'refuse' || verdict.lineage.kind !== 'siblings' || verdict.sealedWithoutKey) return [];
  const step = nextStep('sync --push --confirm', {
    placeholders: [pushOverBinding(verdict.published).placeholder],
  });
  return [
    `Or keep this host's rotation (${verdict.local}) and replace the published one, by command: ${renderStepSentence(s, step)}.`,
  ];
}
