/**
 * The verdict of the decision table in words, with its mark and the exact next command. One
 * table for status (TTY, plain, JSON) and failover, so the same verdict never reads two ways.
 */
import { lineageWords } from '../share/lineage.js';
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
 * The lineage diagnosis (DESIGN.md §5) as a sentence, with the handover proof ("PROVED: …" /
 * "CLAIMED, NOT PROVED: …"). The words are the domain's own (src/share/lineage.ts), so sync's
 * refusal, status, the failover walk and the force screen never describe it two ways.
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
      return {
        tone: 'refused',
        label: 'refused',
        headline: `The local and published authorities differ. ${lineageSentence(verdict.lineage)}`,
        next: verdict.lineage.kind === 'ahead' ? `${baton} sync --push` : `${baton} failover  (a replace asks for a typed confirmation)`,
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
