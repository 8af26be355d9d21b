/**
 * The session census's record (`provides/<provider>/.sessions/<login>`), written by the
 * provisioner (src/provisioner/session-census.ts) and read by `mesh status` (app-status.ts):
 * the shape both sides agree on. JSON, no secret, bounded.
 */
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

export function parseCensus(text: string): CensusRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<CensusRecord>;
    if (value.format !== 'baton.sessions/1' || typeof value.login !== 'string') return undefined;
    if (!Array.isArray(value.recent_starts) || !Array.isArray(value.clients)) return undefined;
    return value as CensusRecord;
  } catch {
    return undefined;
  }
}

/** Where a login's record is, beside a pair's receipt (`…/provides/P/.applied/<file>`). */
export function sessionsPath(receiptPath: string, login: string): string {
  const applied = receiptPath.slice(0, receiptPath.lastIndexOf('/'));
  return `${applied.slice(0, applied.lastIndexOf('/'))}/${SESSIONS_DIR}/${login}`;
}
