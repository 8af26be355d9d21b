/**
 * `baton mesh resume <id>` finishes a commit from what is staged on the machines, checked
 * against the digests the journal recorded at prepare: provider ends first, then each consumer
 * end whose provider's receipt has arrived. It NEVER GENERATES A SECRET: a new one
 * for a pair whose staged file exists would give its two ends different passwords, the
 * half-rotation this whole command exists to prevent. Here: what it resumes (resumablePlan)
 * and where it starts from what it read (resumeFromRead); the renames run on the rotation's
 * machine, entered at `committing` (src/app/rotation-recovered.ts resumeStart).
 */
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { reasonOf, type FileDigests, type TransportFor } from './transport.js';
import { consumerDigestKey, endDigest, type MachineFailure } from './delivery.js';
import type { SecretDigest } from './digest.js';
import { inventoryIndex, type Inventory, type Pair } from './inventory.js';
import type { JournalPair, JournalRecord } from './journal.js';
import { PHASES } from './rotation-phase.js';
import { slotOfLogin } from './alternating.js';
import { mapBounded } from './map-bounded.js';
import { holdersOf, loginFilePaths, windowText, type Holder, type PlannedPair } from './rotation-plan.js';

/** The pairs a rotation's records say are finished: consumer end live after a receipt. */
export function appliedInJournal(records: readonly JournalRecord[]): Set<string> {
  const out = new Set<string>();
  for (const record of records)
    if (PHASES[record.phase].finishes) for (const key of record.applied ?? []) out.add(key);
  return out;
}

/** What resume needs from the journal: the prepared pairs, their digests, and who holds them. */
export function resumablePlan(
  id: string,
  records: readonly JournalRecord[],
  inventory: Inventory,
  where: string,
  /** The command asking, for its refusal's words. */
  command: 'resume' | 'rollback' = 'resume',
) {
  if (records.length === 0) {
    throw new BatonError('usage', {
      what: `No rotation "${id}" is in the journal.`,
      where,
      next: "Check the id in the rotation's output (or the journal).",
      changed: 'Nothing was sent.',
    });
  }
  const prepared = records.find((r) => r.phase === 'prepared');
  if (!prepared) {
    throw new BatonError('refused', {
      what: `Rotation ${id} never finished preparing (${records.map((r) => r.phase).join(', ')}): nothing of it took effect.`,
      where,
      changed: 'Nothing was sent.',
      next: 'Start a new rotation.',
    });
  }
  const finished = appliedInJournal(records);
  if (prepared.pairs.every((p) => finished.has(p.key))) {
    // Its last word `revoking`: baton stopped during the revoke, which only status can read the truth of.
    const revoking = records.at(-1)?.phase === 'revoking';
    throw new BatonError('refused', {
      what: `Rotation ${id} already finished its commit: every pair was applied; there is nothing to ${command === 'resume' ? 'resume' : 'roll back'}${revoking ? ', but baton stopped during its --revoke-previous' : ''}.`,
      where,
      changed: 'Nothing was sent.',
      next: revoking
        ? [
            'See whether the revoke took effect (revoked, armed, or not revoked) and what to do: ',
            nextStep('mesh status'),
          ]
        : 'Start a new rotation if the credentials must change again.',
    });
  }
  const machines = inventoryIndex(inventory).machines;
  const pairs: PlannedPair[] = [];
  const digests: Record<string, SecretDigest> = {};
  for (const p of prepared.pairs) {
    if (!p.digest)
      throw new BatonError('failed', {
        what: `The journal's prepared record for ${id} has no digest for ${p.key}.`,
        where,
        changed: 'Nothing was sent.',
      });
    for (const machine of [p.provider_machine, p.consumer_machine]) {
      if (!machines.has(machine)) {
        throw new BatonError('config', {
          what: `Rotation ${id} delivered to machine "${machine}", which this inventory does not list.`,
          where: inventory.source,
          next: 'Resume with the inventory the rotation used.',
          changed: 'Nothing was sent.',
        });
      }
    }
    digests[p.key] = p.digest;
    if (p.consumer_digest) digests[consumerDigestKey(p.key)] = p.consumer_digest;
    // The pair as the rotation planned it: its mode, the login it moves to and the one it leaves.
    const pair: Pair = {
      provider: p.provider,
      consumer: p.consumer,
      role: p.role,
      providerMachine: p.provider_machine,
      consumerMachine: p.consumer_machine,
      credential: p.credential ?? 'single',
    };
    const login = loginFromJournal(p);
    pairs.push({
      ...pair,
      key: p.key,
      providerPath: p.provider_path,
      consumerPath: p.consumer_path,
      receiptPath: p.receipt_path,
      window: windowText(pair, login, p.retire, leavesFromJournal(p)),
      ...(login ? { login } : {}),
      ...(leavesFromJournal(p) ? { leaves: leavesFromJournal(p)! } : {}),
      ...(p.retire && p.retire.length > 0 ? { retire: p.retire } : {}),
    });
  }
  const holders = holdersOf(pairs, (name) => machines.get(name)!);
  return { selector: prepared.selector, pairs, holders, digests };
}

