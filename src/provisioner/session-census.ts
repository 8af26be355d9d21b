/**
 * The database says whether the app moved (docs/mesh-rotation.md "The database says whether the
 * app moved"). A file can be replaced under an app that never reads it again; only the database
 * sees which login the app really opens sessions with. Each provisioner cycle counts, per
 * managed login, the sessions open and when the newest started, and keeps a short list of the
 * most recent session starts it saw, with their client addresses; `mesh status` compares them
 * with the moment the consumer's file moved.
 *
 * The record is `provides/<provider>/.sessions/<login>` (a dotfile: never read as a role), JSON,
 * no secret, bounded (CENSUS_STARTS starts, CENSUS_CLIENTS addresses), and written only when what
 * it says changed. What it cannot see it does not claim: a session that opened and closed
 * between two cycles is not in it.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseLoginFileName } from '../mesh/alternating.js';
import {
  CENSUS_CLIENTS,
  CENSUS_STARTS,
  parseCensus,
  SESSIONS_DIR,
  TEST_LOGIN_APPLICATION,
  type ActiveSession,
  type CensusRecord,
} from '../mesh/session-record.js';

export type { ActiveSession } from '../mesh/session-record.js';

/** The SQL a cycle runs (the caller's connection): every session of these logins but its own and baton's test logins. */
export const CENSUS_SQL = `SELECT usename AS login, pid, backend_start, host(client_addr) AS client_addr, application_name
  FROM pg_catalog.pg_stat_activity
 WHERE usename = ANY($1) AND pid <> pg_catalog.pg_backend_pid() AND backend_type = 'client backend'
   AND application_name <> '${TEST_LOGIN_APPLICATION}'
 ORDER BY backend_start DESC LIMIT 1000`;

/** The database login a delivered file name stands for: `R+a` → `R_a`, `R` → `R`. */
export function loginOfFile(name: string): string {
  return parseLoginFileName(name)?.login ?? name;
}

/**
 * Keeps, across cycles, what each login's record says, and writes a record only when it
 * changed. `observe` is the poll's hook: the sessions of this cycle, for the logins delivered.
 */
export class SessionCensus {
  private readonly records = new Map<string, CensusRecord>();
  constructor(
    private readonly deliveredDir: string,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private file(login: string): string {
    return path.join(this.deliveredDir, SESSIONS_DIR, login);
  }

  private load(login: string): CensusRecord | undefined {
    if (this.records.has(login)) return this.records.get(login);
    try {
      const record = parseCensus(readFileSync(this.file(login), 'utf8'));
      if (record) this.records.set(login, record);
      return record;
    } catch {
      return undefined;
    }
  }

  /** Folds this cycle's sessions into each login's record; returns the logins whose record was written. */
  observe(logins: readonly string[], sessions: readonly ActiveSession[]): string[] {
    const now = this.clock().toISOString();
    const byLogin = new Map<string, ActiveSession[]>();
    for (const s of sessions) byLogin.set(s.login, [...(byLogin.get(s.login) ?? []), s]);
    const written: string[] = [];
    for (const login of new Set(logins)) {
      const seen = byLogin.get(login) ?? [];
      const before = this.load(login);
      const starts = new Set(before?.recent_starts ?? []);
      const clients = [...(before?.clients ?? [])];
      for (const s of [...seen].sort((a, b) => a.backendStart.localeCompare(b.backendStart))) {
        if (starts.has(s.backendStart)) continue;
        starts.add(s.backendStart);
        const at = clients.indexOf(s.clientAddr);
        if (at >= 0) clients.splice(at, 1);
        clients.unshift(s.clientAddr);
      }
      const recent = [...starts].sort((a, b) => b.localeCompare(a)).slice(0, CENSUS_STARTS);
      const record: CensusRecord = {
        format: 'baton.sessions/1',
        login,
        open: seen.length,
        oldest_open: seen.map((x) => x.backendStart).sort()[0] ?? null,
        newest_start: recent[0] ?? before?.newest_start ?? null,
        recent_starts: recent,
        clients: clients.slice(0, CENSUS_CLIENTS),
        since: before?.since ?? now,
        at: now,
      };
      if (before && sameCensus(before, record)) continue;
      try {
        mkdirSync(path.dirname(this.file(login)), { recursive: true, mode: 0o700 });
        const temp = `${this.file(login)}.tmp`;
        writeFileSync(temp, `${JSON.stringify(record)}\n`, { mode: 0o644 });
        renameSync(temp, this.file(login));
        this.records.set(login, record);
        written.push(login);
      } catch {
        // Not the cycle's business: the census is evidence, the roles are the work. Tried next cycle.
      }
    }
    return written;
  }
}

function sameCensus(a: CensusRecord, b: CensusRecord): boolean {
  return (
    a.open === b.open &&
    (a.oldest_open ?? null) === (b.oldest_open ?? null) &&
    a.newest_start === b.newest_start &&
    a.recent_starts.join() === b.recent_starts.join() &&
    a.clients.join() === b.clients.join()
  );
}
