/**
 * The verdict of the decision table (docs/publishing.md) in words: its tone, its label, a headline
 * and the exact next command. ONE table for sync, status (TTY, plain, JSON), failover and the
 * drill, so the same verdict never reads two ways. The screen shows fingerprints in their own
 * panels and leaves them out of the headline; a plain sentence or a refusal carries them.
 */
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { lineageWords } from './lineage.js';
import type { Lineage, Verdict } from './types.js';
import {
  nextStep,
  renderSaid,
  renderStep,
  renderStepSentence,
  retireStep,
  type NextStep,
} from '../next-step.js';
import type { Suggester } from '../suggest-command.js';
import { forceBinding, pushOverBinding, UNSEAL_BINDING } from './confirm-binding.js';
import { billetReplaced } from './decide.js';

/** How a verdict feels; views map it onto src/app/marks.ts (a subset of its tones). */
export type VerdictTone = 'ok' | 'action' | 'refused';

export interface VerdictWords {
  readonly tone: VerdictTone;
  /** Short label after the mark: "in sync", "action needed", "refused", "blocked". */
  readonly label: string;
  /** One or two sentences: what the two sides say. */
  readonly headline: string;
  /** The exact next step: a command, or "Nothing to do." */
  readonly next: string;
  /** The next step as data, when it is a command (rendered into `next`; an object in JSON). */
  readonly step?: NextStep;
}

export interface VerdictWordsOptions {
  /**
   * The command prefix with the global flags the operator gave, so the next step can be pasted
   * as it stands (a bare `baton sync` would read another config and do something else).
   */
  readonly baton?: string | Suggester;
  /** Name the fingerprints in the headline (plain lines and refusals; a screen has panels). */
  readonly fingerprints?: boolean;
}

/** The lineage diagnosis, with the handover proof, in the domain's own words (./lineage.ts). */
export { lineageWords };

/** The lineage diagnosis as a sentence of its own. */
export function lineageSentence(lineage: Lineage): string {
  const words = lineageWords(lineage);
  return words.charAt(0).toUpperCase() + words.slice(1);
}

export function verdictWords(verdict: Verdict, options: VerdictWordsOptions = {}): VerdictWords {
  // The one builder (src/suggest-command.ts); a bare prefix is a view on a terminal.
  const given = options.baton ?? 'baton';
  const s: Suggester =
    typeof given === 'string' ? { prefix: given, inventory: undefined, terminal: true } : given;
  const fp = (fingerprint: Fingerprint) => (options.fingerprints ? ` ${fingerprint}` : '');
  switch (verdict.kind) {
    case 'in-sync':
      if (verdict.storeCarriesRetired !== undefined) {
        // Bound like a retire: the value names the pair dropped from the store.
        const step = retireStep();
        return {
          tone: 'action',
          label: 'action needed',
          headline: `This host holds the published authority${fp(verdict.fingerprint)}, but the store still carries the previous key ${verdict.storeCarriesRetired}, which this host has retired: a host that adopts now would install it.`,
          next: `Re-publish without it: ${renderStepSentence(s, step)}`,
          step,
        };
      }
      if (verdict.previous === undefined) {
        return {
          tone: 'ok',
          label: 'in sync',
          headline: `This host holds the published authority${fp(verdict.fingerprint)}.`,
          next: 'Nothing to do.',
        };
      }
      {
        const step = retireStep();
        return {
          tone: 'ok',
          label: 'in sync',
          headline: `This host holds the published authority${fp(verdict.fingerprint)}.`,
          next: `A rotation overlap is open (the previous authority${fp(verdict.previous)} is still trusted): \`ca rotate\` refuses until it ends. Once every node trusts the current authority: ${renderStepSentence(s, step)}`,
          step,
        };
      }
    case 'first-controller': {
      // Minting is said, never inferred: the step names the flag that mints, and without a
      // terminal it still stops at the missing --yes, so pasting it mints nothing.
      const step = s.terminal ? nextStep('failover') : nextStep('sync --first-controller');
      return {
        tone: 'action',
        label: 'action needed',
        headline:
          'Nothing is published and this host holds no authority: it can be the first controller (minting is never done without asking).',
        next: renderStep(s, step),
        step,
      };
    }
    case 'adopt': {
      const step = s.terminal ? nextStep('failover') : nextStep('sync');
      return {
        tone: 'action',
        label: 'action needed',
        headline: verdict.lostMarker
          ? `This host lost its authority files (the marker is present); the published authority${fp(verdict.published)} can be adopted.`
          : `This host holds no authority; the deployment's published authority${fp(verdict.published)} can be adopted.`,
        next: renderStep(s, step),
        step,
      };
    }
    case 'publish': {
      const step = s.terminal ? nextStep('failover') : nextStep('sync');
      return {
        tone: 'action',
        label: 'action needed',
        headline: `Nothing is published: this host's authority${fp(verdict.local)} can be published.`,
        next: renderStep(s, step),
        step,
      };
    }
    case 'refuse': {
      const { step, next } = refuseNext(verdict, s);
      // AHEAD is this host's own rotation, not yet pushed: the expected state right after
      // `ca rotate`. It is a step to take ("not published yet", the push), not a refusal in red.
      if (verdict.lineage.kind === 'ahead') {
        return {
          tone: 'action',
          label: 'not published yet',
          headline: `${lineageSentence(verdict.lineage)}${options.fingerprints ? ` Local${fp(verdict.local)}, published${fp(verdict.published)}.` : ''}`,
          next,
          step,
        };
      }
      return {
        tone: 'refused',
        label: 'refused',
        headline: `The local${fp(verdict.local)} and published${fp(verdict.published)} authorities differ. ${lineageSentence(verdict.lineage)}`,
        next,
        step,
      };
    }
    case 'blocked':
      return {
        tone: 'refused',
        label: 'blocked',
        headline: verdict.why,
        next: verdict.said
          ? renderSaid(s, verdict.said)
          : verdict.step
            ? `${verdict.next} ${renderStepSentence(s, verdict.step)}`
            : verdict.next,
        ...(verdict.step ? { step: verdict.step } : {}),
      };
  }
}

