/**
 * A rotation's truth on the machines: before any file of a rotation is written, the provider's
 * machine holds the rotation's INTENT for each pair (rotation id, pair, phase, and once known
 * the digests that finish or take it back), in `.<role>.rotation` beside the provider's files;
 * every later step advances it there before acting. The consumer's end gets a record naming
 * the rotation its staged file belongs to. So a leftover says which rotation it belongs to,
 * whoever reads it — another controller, a lost journal, an edited inventory — and `mesh
 * status`, `rotate`, `resume` and `rollback` read these, not one controller's journal.
 * Records carry digests and names only, never a secret.
 */
import os from 'node:os';
import { z } from 'zod';
import type { JournalHistory } from './journal-history.js';
import { JOURNAL_PAIR_SCHEMA, ROTATION_ID, type JournalPair } from './journal.js';
import { mapBounded } from './map-bounded.js';
import type { EndsRead, PlannedPair } from './rotation-plan.js';
import { INTENT_PHASES, isUnfinished, PHASES, type IntentPhase } from './rotation-phase.js';
import { reasonOf, recordPath, type MachineRecord, type TransportFor } from './transport.js';

export { INTENT_PHASES, isUnfinished, type IntentPhase } from './rotation-phase.js';

/** Who wrote a record (the controller's host and pid), and when. */
export interface RecordWriter {
  readonly host: string;
  readonly pid: number;
}

export interface ProviderIntent {
  readonly v: 1;
  readonly end: 'provides';
  readonly rotation: string;
  readonly pair: string;
  readonly phase: IntentPhase;
  readonly at: string;
  readonly by: RecordWriter;
  /** What the rotation prepared (digests, logins), once it is known: what finishes it or takes it back. */
  readonly prepared?: JournalPair;
}

export interface ConsumerRecord {
  readonly v: 1;
  readonly end: 'consumes';
  readonly rotation: string;
  readonly pair: string;
  readonly at: string;
  readonly by: RecordWriter;
}

export type MachineRecordText = ProviderIntent | ConsumerRecord;

/** The provider directory of a pair (where its files, receipts, intent and lock live). */
export function providerDir(pair: Pick<PlannedPair, 'providerPath'>): string {
  return pair.providerPath.slice(0, pair.providerPath.lastIndexOf('/'));
}

/** Where a pair's intent lives: the record of its single-role provider file, whatever its mode. */
export function intentPath(pair: Pick<PlannedPair, 'providerPath' | 'role'>): string {
  return recordPath(`${providerDir(pair)}/${pair.role}`);
}

/** Where a pair's consumer end says which rotation its staged file belongs to. */
export function consumerRecordPath(pair: Pick<PlannedPair, 'consumerPath'>): string {
  return recordPath(pair.consumerPath);
}

/*
 * A record as read from a machine is untrusted text: it is one of ours only in this shape. The
 * rotation id is bounded as the journal's is (ROTATION_ID). Objects are loose, so a later baton's additional fields are kept, not stripped.
 */
const writerSchema = z.looseObject({ host: z.string(), pid: z.number() });
const recordSchema = z.discriminatedUnion('end', [
  z.looseObject({
    v: z.literal(1),
    end: z.literal('provides'),
    rotation: ROTATION_ID,
    pair: z.string(),
    phase: z.enum(INTENT_PHASES),
    at: z.string(),
    by: writerSchema,
    prepared: JOURNAL_PAIR_SCHEMA.optional(),
  }),
  z.looseObject({
    v: z.literal(1),
    end: z.literal('consumes'),
    rotation: ROTATION_ID,
    pair: z.string(),
    at: z.string(),
    by: writerSchema,
  }),
]);

