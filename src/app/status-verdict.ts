/**
 * The verdict of the decision table in words, with its mark and the exact next command. One
 * table for status (TTY, plain, JSON) and failover, so the same verdict never reads two ways.
 */
import { lineageWords } from '../share/operations.js';
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
 * `baton` is the command prefix with the global flags the operator gave, so the next step can
 * be pasted as it stands (a bare `baton sync` would read another config and do something else).
 */
export function describeVerdict(verdict: Verdict, baton = 'baton'): VerdictWords {
  switch (verdict.kind) {
    case 'in-sync':
      return { tone: 'ok', label: 'in sync', headline: 'This host holds the published authority.', next: 'Nothing to do.' };
    case 'first-controller':
      return {
        tone: 'action',
        label: 'action needed',
        headline: 'Nothing is published and this host holds no authority: it can be the first controller.',
        next: `${baton} failover`,
      };
    case 'adopt':
      return {
        tone: 'action',
        label: 'action needed',
        headline: verdict.lostMarker
          ? 'This host lost its authority files (the marker is present); the published authority can be adopted.'
          : 'This host holds no authority; the deployment\'s published authority can be adopted.',
        next: `${baton} failover`,
      };
    case 'publish':
      return {
        tone: 'action',
        label: 'action needed',
        headline: 'Nothing is published: this host\'s authority can be published.',
        next: `${baton} failover`,
      };
    case 'refuse':
      // AHEAD is this host's own rotation, not yet pushed: the expected state right after
      // `ca rotate`, so it is an action to take, not a refusal in red.
      if (verdict.lineage === 'ahead') {
        return {
          tone: 'action',
          label: 'not published yet',
          headline: lineageSentence(verdict.lineage),
          next: `${baton} sync --push  (publishes the rotated authority)`,
        };
      }
      return {
        tone: 'refused',
        label: 'refused',
        headline: `The local and published authorities differ. ${lineageSentence(verdict.lineage)}`,
        next: `${baton} failover  (a replace asks for a typed confirmation)`,
      };
    case 'blocked':
      return { tone: 'refused', label: 'blocked', headline: verdict.why, next: verdict.next };
    default:
      return assertNever(verdict);
  }
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}
