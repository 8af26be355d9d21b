/**
 * One vocabulary for where a rotation stands, read by the journal, the intent records on the
 * machines, the rotation flow and `mesh status`: the phases are listed once here and each
 * reader takes its meaning from the one table below, so a new phase cannot mean "open" to the
 * journal's history and "finished" to resume (the fault of keeping three lists in step by hand).
 */

/** A pair's intent on its provider, in order (intent.ts): `preparing` … `committing`, then `finished` or `rolled-back`. */
export const INTENT_PHASES = ['preparing', 'prepared', 'committing', 'finished', 'rolled-back'] as const;
export type IntentPhase = (typeof INTENT_PHASES)[number];

/** The phases a journal record names; `mesh status` shows a rotation's last one as its outcome. */
export const JOURNAL_PHASES = [
  'gate-closed',
  'resolved',
  'cancelled',
  'prepared',
  'prepare-failed',
  'committed',
  'commit-failed',
  'applied',
  /**
   * `--revoke-previous` under way: every pair is finished and each left login's fresh secret is
   * named (`revoke_target`) before it is staged, so a baton killed during the revoke leaves a
   * journal that tells the revoke's own files from a stray. The `applied` record follows it.
   */
  'revoking',
  'resumed',
  'resume-failed',
  /** The unfinished pairs were taken back (`rolled_back` says how each ended). */
  'rolled-back',
  /** A `mesh rollback` that found every pair it touched finished: one word per outcome. */
  'finished',
  'seeded',
] as const;
export type JournalPhase = (typeof JOURNAL_PHASES)[number];

export interface PhaseMeaning {
  /**
   * What the intent of each pair the record's step acted on says once that step is done
   * (undefined: the phase writes no intent — nothing was staged, or it is not a rotation's).
   * A roll-back's and a resume's pairs may end either way; their record says per pair.
   */
  readonly intent: IntentPhase | undefined;
  /** A rotation whose last record has this phase may have live provider ends and is unfinished. */
  readonly open: boolean;
  /** The record's `applied` list names pairs finished (consumer end live after their receipt). */
  readonly finishes: boolean;
}

export const PHASES: Readonly<Record<JournalPhase, PhaseMeaning>> = {
  'gate-closed': { intent: undefined, open: false, finishes: false },
  resolved: { intent: undefined, open: false, finishes: false },
  cancelled: { intent: undefined, open: false, finishes: false },
  prepared: { intent: 'prepared', open: true, finishes: false },
  'prepare-failed': { intent: 'rolled-back', open: false, finishes: false },
  committed: { intent: 'committing', open: true, finishes: false },
  'commit-failed': { intent: 'committing', open: true, finishes: false },
  applied: { intent: 'finished', open: false, finishes: true },
  revoking: { intent: 'finished', open: false, finishes: true },
  resumed: { intent: 'finished', open: false, finishes: true },
  // Its `applied` keys are what this attempt renamed; a failed resume is finished by the next one.
  'resume-failed': { intent: 'committing', open: true, finishes: false },
  'rolled-back': { intent: 'rolled-back', open: true, finishes: true },
  finished: { intent: 'finished', open: false, finishes: true },
  seeded: { intent: undefined, open: false, finishes: false },
};

/** The phases in which a pair's rotation has files on the machines that some step must still finish or take back. */
export function isUnfinished(phase: IntentPhase): boolean {
  return phase === 'preparing' || phase === 'prepared' || phase === 'committing';
}

/**
 * The rotation flow's steps that write a record, and the phase each writes (rotation-flow.ts
 * takes its records from here): the screen's step and the journal's phase are one word apart
 * only where the step names the work in flight and the phase what is on disk once it is done.
 * A machine started by a later command says what that command did (rotation-flow.ts
 * `recordedPhase`): `mesh resume`'s `done` writes `resumed`, or `resume-failed` after a failed
 * rename; `mesh rollback`'s `rolled-back` writes `finished` when every pair it touched was.
 */
export const RECORD_OF_STEP = {
  'gate-closed': 'gate-closed',
  confirming: 'resolved',
  cancelled: 'cancelled',
  committing: 'prepared',
  'prepare-failed': 'prepare-failed',
  applying: 'committed',
  done: 'applied',
  'rolled-back': 'rolled-back',
} as const satisfies Readonly<Record<string, JournalPhase>>;
export type RecordedStep = keyof typeof RECORD_OF_STEP;