/** A record as read from a machine; undefined for anything that is not one of ours (never trusted further). */
export function parseRecord(text: string | undefined): MachineRecordText | undefined {
  if (text === undefined) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = recordSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

function writer(): RecordWriter {
  return { host: os.hostname(), pid: process.pid };
}

/** What the machines say about one pair, from the one read of its ends. */
export interface PairOnMachines {
  readonly intent: ProviderIntent | undefined;
  readonly consumer: ConsumerRecord | undefined;
  /** The provider lock's holder, in its own words, while someone holds it now. */
  readonly lockedBy: string | undefined;
}

/** A pair's records and lock, from ends read with their records (readPlanEnds, read-mesh-status). */
export function pairOnMachines(pair: PlannedPair, ends: EndsRead, self?: string): PairOnMachines {
  const single = ends.get(`${pair.providerMachine}\0${providerDir(pair)}/${pair.role}`);
  const live = ends.get(`${pair.providerMachine}\0${pair.providerPath}`);
  const consumerEnd = ends.get(`${pair.consumerMachine}\0${pair.consumerPath}`);
  const intent = parseRecord(single?.record);
  const consumer = parseRecord(consumerEnd?.record);
  const held = live?.lockedBy ?? single?.lockedBy;
  const lockedBy = held === undefined || held === self ? undefined : held;
  return {
    intent: intent?.end === 'provides' && intent.pair === pair.key ? intent : undefined,
    consumer: consumer?.end === 'consumes' && consumer.pair === pair.key ? consumer : undefined,
    lockedBy,
  };
}

/**
 * The journal's history with the machines' word first: where a pair's provider holds an
 * intent, IT says which rotation is unfinished (or that none is), which rotation prepared a
 * staged digest and what it prepared. The journal answers only for pairs whose machines hold
 * no record (rotations made before the records existed), and for what only it keeps (ages,
 * revokes).
 */
export function withMachineTruth(
  history: JournalHistory,
  onMachines: (key: string) => PairOnMachines | undefined,
): JournalHistory {
  return {
    ...history,
    pair(key) {
      const remembered = history.pair(key);
      const last = remembered.lastRotation;
      const intent = onMachines(key)?.intent;
      // baton killed between a pair's `finished` intent and the record after it (finish-apply
      // writes the intents first): the journal's last word on that rotation is still an open
      // phase, and its age the rotation before. The machines say it finished, and when.
      if (!last || intent?.rotation !== last.id || intent.phase !== 'finished' || !PHASES[last.outcome].open)
        return remembered;
      return {
        lastRotatedAt:
          remembered.lastRotatedAt !== undefined && remembered.lastRotatedAt > intent.at
            ? remembered.lastRotatedAt
            : intent.at,
        lastRotation: { ...last, outcome: 'finished' },
      };
    },
    unfinished(key) {
      const intent = onMachines(key)?.intent;
      if (intent) return isUnfinished(intent.phase) ? intent.rotation : undefined;
      return history.unfinished(key);
    },
    preparedBy(key, digest) {
      const on = onMachines(key);
      const prepared = on?.intent?.prepared;
      if (prepared && (prepared.digest === digest || prepared.consumer_digest === digest))
        return on.intent.rotation;
      // A finished rotation's record never claims a stray staged file: only a digest it prepared.
      return history.preparedBy(key, digest);
    },
    preparedPair(key, id) {
      const intent = onMachines(key)?.intent;
      if (intent?.rotation === id && intent.prepared) return intent.prepared;
      return history.preparedPair(key, id);
    },
  };
}

/** A failure to write a record on a machine, in the shape delivery's failures take. */
export interface RecordFailure {
  readonly machine: string;
  readonly reason: string;
}

/**
 * The records that write (or advance) the intent of each pair on its provider's machine, and at
 * `preparing` the consumer's record too, by machine: what recordIntent writes, or what a step's
 * own request carries ahead of it (Transport.writeRecordsThen).
 */
export function intentRecords(
  rotation: string,
  pairs: readonly PlannedPair[],
  phase: IntentPhase,
  prepared?: (pair: PlannedPair) => JournalPair | undefined,
): Map<string, MachineRecord[]> {
  const byMachine = new Map<string, MachineRecord[]>();
  const add = (machine: string, record: MachineRecord) =>
    byMachine.set(machine, [...(byMachine.get(machine) ?? []), record]);
  const at = new Date().toISOString();
  const by = writer();
  for (const pair of pairs) {
    const what = prepared?.(pair);
    const intent: ProviderIntent = {
      v: 1,
      end: 'provides',
      rotation,
      pair: pair.key,
      phase,
      at,
      by,
      ...(what ? { prepared: what } : {}),
    };
    add(pair.providerMachine, { path: intentPath(pair), text: JSON.stringify(intent) });
    if (phase === 'preparing') {
      const consumer: ConsumerRecord = { v: 1, end: 'consumes', rotation, pair: pair.key, at, by };
      add(pair.consumerMachine, { path: consumerRecordPath(pair), text: JSON.stringify(consumer) });
    }
  }
  return byMachine;
}

/** Writes each machine's records, one request per machine, all at once; resolves with the machines that could not be written. */
export async function writeMachineRecords(
  byMachine: ReadonlyMap<string, readonly MachineRecord[]>,
  transportFor: TransportFor,
  concurrency: number,
): Promise<RecordFailure[]> {
  const failures: RecordFailure[] = [];
  await mapBounded([...byMachine], concurrency, async ([machine, records]) => {
    try {
      await transportFor(machine).writeRecords(records);
    } catch (error) {
      failures.push({ machine, reason: reasonOf(error) });
    }
  });
  return failures;
}

/**
 * Writes (or advances) the intent of each pair on its provider's machine (intentRecords): one
 * request per machine, all at once. Resolves with the machines that could not be written (their
 * pairs must not go on to the step this record announces).
 */
export async function recordIntent(
  rotation: string,
  pairs: readonly PlannedPair[],
  phase: IntentPhase,
  transportFor: TransportFor,
  concurrency: number,
  prepared?: (pair: PlannedPair) => JournalPair | undefined,
): Promise<RecordFailure[]> {
  return writeMachineRecords(intentRecords(rotation, pairs, phase, prepared), transportFor, concurrency);
}

/**
 * A pair's last word on its provider once it is finished or taken back. Best effort: a pair
 * whose intent still says `committing` while its consumer holds what was prepared reads as
 * finished (leftovers.ts), and one whose files are all gone has nothing left to finish.
 */
export async function recordOutcome(
  rotation: string,
  pairs: readonly PlannedPair[],
  phase: 'finished' | 'rolled-back',
  transportFor: TransportFor,
  concurrency: number,
): Promise<void> {
  if (pairs.length > 0)
    await recordIntent(rotation, pairs, phase, transportFor, concurrency).catch(() => undefined);
}

/** Staged ends removed before anything went live: every pair whose machines all answered is taken back. */
export async function recordTakenBack(
  rotation: string,
  pairs: readonly PlannedPair[],
  failures: readonly RecordFailure[],
  transportFor: TransportFor,
  concurrency: number,
): Promise<void> {
  const failed = new Set(failures.map((f) => f.machine));
  await recordOutcome(
    rotation,
    pairs.filter((p) => !failed.has(p.providerMachine) && !failed.has(p.consumerMachine)),
    'rolled-back',
    transportFor,
    concurrency,
  );
}
