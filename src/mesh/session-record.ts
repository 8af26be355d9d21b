/**
 * The session census's record (`provides/<provider>/.sessions/<login>`), written by the
 * provisioner (src/provisioner/session-census.ts) and read by `mesh status` (app-status.ts):
 * the shape both sides agree on. JSON, no secret, bounded.
 */
import { z } from 'zod';
import { parseJsonRecord } from './json-record.js';

export const SESSIONS_DIR = '.sessions';
/** How many of the most recent session starts a record keeps. */
export const CENSUS_STARTS = 20;
/** How many distinct client addresses a record keeps (most recent first). */
export const CENSUS_CLIENTS = 5;
/** The application_name of baton's own test login (test-login.ts): not the app's sessions. */
export const TEST_LOGIN_APPLICATION = 'baton test login';

/** One session pg_stat_activity shows now. */
export interface ActiveSession {
  readonly login: string;
  readonly pid: number;
  /** RFC 3339. */
  readonly backendStart: string;
  readonly clientAddr: string | null;
  readonly applicationName: string;
}

/** What `.sessions/<login>` holds. */
export interface CensusRecord {
  readonly format: 'baton.sessions/1';
  readonly login: string;
  /** Sessions open at the last cycle that changed the record. */
  readonly open: number;
  /**
   * When the oldest of the sessions open now started (RFC 3339), null when none is open. Absent in
   * records of an older provisioner. `mesh status` gives it for a login the consumer left.
   */
  readonly oldest_open?: string | null;
  /** When the newest session ever seen on the login started (RFC 3339), null if none was seen. */
  readonly newest_start: string | null;
  /** The most recent session starts seen, newest first (at most CENSUS_STARTS). */
  readonly recent_starts: readonly string[];
  /** Client addresses of those sessions, most recent first (at most CENSUS_CLIENTS; null: a local socket). */
  readonly clients: readonly (string | null)[];
  /** When the provisioner started counting this login (RFC 3339). */
  readonly since: string;
  /** When the record last changed (RFC 3339). */
  readonly at: string;
}

/**
 * The record's schema, made on first use: every field the provisioner writes, typed, so a
 * damaged record reads as no record (status then claims nothing of the login's sessions)
 * rather than as numbers and dates that are not. `oldest_open` is absent in records of an
 * older provisioner.
 */
let censusSchema: z.ZodType<CensusRecord> | undefined;
function schemaOfCensus(): z.ZodType<CensusRecord> {
  return (censusSchema ??= z.object({
    format: z.literal('baton.sessions/1'),
    login: z.string(),
    open: z.number(),
    oldest_open: z.string().nullable().optional(),
    newest_start: z.string().nullable(),
    recent_starts: z.array(z.string()),
    clients: z.array(z.string().nullable()),
    since: z.string(),
    at: z.string(),
  }));
}

export function parseCensus(text: string): CensusRecord | undefined {
  return parseJsonRecord(schemaOfCensus(), text);
}

/** Where a login's record is, beside a pair's receipt (`…/provides/P/.applied/<file>`). */
export function sessionsPath(receiptPath: string, login: string): string {
  const applied = receiptPath.slice(0, receiptPath.lastIndexOf('/'));
  return `${applied.slice(0, applied.lastIndexOf('/'))}/${SESSIONS_DIR}/${login}`;
}
