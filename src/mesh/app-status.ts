/**
 * How a pair's APP takes its credential, for `mesh status` (docs/mesh-rotation.md "Status says
 * what it checked"): `applied` means the database and the consumer's FILE agree, which says
 * nothing about an app that read the file once. So beside it: `reloaded` (its `reload:` ran and
 * exited 0, when), `re-reads` (sessions on the login its file names started after the move:
 * seen), `behind` (an alternating app keeps opening NEW sessions on the login its file left:
 * evidence), `reload-failed`, or `not-known` — never a ✓ for what nobody checked. Pure.
 */
import type { CensusRecord } from './session-record.js';
import type { ReloadOutcome } from './reload.js';
import type { ConfirmState } from './confirmed.js';

export type AppTakes = 'reloaded' | 'reload-failed' | 're-reads' | 'behind' | 'not-known';

export interface AppBehind {
  /** The login the file left, still in use. */
  readonly login: string;
  /** Sessions on it that started after the move (at least: the census keeps the most recent). */
  readonly sessions: number;
  readonly newest: string;
  readonly clients: readonly (string | null)[];
}

export interface PairApp {
  readonly takes: AppTakes;
  /** One sentence (names and times only). */
  readonly detail: string;
  readonly reloadedAt?: string;
  readonly seenAt?: string;
  readonly behind?: AppBehind;
  /** The last reload's outcome, when one is known. */
  readonly reload?: ReloadOutcome;
  /**
   * Sessions still open on the login the consumer's file left (or a revoked one): a revoked
   * password does not end them, so they are part of the truth. Absent when none is open.
   */
  readonly leftOpen?: LeftOpenSessions;
  /**
   * The fourth confirmation mark (confirmed.ts): the app's own new sessions on the login its file
   * names, after the move. `failed` when it was seen opening them on the login its file left.
   */
  readonly newSessions: ConfirmState;
}

export interface LeftOpenSessions {
  readonly login: string;
  readonly open: number;
  /** When the oldest of them started, when the provisioner says (an older one does not). */
  readonly oldest: string | null;
}

/** The open sessions on the login the file left, from its census; undefined when none is open. */
function leftOpen(input: AppInput): LeftOpenSessions | undefined {
  const census = input.leftCensus;
  if (!input.left || !census || census.open <= 0) return undefined;
  return { login: input.left, open: census.open, oldest: census.oldest_open ?? null };
}

/**
 * Sessions that start this soon after the move are not counted against the app: an app that
 * re-reads its file per connection may have read the old one a moment before the rename, and on
 * a loaded machine its connect and SCRAM login take seconds (250 ms called a healthy app behind).
 */
export const MOVE_GRACE_MS = 2_000;

/** A session on the live login this soon after the move may predate it: not yet proof of a re-read. */
const LIVE_GRACE_MS = 250;

export interface AppInput {
  readonly consumer: string;
  /** The login the consumer's file names now (a single pair: its role). */
  readonly live: string;
  /** An alternating pair's other login: the one the file left at the last move. */
  readonly left?: string;
  /** When the consumer's end last moved (ms), undefined when not known. */
  readonly movedAtMs: number | undefined;
  readonly lastReload: ReloadOutcome | undefined;
  readonly liveCensus: CensusRecord | undefined;
  readonly leftCensus: CensusRecord | undefined;
}

function startsAfter(record: CensusRecord | undefined, fromMs: number): string[] {
  return (record?.recent_starts ?? []).filter((s) => Date.parse(s) > fromMs);
}

export function appStatus(input: AppInput): PairApp {
  const app = { ...appTakes(input), newSessions: newSessionsMark(input) };
  const open = leftOpen(input);
  return open ? { ...app, leftOpen: open } : app;
}

/**
 * Whether the app's own new sessions were seen where its file points, whatever else is known
 * (a reload that exited 0 says the command ran, not that the app logged in): no move time, no
 * mark; a session on the live login after the move confirms it; any after-the-move session on
 * the left login fails it.
 */
function newSessionsMark(input: AppInput): ConfirmState {
  const moved = input.movedAtMs;
  if (moved === undefined) return 'not-recorded';
  if (appTakes(input).takes === 'behind') return 'failed';
  // The journal's time is when the record was written, after the reload: a pool the reload rebuilt
  // opened its sessions before it and then keeps them. Its start follows the consumer's move, so
  // a session since the reload began is the app's own on the new credential.
  const reload = input.lastReload;
  const reloadStart = reload?.result === 'ok' ? Date.parse(reload.at) - reload.durationMs : undefined;
  const from = Math.min(moved + LIVE_GRACE_MS, reloadStart ?? Infinity);
  return startsAfter(input.liveCensus, from).length > 0 ? 'confirmed' : 'not-confirmed';
}

function appTakes(input: AppInput): Omit<PairApp, 'newSessions'> {
  const reload = input.lastReload;
  const reloadedAtMs = reload?.result === 'ok' ? Date.parse(reload.at) : undefined;
  const moved = input.movedAtMs;
  if (moved !== undefined && input.left) {
    // After the move, and after the reload that followed it: an app restarted then is on the new login.
    const from = Math.max(moved, reloadedAtMs ?? 0) + MOVE_GRACE_MS;
    const late = startsAfter(input.leftCensus, from);
    if (late.length > 0) {
      const behind: AppBehind = {
        login: input.left,
        sessions: late.length,
        newest: late[0]!,
        clients: input.leftCensus?.clients ?? [],
      };
      return {
        takes: 'behind',
        detail: `${input.consumer}'s app is BEHIND: ${late.length}${late.length >= (input.leftCensus?.recent_starts.length ?? 0) ? '+' : ''} new session(s) on ${input.left}, the login its file left, started after the move (newest ${behind.newest}, from ${behind.clients.map((c) => c ?? 'a local socket').join(', ') || 'unknown'}); the next rotation would change ${input.left}'s password under it`,
        behind,
        ...(reload ? { reload } : {}),
      };
    }
  }
  if (reload && reload.result !== 'ok')
    return {
      takes: 'reload-failed',
      detail: `${input.consumer}'s last reload on ${reload.machine} ${reload.result === 'timed-out' ? 'timed out' : `failed${reload.exitCode !== undefined ? ` (exit ${reload.exitCode})` : ''}`} at ${reload.at}: its app may still hold the previous credential`,
      reload,
    };
  if (reload)
    return {
      takes: 'reloaded',
      detail: `${input.consumer}'s app was reloaded at ${reload.at} (exit 0)`,
      reloadedAt: reload.at,
      reload,
    };
  if (moved !== undefined) {
    const seen = startsAfter(input.liveCensus, moved + LIVE_GRACE_MS);
    if (seen.length > 0)
      return {
        takes: 're-reads',
        detail: `${input.consumer}'s app opened new sessions on ${input.live} after the move (newest ${seen[0]}): it re-reads its file`,
        seenAt: seen[0]!,
      };
  }
  return {
    takes: 'not-known',
    detail: `not known whether ${input.consumer}'s app took the new credential: no reload: and no session on ${input.live} seen since the move`,
  };
}

/** Evidence that something is wrong with the app: the only app states `mesh status` exits 3 on. */
export function appNeedsAction(app: PairApp | undefined): boolean {
  return app?.takes === 'behind' || app?.takes === 'reload-failed';
}
