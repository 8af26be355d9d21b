/**
 * The rotation journal: one JSON line per rotation and phase, appended to
 * `<journal dir>/mesh-journal.jsonl` (dir 0700, file 0600). It is what `mesh resume` finishes
 * from, so it records digests — NEVER a secret: a journal is read, copied and backed up by
 * people and tools that must never be able to log in with what they find there.
 */
import type { ReloadOutcome } from './reload.js';
import type { TestLoginRecord } from './test-login.js';
import { confirmedOf, type JournalConfirmed } from './confirmed.js';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BatonError } from '../errors.js';
import { DEFAULT_STATE_ROOT, type ResolvedConfig } from '../config/config.js';
import type { SecretDigest } from './digest.js';
import type { Holder, PlannedPair } from './rotation-plan.js';
import { errorCode } from '../fs/system-error.js';
import { z } from 'zod';
import { JOURNAL_PHASES, type JournalPhase } from './rotation-phase.js';

export const JOURNAL_FILE = 'mesh-journal.jsonl';

export type { JournalPhase } from './rotation-phase.js';

export interface JournalHolder {
  readonly machine: string;
  readonly transport: string;
  readonly address: string;
  readonly receives: readonly string[];
}

export interface JournalResult {
  readonly machine: string;
  readonly ok: boolean;
  readonly reason?: string;
}

export interface JournalPair {
  readonly key: string;
  readonly provider: string;
  readonly consumer: string;
  readonly role: string;
  readonly provider_machine: string;
  readonly consumer_machine: string;
  readonly provider_path: string;
  readonly consumer_path: string;
  readonly receipt_path: string;
  readonly digest?: SecretDigest;
  /** The provider's file before the commit, kept beside it until the pair finishes. */
  readonly previous?: SecretDigest;
  /** How the pair's credential is held (absent in older records: single). */
  readonly credential?: 'single' | 'alternating';
  /** Alternating: the login this rotation moved the consumer to. */
  readonly login?: string;
  /** The login the consumer left (absent: it was on none, or on the single role); also set on a pair switched back to one role. */
  readonly left?: string;
  /** Set when the left login was given a password never delivered (revoked on purpose). */
  readonly revoked?: boolean;
  /**
   * A revoke committed but not confirmed before baton stopped waiting: the fresh secret's digest
   * prefix (digestPrefix, never the secret). A provisioner that confirms it later shows it in the
   * left login's receipt, and `mesh status` then says `revoked`.
   */
  readonly revoke_target?: string;
  /** Alternating: the consumer end's own digest (it names the login beside the secret). */
  readonly consumer_digest?: SecretDigest;
  /** Provider-end files of the other mode, removed once the consumer end is live (a pair being switched). */
  readonly retire?: readonly string[];
}

/** How one pair's roll-back ended (rollback.ts): digests and machine names only. */
export interface JournalRollback {
  readonly pair: string;
  readonly result: 'finished' | 'rolled-back' | 'provider-unknown' | 'consumer-unknown';
  readonly receipt?: 'old' | 'new' | 'unknown';
  readonly reason?: string;
}

export interface JournalRecord {
  readonly id: string;
  readonly at: string;
  readonly operator: string;
  readonly phase: JournalPhase;
  readonly selector: string;
  readonly holders: readonly JournalHolder[];
  readonly results: readonly JournalResult[];
  readonly pairs: readonly JournalPair[];
  /** Pairs whose consumer end went live after their provider's receipt. */
  readonly applied?: readonly string[];
  /** Per applied pair: ms from the database taking the new password to the consumer end's rename. */
  readonly windows_ms?: Readonly<Record<string, number>>;
  /** Per pair rolled back (phase `rolled-back`): how it ended. */
  readonly rolled_back?: readonly JournalRollback[];
  /** The mesh this rotation belongs to (meshIdentity): one journal may serve several inventories. */
  readonly mesh?: string;
  /**
   * `--revoke-previous` was asked for (with `--end-sessions` or not): kept on every record of
   * the rotation, so a `mesh resume` that finishes it also revokes what the operator asked.
   */
  readonly revoke_previous?: { readonly end_sessions: boolean };
  /** app-truth: each test login from a consumer's machine (test-login.ts): never a secret. */
  readonly test_logins?: readonly TestLoginRecord[];
  /** app-truth: each consumer reload's outcome (reload.ts): stderr redacted and bounded. */
  readonly reloads?: readonly ReloadOutcome[];
  /**
   * Per pair this record finished (`applied`): which of its steps were confirmed (confirmed.ts).
   * Added by appendJournal from the record's own fields; absent in records of an older baton.
   */
  readonly confirmed?: Readonly<Record<string, JournalConfirmed>>;
}

/*
 * The journal as read back from disk: a line is one of our records only if it has this shape.
 * Every object is loose (a field this baton does not know is kept, not stripped), so a later
 * baton's additional fields survive a read, and records stay additive: a field may be added,
 * never renamed or retyped. `test_logins` and `reloads` are kept as their writers shaped them.
 */
const digestText = z.string() as unknown as z.ZodType<SecretDigest>;
/**
 * A rotation id as newRotationId makes it. Ids are shown and put into suggested commands
 * (`mesh resume <id>`), so a journal line or a machine's record with any other id is not ours.
 */
