/**
 * What was CONFIRMED for a finished pair, step by step (issue 45: a pair reported `✓ applied` while
 * its app could open no connection, because "applied" only ever meant the files and the database
 * agreed). Four marks, each its own datum, never folded into a sentence:
 *
 * - `file`: the consumer's end went live after the provider's receipt (the rename answered);
 * - `test_login`: the new credential logged in from the consumer's machine before the move;
 * - `reload`: the consumer's `reload:` ran and exited 0;
 * - `sessions`: the app's own NEW sessions were seen on the login its file names, after the move.
 *
 * The rotation learns the first three and the journal keeps them (`confirmed` on the record that
 * finished the pair: confirmedOf). Nobody sees the fourth during a rotation: the provisioner's
 * session census does, and `mesh status` reads it. A mark the journal does not hold (a journal
 * written before the marks existed) is `not-recorded` — never `confirmed`. Pure.
 */
import type { ReloadOutcome } from './reload.js';
import type { TestLoginRecord } from './test-login.js';

/** The parts of a journal record the marks are made from (journal.ts imports this module: no cycle). */
interface FinishingRecord {
  readonly applied?: readonly string[];
  readonly test_logins?: readonly TestLoginRecord[];
  readonly reloads?: readonly ReloadOutcome[];
}

/**
 * `confirmed`: seen to work. `failed`: tried and it did not. `not-confirmed`: could have been
 * seen and was not (a test login or reload the inventory names but no record of it running, no
 * new session yet). `not-configured`: the inventory names no such step (no `connect:`, no
 * `reload:`). `not-recorded`: the journal holds no mark (older baton, or no journal record).
 */
export const CONFIRM_STATES = [
  'confirmed',
  'failed',
  'not-confirmed',
  'not-configured',
  'not-recorded',
] as const;
export type ConfirmState = (typeof CONFIRM_STATES)[number];

/** What the rotation itself saw, per pair, as the journal keeps it: three of the four marks. */
export interface JournalConfirmed {
  readonly file: 'confirmed' | 'not-confirmed';
  /** `not-run`: no test login ran (the inventory named none, or none was recorded). */
  readonly test_login: 'confirmed' | 'failed' | 'not-run';
  readonly reload: 'confirmed' | 'failed' | 'not-run';
}

/** Each of the four steps, as status and the summary show it. */
export interface Confirmations {
  readonly file: ConfirmState;
  readonly testLogin: ConfirmState;
  readonly reload: ConfirmState;
  readonly sessions: ConfirmState;
}

/** The steps in the order the words and the JSON list them. */
export const CONFIRM_STEPS = ['file', 'testLogin', 'reload', 'sessions'] as const;
export type ConfirmStep = (typeof CONFIRM_STEPS)[number];

/** A list field of a record (from disk, or built): anything but an array reads as none. */
function listOf<T>(value: readonly T[] | undefined): readonly T[] {
  return Array.isArray(value) ? (value as readonly T[]) : [];
}

/**
 * The marks a record carries for each pair it finished (its `applied` list), from what the
 * same record says happened: its test logins and its reloads. Written by appendJournal, so
 * every writer (rotation, resume, roll-back) records them the same way.
 */
export function confirmedOf(record: FinishingRecord): Record<string, JournalConfirmed> | undefined {
  const applied = listOf(record.applied);
  if (applied.length === 0) return undefined;
  const out: Record<string, JournalConfirmed> = {};
  for (const key of applied) {
    // The last test login of the pair decides: a refused one rolls the pair back, so a finished pair's is its pass.
    const login = listOf(record.test_logins)
      .filter((t) => t.pair === key)
      .at(-1);
    const reload = listOf(record.reloads).find((r) => Array.isArray(r.pairs) && r.pairs.includes(key));
    out[key] = {
      file: 'confirmed',
      test_login: login ? (login.ok ? 'confirmed' : 'failed') : 'not-run',
      reload: reload ? (reload.result === 'ok' ? 'confirmed' : 'failed') : 'not-run',
    };
  }
  return out;
}

const JOURNAL_VALUES: Record<keyof JournalConfirmed, readonly string[]> = {
  file: ['confirmed', 'not-confirmed'],
  test_login: ['confirmed', 'failed', 'not-run'],
  reload: ['confirmed', 'failed', 'not-run'],
};

/** One pair's marks as read from disk: a field missing or unknown is `undefined` (not recorded). */
export function readJournalConfirmed(value: unknown): Partial<JournalConfirmed> {
  if (typeof value !== 'object' || value === null) return {};
  const fields = value as Record<string, unknown>;
  const out: Partial<Record<keyof JournalConfirmed, string>> = {};
  for (const [name, allowed] of Object.entries(JOURNAL_VALUES) as [
    keyof JournalConfirmed,
    readonly string[],
  ][]) {
    const got = fields[name];
    if (typeof got === 'string' && allowed.includes(got)) out[name] = got;
  }
  return out as Partial<JournalConfirmed>;
}

export interface ConfirmInput {
  /** The marks the record that finished the pair holds (readJournalConfirmed); `{}` for none. */
  readonly journal: Partial<JournalConfirmed>;
  /**
   * Whether the inventory names a test login (`connect:` on the provider) and a `reload:` (on the
   * consumer); undefined when the caller did not say (a step not run is then `not-confirmed`).
   */
  readonly hasConnect: boolean | undefined;
  readonly hasReload: boolean | undefined;
  /** Whether status reads the two ends equal with the provider's receipt now (applied or app-behind). */
  readonly filesAgreeNow: boolean;
  /** What status saw of the app's own new sessions on its live login since the move. */
  readonly sessions: ConfirmState;
}

/** The four marks for status: the journal's three (checked against the inventory and the files now) and the census's one. */
export function confirmations(input: ConfirmInput): Confirmations {
  const { journal } = input;
  const ran = (
    mark: 'confirmed' | 'failed' | 'not-run' | undefined,
    configured: boolean | undefined,
  ): ConfirmState =>
    mark === undefined
      ? 'not-recorded'
      : mark === 'not-run'
        ? configured === false
          ? 'not-configured'
          : 'not-confirmed'
        : mark;
  return {
    // A file the rotation moved but that no longer agrees with its provider is not confirmed any more.
    file:
      journal.file === undefined
        ? 'not-recorded'
        : journal.file === 'confirmed' && input.filesAgreeNow
          ? 'confirmed'
          : 'not-confirmed',
    testLogin: ran(journal.test_login, input.hasConnect),
    reload: ran(journal.reload, input.hasReload),
    sessions: input.sessions,
  };
}

/** The JSON's names for the four steps (docs/mesh-status.md `confirmed`). */
export const CONFIRM_JSON_NAMES: Record<ConfirmStep, string> = {
  file: 'file',
  testLogin: 'test_login',
  reload: 'reload',
  sessions: 'app_sessions',
};
