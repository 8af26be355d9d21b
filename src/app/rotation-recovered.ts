/**
 * `mesh rollback X` as a start state of the rotation's machine (rotation-flow.ts). What the
 * operation read — X's records (the journal's, or the machines' intents), which pairs are
 * still X's on the machines — becomes the `rolling-back` step that a rotation reaches when its
 * wait ends with pairs unfinished. From there the reducer and the runner are the rotation's
 * own: the same `roll-back` effect (each consumer read first, the test login before a pair is
 * finished, the restore, the look at the old receipt, the intents' outcomes), the same record
 * and the same discard of the finished pairs' previous files. A crash anywhere in a rotation
 * past its `prepared` record therefore ends where the rotation itself would have: every pair
 * finished or taken back.
 *
 * `mesh resume X` is the other start: what it read on every holder, once resumeFromRead
 * (src/mesh/resume.ts) found every end live or staged with the prepared secret, becomes the
 * `committing` step with the provider ends already live counted as committed. From there the
 * rotation's commit, receipt wait and test logins run; where a resume is not a rotation (its
 * records, the intents of pairs finished before, never rolling back) the reducer reads the
 * state's `resume` (rotation-flow.ts `Resuming`). Pure: nothing here reads or writes.
 */
import { EXIT_OK } from '../errors.js';
import type { MachineFailure } from '../mesh/delivery.js';
import type { SecretDigest } from '../mesh/digest.js';
import type { JournalRecord } from '../mesh/journal.js';
import type { Resolution } from '../mesh/resolve-holders.js';
import type { PairRevoke } from '../mesh/revoke.js';
import type { ResumeStart } from '../mesh/resume.js';
import type { TestLoginRecord } from '../mesh/test-login.js';
import { waitBegun } from '../mesh/receipt-wait-machine.js';
import type { Holder, PlannedPair, RotationPlan } from '../mesh/rotation-plan.js';
import {
  ROTATION_EXIT,
  type Previous,
  type RotationOutcome,
  type RotationState,
  type Step,
} from './rotation-flow.js';
import { emptyLog, logAdd } from './rotation-log.js';
import { journalRevoked } from './rotation-revoke.js';

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
  // No gate: a machine the roll-back cannot reach shows in its pairs' results (provider- or
  // consumer-unknown), never as a closed gate, which would leave them for a person to untangle.
  const state: RotationState = {
    step: 'rolling-back',
    id: read.id,
    plan: planOf(read),
    resolutions: resolvedAll(read.holders),
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

/** The journal keeps the selector's words only: the machine is given the pairs it names. */
function planOf(read: {
  readonly pairs: readonly PlannedPair[];
  readonly holders: readonly Holder[];
  readonly selectorText: string;
}): RotationPlan {
  return {
    selector: {
      by: 'union',
      of: read.pairs.map((p) => ({ by: 'pair' as const, provider: p.provider, consumer: p.consumer })),
    },
    selectorText: read.selectorText,
    pairs: read.pairs,
    holders: read.holders,
  };
}

/** Every holder was read before the machine starts: none is left to resolve. */
function resolvedAll(holders: readonly Holder[]): Record<string, Resolution> {
  const resolutions: Record<string, Resolution> = {};
  for (const holder of holders) resolutions[holder.machine] = { status: 'resolved' };
  return resolutions;
}

/** What `mesh resume` read before it renames anything, and where resumeFromRead starts it. */
export interface ResumeFrom {
  readonly id: string;
  /** The pairs still the rotation's (resumablePlan of the records without the settled ones). */
  readonly pairs: readonly PlannedPair[];
  readonly holders: readonly Holder[];
  readonly digests: Readonly<Record<string, SecretDigest>>;
  /** The rotation's `prepared` record, as the pairs still its own: the resume's records are written from it. */
  readonly record: JournalRecord;
  /** Pairs an earlier step finished (appliedInJournal). */
  readonly finishedBefore: ReadonlySet<string>;
  readonly start: Extract<ResumeStart, { kind: 'commit' }>;
}

/**
 * The `committing` step for a resume: the provider ends read live count as committed (never
 * renamed again), the commit renames the others, and the receipt wait is the pairs' whose
 * consumer end is not live yet. Its commit effect writes the `committing` intents first, as a
 * rotation's does; one that cannot be written closes the gate with nothing renamed.
 */
export function resumeStart(read: ResumeFrom): Step {
  let committed = emptyLog<true>();
  for (const p of read.pairs) {
    const key = `${p.providerMachine}\0${p.providerPath}`;
    if (read.start.live.has(key)) committed = logAdd(committed, key, true);
  }
  const consumersLive = read.pairs
    .filter((p) => read.start.live.has(`${p.consumerMachine}\0${p.consumerPath}`))
    .map((p) => p.key);
  const waited = read.pairs.filter((p) => !consumersLive.includes(p.key));
  const state: RotationState = {
    step: 'committing',
    id: read.id,
    plan: planOf({ ...read, selectorText: read.record.selector }),
    resolutions: resolvedAll(read.holders),
    digests: read.digests,
    committed,
    wait: waitBegun(waited, read.digests),
    resume: {
      record: read.record,
      finishedBefore: [...read.finishedBefore],
      consumersLive,
      alreadyLive: read.start.alreadyLive,
      providersLive: committed.size,
    },
  };
  return { state, effects: [{ type: 'commit' }] };
}

/** Who writes a resume's record, and when. */
export interface RecordBy {
  readonly operator: string;
  readonly at: string;
  /** The mesh's identity (meshIdentity): a record without one is read by no mesh's status. */
  readonly mesh: string | undefined;
}

/**
 * A resume's record: the rotation's `prepared` record with its phase, each holder's result
 * (the machine whose rename failed, or which could not be read, with its reason), what is
 * applied now and the test logins made. A refusal from the read writes it too, with nothing applied.
 */
export function resumeRecord(
  prepared: JournalRecord,
  by: RecordBy,
  phase: 'resumed' | 'resume-failed',
  failures: readonly MachineFailure[],
  applied?: { readonly keys: readonly string[]; readonly windows: Readonly<Record<string, number>> },
  testLogins: readonly TestLoginRecord[] = [],
): JournalRecord {
  return {
    ...resumedFrom(prepared, by, phase),
    results: prepared.holders.map((h) => {
      const f = failures.find((x) => x.machine === h.machine);
      return f
        ? { machine: h.machine, ok: false, reason: f.reason }
        : { machine: h.machine, ok: phase === 'resumed' };
    }),
    ...(applied ? { applied: applied.keys, windows_ms: applied.windows } : {}),
    ...(testLogins.length > 0 ? { test_logins: testLogins } : {}),
  };
}

/** The second `resumed` record, once `--revoke-previous` revoked: each pair whose left login was revoked is marked. */
export function resumeRevokedRecord(
  prepared: JournalRecord,
  by: RecordBy,
  applied: readonly string[],
  revoked: readonly PairRevoke[],
): JournalRecord {
  return {
    ...resumedFrom(prepared, by, 'resumed'),
    pairs: prepared.pairs.map((p) => journalRevoked(p, { step: 'done', revoked })),
    applied: [...applied],
  };
}

/** A resume's record is the rotation's `prepared` one (its pairs, holders and digests), written now, by this command. */
function resumedFrom(
  prepared: JournalRecord,
  by: RecordBy,
  phase: 'resumed' | 'resume-failed',
): JournalRecord {
  return { ...prepared, mesh: by.mesh, at: by.at, operator: by.operator, phase };
}
