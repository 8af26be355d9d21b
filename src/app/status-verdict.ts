/**
 * The verdict of the decision table in words, with its mark and the exact next command. One
 * table for status (TTY, plain, JSON) and failover, so the same verdict never reads two ways.
 */
import { lineageWords } from '../share/operations.js';
import { actionCommand, personalise, suggest, type Suggester } from '../suggest-command.js';
import type { Lineage, Verdict } from '../share/types.js';

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

/**
 * The lineage diagnosis (DESIGN.md §5) as a sentence. The words are the operations' own
 * (src/share/operations.ts), so sync's refusal and the console never describe it two ways.
 */
export function lineageSentence(lineage: Lineage): string {
  const words = lineageWords(lineage);
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * `baton` is the one builder of suggested commands (src/suggest-command.ts), or just the
 * prefix with the global flags (a view on a terminal): the next step can be pasted as it
 * stands, and without a terminal it is the `sync` that does what `failover` would.
 */
export function describeVerdict(verdict: Verdict, baton: string | Suggester = 'baton'): VerdictWords {
  const s: Suggester = typeof baton === 'string' ? { prefix: baton, inventory: undefined, terminal: true } : baton;
  switch (verdict.kind) {
    case 'in-sync':
      return { tone: 'ok', label: 'in sync', headline: 'This host holds the published authority.', next: 'Nothing to do.' };
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
          ? 'This host lost its authority files (the marker is present); the published authority can be adopted.'
          : 'This host holds no authority; the deployment\'s published authority can be adopted.',
        next: actionCommand(s, 'adopt'),
      };
    case 'publish':
      return {
        tone: 'action',
        label: 'action needed',
        headline: 'Nothing is published: this host\'s authority can be published.',
        next: actionCommand(s, 'publish'),
      };
    case 'refuse':
      return {
        tone: 'refused',
        label: 'refused',
        headline: `The local and published authorities differ. ${lineageSentence(verdict.lineage)}`,
        next: refuseNext(verdict, s),
      };
    case 'blocked':
      return { tone: 'refused', label: 'blocked', headline: verdict.why, next: personalise(verdict.next, s) };
    default:
      return assertNever(verdict);
  }
}

function refuseNext(verdict: Extract<Verdict, { kind: 'refuse' }>, s: Suggester): string {
  if (verdict.sealedWithoutKey) {
    // Force cannot open a sealed document without the key, and a push must not unseal by accident.
    return verdict.lineage === 'ahead'
      ? `Set seal_key_file (the key the other controllers use), then ${suggest(s, 'sync --push')}`
      : `Set seal_key_file (the key the other controllers use), then ${actionCommand(s, 'force')}`;
  }
  if (verdict.lineage === 'ahead') return suggest(s, 'sync --push');
  return s.terminal ? `${actionCommand(s, 'force')}  (a replace asks for a typed confirmation)` : `${actionCommand(s, 'force')}  (check both fingerprints first)`;
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