export const ROTATION_ID = z.string().regex(/^[0-9A-Za-z-]{1,64}$/);
const journalPairSchema = z.looseObject({
  key: z.string(),
  provider: z.string(),
  consumer: z.string(),
  role: z.string(),
  provider_machine: z.string(),
  consumer_machine: z.string(),
  provider_path: z.string(),
  consumer_path: z.string(),
  receipt_path: z.string(),
  digest: digestText.optional(),
  previous: digestText.optional(),
  credential: z.enum(['single', 'alternating']).optional(),
  login: z.string().optional(),
  left: z.string().optional(),
  revoked: z.boolean().optional(),
  revoke_target: z.string().optional(),
  consumer_digest: digestText.optional(),
  retire: z.array(z.string()).optional(),
});
/** A pair as a record on a machine carries it (intent.ts `prepared`): the journal's shape. */
export const JOURNAL_PAIR_SCHEMA: z.ZodType<JournalPair> = journalPairSchema;

const journalRecordSchema = z.looseObject({
  id: ROTATION_ID,
  at: z.string(),
  operator: z.string(),
  phase: z.enum(JOURNAL_PHASES),
  selector: z.string(),
  holders: z.array(
    z.looseObject({
      machine: z.string(),
      transport: z.string(),
      address: z.string(),
      receives: z.array(z.string()),
    }),
  ),
  results: z.array(z.looseObject({ machine: z.string(), ok: z.boolean(), reason: z.string().optional() })),
  pairs: z.array(journalPairSchema),
  applied: z.array(z.string()).optional(),
  windows_ms: z.record(z.string(), z.number()).optional(),
  rolled_back: z
    .array(
      z.looseObject({
        pair: z.string(),
        result: z.enum(['finished', 'rolled-back', 'provider-unknown', 'consumer-unknown']),
        receipt: z.enum(['old', 'new', 'unknown']).optional(),
        reason: z.string().optional(),
      }),
    )
    .optional(),
  mesh: z.string().optional(),
  revoke_previous: z.looseObject({ end_sessions: z.boolean() }).optional(),
  test_logins: z.array(z.custom<TestLoginRecord>((v) => typeof v === 'object' && v !== null)).optional(),
  reloads: z.array(z.custom<ReloadOutcome>((v) => typeof v === 'object' && v !== null)).optional(),
});

/** One journal line as a record, or undefined when it is not one (not JSON, or not our shape): skipped, never trusted. */
export function parseJournalLine(line: string): JournalRecord | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = journalRecordSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/** The record's holders as the plan names them: each machine, how it is reached, and the paths it receives. */
export function journalHolders(holders: readonly Holder[]): JournalHolder[] {
  return holders.map((h) => ({
    machine: h.machine,
    transport: h.transport,
    address: h.address,
    receives: h.receives.map((d) => d.path),
  }));
}

export function journalPair(
  pair: PlannedPair,
  digest?: SecretDigest,
  previous?: SecretDigest,
  consumerDigest?: SecretDigest,
): JournalPair {
  return {
    key: pair.key,
    provider: pair.provider,
    consumer: pair.consumer,
    role: pair.role,
    provider_machine: pair.providerMachine,
    consumer_machine: pair.consumerMachine,
    provider_path: pair.providerPath,
    consumer_path: pair.consumerPath,
    receipt_path: pair.receiptPath,
    ...(digest ? { digest } : {}),
    ...(previous ? { previous } : {}),
    // Only an alternating pair or one being switched says more, so a single pair's record is as before.
    ...(pair.credential === 'alternating' ? { credential: pair.credential } : {}),
    ...(pair.login
      ? { login: pair.login.role, ...(pair.login.left ? { left: pair.login.left.role } : {}) }
      : {}),
    ...(pair.leaves ? { left: pair.leaves } : {}),
    ...(consumerDigest && consumerDigest !== digest ? { consumer_digest: consumerDigest } : {}),
    ...(pair.retire && pair.retire.length > 0 ? { retire: pair.retire } : {}),
  };
}

/** Config `journal_dir`, else the state dir, else /var/lib/baton. */
export function journalDirFor(config: ResolvedConfig): string {
  return (
    config.journalDir ??
    config.stateDir ??
    (config.deployment ? path.join(DEFAULT_STATE_ROOT, config.deployment) : DEFAULT_STATE_ROOT)
  );
}

/** Who ran it: the person behind sudo when there is one. */
export function operatorName(env: NodeJS.ProcessEnv): string {
  if (env.SUDO_USER) return env.SUDO_USER;
  if (env.USER) return env.USER;
  try {
    return os.userInfo().username;
  } catch {
    return 'unknown';
  }
}

/** `20261130T102700Z-1a2b3c` — sorts by time, unique enough per controller. */
export function newRotationId(now: Date, random: string): string {
  return `${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}-${random}`;
}

export async function appendJournal(dir: string, record: JournalRecord): Promise<void> {
  const file = path.join(dir, JOURNAL_FILE);
  // Every record that finishes a pair says which of its steps were confirmed, whoever wrote it.
  const confirmed = record.confirmed ?? confirmedOf(record);
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const handle = await fs.open(file, 'a', 0o600);
    try {
      await handle.appendFile(`${JSON.stringify(confirmed ? { ...record, confirmed } : record)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new BatonError('failed', {
      what: `The rotation journal could not be written (${errorCode(error)}).`,
      where: file,
      next: 'Set journal_dir in baton.yaml to a writable directory, or pass --state-dir.',
      cause: error,
    });
  }
}

/** Every record of one rotation, in order; a line that is not a record (parseJournalLine) is skipped, not fatal. */
export async function readJournal(dir: string, id: string): Promise<JournalRecord[]> {
  const file = path.join(dir, JOURNAL_FILE);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    throw new BatonError('usage', {
      what: `There is no rotation journal to resume from (${errorCode(error)}).`,
      where: file,
      next: 'Pass the same --state-dir / journal_dir the rotation used.',
      changed: 'Nothing was sent.',
    });
  }
  const out: JournalRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const record = parseJournalLine(line);
    if (record?.id === id) out.push(record);
  }
  return out;
}