/** A pair switched back to one role: the login its consumer used until then. */
function leavesFromJournal(p: JournalPair): string | undefined {
  return p.credential !== 'alternating' && p.left ? p.left : undefined;
}

/** An alternating pair's logins as the journal names them, with the left login's files beside the target's. */
function loginFromJournal(p: JournalPair): PlannedPair['login'] {
  if (p.credential !== 'alternating' || !p.login) return undefined;
  const slot = slotOfLogin(p.role, p.login);
  if (!slot) return undefined;
  const left = p.left ? slotOfLogin(p.role, p.left) : undefined;
  return {
    slot,
    role: p.login,
    ...(left
      ? {
          left: {
            slot: left,
            role: p.left!,
            ...loginFilePaths({ providerPath: p.provider_path, role: p.role }, left),
          },
        }
      : {}),
  };
}

/** What `mesh resume` read on every holder: each end's digests in `receives` order, or why it could not be read. */
export interface ResumeRead {
  readonly id: string;
  readonly holders: readonly Holder[];
  /** The digests the rotation prepared, by pair (and consumerDigestKey). */
  readonly digests: Readonly<Record<string, SecretDigest>>;
  readonly reads: Readonly<Record<string, readonly FileDigests[] | MachineFailure>>;
}

/** Every holder's digests of the ends it receives, read before anything is renamed (or why it could not be read). */
export async function readResumeEnds(
  holders: readonly Holder[],
  transportFor: TransportFor,
  concurrency: number,
): Promise<ResumeRead['reads']> {
  const reads: Record<string, readonly FileDigests[] | MachineFailure> = {};
  await mapBounded(holders, concurrency, async (holder) => {
    try {
      reads[holder.machine] = await transportFor(holder.machine).digests(holder.receives.map((d) => d.path));
    } catch (error) {
      reads[holder.machine] = { machine: holder.machine, reason: reasonOf(error) };
    }
  });
  return reads;
}

/**
 * Where a resume starts from what it read, decided before anything is renamed: a holder that
 * could not be read, or an end holding neither the prepared secret live nor staged, refuses
 * the whole resume with its way out (`mesh resume` again once reachable; a new rotation, since
 * resume never invents a secret). Otherwise `toCommit` names the staged ends still to rename
 * (`machine\0path`) and `live` those already live with the prepared secret, which are
 * never renamed again. Pure: the read is the caller's.
 */
export type ResumeStart =
  | {
      readonly kind: 'refused';
      /** What each machine's record says went wrong (the `resume-failed` record's results). */
      readonly failures: readonly MachineFailure[];
      readonly error: BatonError;
    }
  | {
      readonly kind: 'commit';
      readonly toCommit: ReadonlySet<string>;
      readonly live: ReadonlySet<string>;
      /** Ends already live with the prepared secret (the report's "already live"). */
      readonly alreadyLive: number;
    };

export function resumeFromRead(read: ResumeRead): ResumeStart {
  const { id, holders, digests, reads } = read;
  const unreadable: MachineFailure[] = [];
  const wrong: MachineFailure[] = [];
  const toCommit = new Set<string>();
  const live = new Set<string>();
  for (const holder of holders) {
    const answered = reads[holder.machine] ?? { machine: holder.machine, reason: 'not read' };
    if ('reason' in answered) {
      unreadable.push(answered);
      continue;
    }
    holder.receives.forEach((d, i) => {
      const expected = endDigest(digests, d.pair, d.end);
      const key = `${holder.machine}\0${d.path}`;
      if (answered[i]?.live === expected) live.add(key);
      else if (answered[i]?.next === expected) toCommit.add(key);
      else
        wrong.push({
          machine: holder.machine,
          reason: `${holder.machine}: ${d.path}.next is ${answered[i]?.next ? 'a different secret' : 'missing'}`,
        });
    });
  }
  if (unreadable.length > 0)
    return {
      kind: 'refused',
      failures: unreadable,
      error: new BatonError('gate-closed', {
        what: `Rotation ${id} cannot be resumed: ${unreadable.length} machine${unreadable.length === 1 ? '' : 's'} could not be read.`,
        where: unreadable.map((u) => `${u.machine} (${u.reason})`).join('; '),
        changed: 'Nothing was renamed.',
        next: ['Make them reachable, then run ', nextStep(`mesh resume ${id}`), ' again.'],
      }),
    };
  if (wrong.length > 0)
    return {
      kind: 'refused',
      failures: wrong,
      error: new BatonError('refused', {
        what: `Rotation ${id} cannot be finished from what is staged: ${wrong.length === 1 ? '1 file does' : `${wrong.length} files do`} not hold the prepared secret.`,
        where: wrong.map((w) => w.reason).join('; '),
        changed: 'Nothing was renamed.',
        next: `Rotate these pairs again (baton mesh rotate --pair PROVIDER:CONSUMER); resume never invents a secret.`,
      }),
    };
  return { kind: 'commit', toCommit, live, alreadyLive: live.size };
}
