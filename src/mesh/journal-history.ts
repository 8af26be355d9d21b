/**
 * What the rotation journal remembers about each pair: when it last rotated, the last
 * rotation that touched it and how that ended, and which rotation prepared a given digest (so
 * a staged leftover can be named with the `mesh resume` id that finishes it). Read-only; the
 * journal holds digests and never a secret, so nothing here can hold one either.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { SecretDigest } from './digest.js';
import type { ReloadOutcome } from './reload.js';
import { readJournalConfirmed, type JournalConfirmed } from './confirmed.js';
import { JOURNAL_FILE, parseJournalLine, type JournalPair, type JournalRecord } from './journal.js';
import { PHASES, type JournalPhase } from './rotation-phase.js';

export interface PairHistory {
  /** When the pair's last rotation committed (RFC 3339), if the journal saw one. */
  readonly lastRotatedAt: string | undefined;
  readonly lastRotation:
    { readonly id: string; readonly outcome: JournalPhase; readonly at: string } | undefined;
}

export interface JournalHistory {
  pair(key: string): PairHistory;
  /** The rotation whose "prepared" record carries this digest for this pair. */
  preparedBy(key: string, digest: SecretDigest): string | undefined;
  /** The rotation that prepared this pair and has not finished it (nor rolled it back), if any. */
  unfinished(key: string): string | undefined;
  /** What rotation `id` prepared for this pair (its digests and logins), from its "prepared" record. */
  preparedPair(key: string, id: string): JournalPair | undefined;
  /**
   * An alternating pair's consumer-end digest delivered together with this provider-end digest
   * (by a rotation or a seed): the two differ by design, so only the journal can say they belong together.
   */
  consumerDeliveredWith(key: string, providerDigest: SecretDigest): SecretDigest | undefined;
  /** Whether the last rotation that finished this pair revoked the login its consumer left (`--revoke-previous`). */
  revoked(key: string): boolean;
  /** The last finishing rotation's unconfirmed revoke: the fresh secret's digest prefix (journal.ts `revoke_target`). */
  revokeTarget(key: string): string | undefined;
  /**
   * Whether the last rotation that finished this pair switched it from one role to alternating:
   * its other login then holds the single role's last password, copied by the provisioner.
   */
  switchedIn(key: string): boolean;
  /** app-truth: the reload that followed the pair's last finished rotation, if its consumer had one. */
  lastReload(key: string): ReloadOutcome | undefined;
  /**
   * The last finishing rotation's unconfirmed revoke as a request that stays armed: its target and
   * whether `--end-sessions` was asked with it (the record's `revoke_previous`).
   */
  armedRevoke(key: string): { readonly target: string; readonly endSessions: boolean } | undefined;
  /** The marks the record that last finished the pair holds (confirmed.ts); `{}` when it holds none. */
  confirmed(key: string): Partial<JournalConfirmed>;
}

/**
 * Reads the records of mesh `mesh` (meshIdentity, or every id it goes by: meshIdentities); a
 * missing journal is an empty history, an unparsable line is skipped, and another mesh's record
 * (or one that names no mesh) is not this one's.
 */