/**
 * The way on from a refusal. Only a rotation this host's own files record (ahead) is pushed
 * plainly; everything else that replaces an authority is bound to a value read from the two
 * sides (confirm-binding.ts), shown as a placeholder, so the printed command cannot do it.
 */
function refuseNext(
  verdict: Extract<Verdict, { kind: 'refuse' }>,
  s: Suggester,
): { readonly step: NextStep; readonly next: string } {
  const force = nextStep('sync --force --confirm', {
    placeholders: [forceBinding(verdict.local).placeholder],
  });
  const pushOver = nextStep('sync --push --confirm', {
    placeholders: [pushOverBinding(verdict.published).placeholder],
  });
  const sealNote =
    'Set seal_key_file (the key the other controllers use) first: the published authority is sealed and this host has no seal key.';
  const { lineage } = verdict;
  if (lineage.kind === 'ahead') {
    if (verdict.sealedWithoutKey) {
      const unseal = nextStep('sync --push --unseal --confirm', {
        placeholders: [UNSEAL_BINDING.placeholder],
      });
      return {
        step: nextStep('sync --push'),
        next: `${sealNote} Then ${renderStep(s, nextStep('sync --push'))}; or stop sealing on purpose: ${renderStepSentence(s, unseal)}`,
      };
    }
    const step = nextStep('sync --push');
    return { step, next: renderStep(s, step) };
  }
  // billet's rotation is never proved (billet signs none), and is never pushed over either.
  const proved =
    (lineage.kind === 'left-behind' && lineage.proof.kind === 'proved') || billetReplaced(verdict);
  // On a terminal the walk asks for the typed value itself; the headline already says which
  // side is newer, and the screen has no room for two commands.
  if (s.terminal && !verdict.sealedWithoutKey) {
    const walk = nextStep('failover');
    return { step: walk, next: `${renderStep(s, walk)}  (a replace asks for a typed confirmation)` };
  }
  const keepPublished = force;
  const head = verdict.sealedWithoutKey ? `${sealNote} Then ` : '';
  const first = `${head}${renderStepSentence(s, keepPublished)}`;
  if (proved)
    return {
      step: keepPublished,
      next: `${first}  (sets this host's authority aside and adopts the newer, published one)`,
    };
  // Not proved ahead, not proved behind: either side may be kept, each on purpose.
  const newer =
    lineage.kind === 'left-behind'
      ? 'the published one claims to be newer; '
      : 'neither is newer by lineage; ';
  return {
    step: keepPublished,
    next: `${first}  (keeps the published authority; ${newer}to keep this host's instead: ${renderStepSentence(s, pushOver)})`,
  };
}

/**
 * The verdict as one plain sentence with its label, e.g. "This host holds the published
 * authority SHA256:…: in sync." — the words of the table, for sync's lines and refusals.
 */
export function verdictSentence(verdict: Verdict): string {
  const words = verdictWords(verdict, { fingerprints: true });
  if (verdict.kind === 'blocked') return `Blocked: ${words.headline}`;
  return `${words.headline.replace(/\.$/, '')}: ${words.label}.`;
}
