/**
 * `mesh rollback X` as a start state of the rotation's machine (rotation-flow.ts). What the
 * operation read — X's records (the journal's, or the machines' intents), which pairs are
 * still X's on the machines — becomes the `rolling-back` step that a rotation reaches when its
 * wait ends with pairs unfinished. From there the reducer and the runner are the rotation's
 * own: the same `roll-back` effect (each consumer read first, the test login before a pair is
 * finished, the restore, the look at the old receipt, the intents' outcomes), the same record
 * and the same discard of the finished pairs' previous files. A crash anywhere in a rotation
 * past its `prepared` record therefore ends where the rotation itself would have: every pair
 * finished or taken back. `mesh resume` is not a start state yet (docs/mesh-rotation.md,
 * "Finishing or taking back later"): its start is decided from its read by resumeFromRead
 * (src/mesh/resume.ts), and it names how it ended in the rotation's outcomes (resumeOutcome).
 * Pure: nothing here reads or writes.
 */
import { EXIT_OK } from '../errors.js';
import type { SecretDigest } from '../mesh/digest.js';
import type { Resolution } from '../mesh/resolve-holders.js';
import type { Holder, PlannedPair, RotationPlan } from '../mesh/rotation-plan.js';
import {
  ROTATION_EXIT,
  type Previous,
  type RotationOutcome,
  type RotationState,
  type Step,
} from './rotation-flow.js';

/** What `mesh rollback` read before it changes anything. */
export interface TakeBackRead {
  readonly id: string;
  /** Every pair X prepared, rebuilt from its `prepared` record (resumablePlan). */
  readonly pairs: readonly PlannedPair[];
  readonly holders: readonly Holder[];
  /** The selector's words the rotation recorded. */
  readonly selectorText: string;
  /** The digests X prepared, by pair (and consumerDigestKey). */
  readonly digests: Readonly<Record<string, SecretDigest>>;
  /** Each pair's provider file kept at its commit, as the records name it (previousInJournal). */
  readonly previous: Previous;
  /** Pairs an earlier step finished (the records' `applied`, appliedInJournal). */
  readonly finished: ReadonlySet<string>;
  /** Pairs no longer X's on the machines (finished, taken back or rotated since): left alone. */
  readonly settled: ReadonlySet<string>;
}

/** The command that started the machine: the summary's "why" ("rolled back (mesh rollback)"). */
export const TAKE_BACK_COMMAND = 'mesh rollback';

/**
 * The `rolling-back` step for `read`, asking for the roll-back of every pair still open: not
 * finished by an earlier step and still X's on the machines (never a later rotation's files).
 * With none open the roll-back of nothing still ends in the record that says so.
 */
export function takeBackStart(read: TakeBackRead): Step {
  const open = read.pairs
    .filter((p) => !read.finished.has(p.key) && !read.settled.has(p.key))
    .map((p) => p.key);
  // The journal keeps the selector's words only: the machine is given the pairs it names.
  const plan: RotationPlan = {
    selector: {
      by: 'union',
      of: read.pairs.map((p) => ({ by: 'pair' as const, provider: p.provider, consumer: p.consumer })),
    },
    selectorText: read.selectorText,
    pairs: read.pairs,
    holders: read.holders,
  };
  // No gate: a machine the roll-back cannot reach shows in its pairs' results (provider- or
  // consumer-unknown), never as a closed gate, which would leave them for a person to untangle.
  const resolutions: Record<string, Resolution> = {};
  for (const holder of read.holders) resolutions[holder.machine] = { status: 'resolved' };
  const state: RotationState = {
    step: 'rolling-back',
    id: read.id,
    plan,
    resolutions,
    digests: read.digests,
    previous: read.previous,
    applied: [...read.finished],
    windows: {},
    failures: [],
    stopped: TAKE_BACK_COMMAND,
    recovered: true,
  };
  return { state, effects: [{ type: 'roll-back', pairs: open }] };
}

/**
 * The exit code of a `mesh rollback` from its machine's outcome (rotationOutcome): the
 * rotation's own (ROTATION_EXIT), but for `taken-back`, which is what the command was asked
 * for — 0, where a rotation that ended taken back did not rotate (3).
 */
export const TAKE_BACK_EXIT: Readonly<Record<RotationOutcome, number>> = {
  ...ROTATION_EXIT,
  'taken-back': EXIT_OK,
};

/** What `mesh resume` left, counted (src/operations/resume.ts). */
export interface ResumeEnd {
  /** Machines where a rename failed: their files are still staged. */
  readonly failures: number;
  /** Pairs whose test login was refused: their consumer ends are still staged. */
  readonly refused: number;
  /** Pairs whose receipt did not come: their consumer ends are still staged. */
  readonly pending: number;
  /** A left login's revoke (--revoke-previous) was not confirmed. */
  readonly revokeUnconfirmed: boolean;
}

/**
 * How a `mesh resume` ended, in the rotation's words, so its exit comes from the same table
 * (ROTATION_EXIT) as the rotation it finishes: a failed rename first (1), then what waits for
 * the operator (3) — a refused login, a pending receipt, an unconfirmed revoke — else rotated (0).
 */
export function resumeOutcome(end: ResumeEnd): RotationOutcome {
  if (end.failures > 0) return 'commit-interrupted';
  if (end.refused > 0) return 'login-refused';
  if (end.pending > 0) return 'receipts-pending';
  if (end.revokeUnconfirmed) return 'revoke-unconfirmed';
  return 'rotated';
}