export async function readJournalHistory(
  dir: string,
  mesh: string | readonly string[],
): Promise<JournalHistory> {
  const ids = new Set(typeof mesh === 'string' ? [mesh] : mesh);
  let text = '';
  try {
    text = await fs.readFile(path.join(dir, JOURNAL_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const records: JournalRecord[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const record = parseJournalLine(line);
    if (typeof record?.mesh === 'string' && ids.has(record.mesh)) records.push(record);
  }
  return journalHistory(records);
}

export function journalHistory(records: readonly JournalRecord[]): JournalHistory {
  const lastRotatedAt = new Map<string, string>();
  const lastId = new Map<string, string>();
  const outcome = new Map<string, { phase: JournalPhase; at: string }>();
  const pairOutcome = new Map<string, JournalPhase>();
  const prepared = new Map<string, string>();
  const preparedPairs = new Map<string, JournalPair>();
  const consumerWith = new Map<string, SecretDigest>();
  /** rotation id → pairs it finished (applied, or found finished by a roll-back) or took back. */
  const closed = new Map<string, Set<string>>();
  /** pair → whether the last record that finished it marked it revoked. */
  const revoked = new Map<string, boolean>();
  const revokeTargets = new Map<string, string | undefined>();
  const endSessions = new Map<string, boolean>();
  const switchedIn = new Map<string, boolean>();
  const reloads = new Map<string, ReloadOutcome | undefined>();
  const confirmed = new Map<string, Partial<JournalConfirmed>>();
  for (const record of records) {
    // Records of one rotation are appended in order: the latest one is its outcome so far.
    outcome.set(record.id, { phase: record.phase, at: record.at });
    // A roll-back that found a pair finished finished it: that pair's outcome is `finished`, not `rolled-back`.
    for (const r of record.rolled_back ?? [])
      pairOutcome.set(`${record.id}\0${r.pair}`, r.result === 'finished' ? 'finished' : record.phase);
    const done = closed.get(record.id) ?? new Set<string>();
    closed.set(record.id, done);
    // A pair's age changes only when it was applied: its consumer end went live after its receipt.
    for (const key of record.applied ?? []) {
      lastRotatedAt.set(key, record.at);
      done.add(key);
    }
    for (const r of record.rolled_back ?? []) if (r.result === 'rolled-back') done.add(r.pair);
    const finished = new Set(record.applied ?? []);
    // app-truth: a pair finished by this record took this record's reload (or none).
    // A record of an older baton holds no marks: each reads as not recorded, never as confirmed.
    const marks: unknown = record.confirmed;
    for (const key of finished)
      confirmed.set(
        key,
        typeof marks === 'object' && marks !== null
          ? readJournalConfirmed((marks as Record<string, unknown>)[key])
          : {},
      );
    for (const key of finished)
      reloads.set(
        key,
        (record.reloads ?? []).find((r) => Array.isArray(r.pairs) && r.pairs.includes(key)),
      );
    for (const pair of record.pairs) {
      if (finished.has(pair.key)) {
        revoked.set(pair.key, pair.revoked === true);
        revokeTargets.set(pair.key, typeof pair.revoke_target === 'string' ? pair.revoke_target : undefined);
        endSessions.set(pair.key, record.revoke_previous?.end_sessions === true);
        switchedIn.set(
          pair.key,
          pair.credential === 'alternating' && Array.isArray(pair.retire) && pair.retire.length > 0,
        );
      }
      lastId.set(pair.key, record.id);
      if (record.phase === 'prepared' && pair.digest) prepared.set(`${pair.key}\0${pair.digest}`, record.id);
      if (record.phase === 'prepared') preparedPairs.set(`${record.id}\0${pair.key}`, pair);
      if ((record.phase === 'prepared' || record.phase === 'seeded') && pair.digest && pair.consumer_digest)
        consumerWith.set(`${pair.key}\0${pair.digest}`, pair.consumer_digest);
    }
  }
  return {
    pair(key) {
      const id = lastId.get(key);
      const last = id === undefined ? undefined : outcome.get(id);
      return {
        lastRotatedAt: lastRotatedAt.get(key),
        lastRotation:
          id !== undefined && last
            ? { id, outcome: pairOutcome.get(`${id}\0${key}`) ?? last.phase, at: last.at }
            : undefined,
      };
    },
    preparedBy: (key, digest) => prepared.get(`${key}\0${digest}`),
    preparedPair: (key, id) => preparedPairs.get(`${id}\0${key}`),
    consumerDeliveredWith: (key, digest) => consumerWith.get(`${key}\0${digest}`),
    revoked: (key) => revoked.get(key) ?? false,
    revokeTarget: (key) => revokeTargets.get(key),
    armedRevoke(key) {
      const target = revokeTargets.get(key);
      return target === undefined ? undefined : { target, endSessions: endSessions.get(key) ?? false };
    },
    switchedIn: (key) => switchedIn.get(key) ?? false,
    lastReload: (key) => reloads.get(key),
    confirmed: (key) => confirmed.get(key) ?? {},
    unfinished(key) {
      const id = lastId.get(key);
      const last = id === undefined ? undefined : outcome.get(id);
      if (id === undefined || !last || !PHASES[last.phase].open || closed.get(id)?.has(key)) return undefined;
      return id;
    },
  };
}
