/**
 * The verdict of the decision table (DESIGN.md §5) in words: its tone, its label, a headline
 * and the exact next command. ONE table for sync, status (TTY, plain, JSON), failover and the
 * drill, so the same verdict never reads two ways. The screen shows fingerprints in their own
 * panels and leaves them out of the headline; a plain sentence or a refusal carries them.
 */
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { lineageWords } from './lineage.js';
import type { Lineage, Verdict } from './types.js';
import { actionCommand, personalise, suggest, type Suggester } from '../suggest-command.js';

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
  const s: Suggester = typeof given === 'string' ? { prefix: given, inventory: undefined, terminal: true } : given;
  const fp = (fingerprint: Fingerprint) => (options.fingerprints ? ` ${fingerprint}` : '');
  switch (verdict.kind) {
    case 'in-sync':
      return {
        tone: 'ok',
        label: 'in sync',
        headline: `This host holds the published authority${fp(verdict.fingerprint)}.`,
        next:
          verdict.previous === undefined
            ? 'Nothing to do.'
            : `A rotation overlap is open (the previous authority${fp(verdict.previous)} is still trusted): \`ca rotate\` refuses until it ends. Once every node trusts the current authority: ${suggest(s, 'ca retire')}`,
      };
    case 'first-controller':
      return {
        tone: 'action',
        label: 'action needed',
        headline: 'Nothing is published and this host holds no authority: it can be the first controller.',
        next: actionCommand(s, 'first-controller'),
      };
    case 'adopt':
      return {
        tone: 'action',
        label: 'action needed',
        headline: verdict.lostMarker
          ? `This host lost its authority files (the marker is present); the published authority${fp(verdict.published)} can be adopted.`
          : `This host holds no authority; the deployment's published authority${fp(verdict.published)} can be adopted.`,
        next: actionCommand(s, 'adopt'),
      };
    case 'publish':
      return {
        tone: 'action',
        label: 'action needed',
        headline: `Nothing is published: this host's authority${fp(verdict.local)} can be published.`,
        next: actionCommand(s, 'publish'),
      };
    case 'refuse':
      // AHEAD is this host's own rotation, not yet pushed: the expected state right after
      // `ca rotate`. It is a step to take ("not published yet", the push), not a refusal in red.
      if (verdict.lineage.kind === 'ahead') {
        return {
          tone: 'action',
          label: 'not published yet',
          headline: `${lineageSentence(verdict.lineage)}${options.fingerprints ? ` Local${fp(verdict.local)}, published${fp(verdict.published)}.` : ''}`,
          next: refuseNext(verdict, s),
        };
      }
      return {
        tone: 'refused',
        label: 'refused',
        headline: `The local${fp(verdict.local)} and published${fp(verdict.published)} authorities differ. ${lineageSentence(verdict.lineage)}`,
        next: refuseNext(verdict, s),
      };
    case 'blocked':
      return { tone: 'refused', label: 'blocked', headline: verdict.why, next: personalise(verdict.next, s) };
  }
}

function refuseNext(verdict: Extract<Verdict, { kind: 'refuse' }>, s: Suggester): string {
  if (verdict.sealedWithoutKey) {
    // Force cannot open a sealed document without the key, and a push must not unseal by accident.
    return verdict.lineage.kind === 'ahead'
      ? `Set seal_key_file (the key the other controllers use), then ${suggest(s, 'sync --push')}`
      : `Set seal_key_file (the key the other controllers use), then ${actionCommand(s, 'force')}`;
  }
  if (verdict.lineage.kind === 'ahead') return suggest(s, 'sync --push');
  return s.terminal ? `${actionCommand(s, 'force')}  (a replace asks for a typed confirmation)` : `${actionCommand(s, 'force')}  (check both fingerprints first)`;
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
