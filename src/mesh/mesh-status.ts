/**
 * The rules of `baton mesh status`: from what each holder says about its files (digests and
 * mtimes, never content), the provider's receipt and the journal, the state of every pair.
 * Pure: the reading is done by read-mesh-status.ts, so every state is tested without a holder.
 */
import { EXIT_CODES, EXIT_OK } from '../errors.js';
import {
  changedInDatabase,
  DATABASE_FINDING_WORDS,
  isDigestOf,
  type DatabaseCheck,
  type Receipt,
  type SecretDigest,
} from './digest.js';
import type { JournalHistory } from './journal-history.js';
import { leftoverOf, type Leftover } from './leftovers.js';
import type { FileDigests } from './transport.js';
import { appNeedsAction, type PairApp } from './app-status.js';
import type { Confirmations } from './confirmed.js';
import type { PlannedPair } from './rotation-plan.js';

/** Worst first: the order a screen sorts by and the order the summary counts in. */
export const PAIR_STATES = [
  'unreachable',
  'drifted',
  'changed-in-db',
  // app-truth: files and database agree, but the app keeps using the login its file left (app-status.ts).
  'app-behind',
  'staged',
  'pending',
  'applied',
] as const;
export type PairState = (typeof PAIR_STATES)[number];

/** What one end of a pair holds, as its holder reported it. */
export type EndReading =
  | {
      readonly read: true;
      readonly live: SecretDigest | undefined;
      readonly next: SecretDigest | undefined;
      readonly prev?: SecretDigest | undefined;
      readonly liveModifiedMs: number | undefined;
    }
  | { readonly read: false; readonly reason: string };

export interface PairReading {
  readonly provider: EndReading;
  readonly consumer: EndReading;
  /** The provisioner's receipt for the role; undefined when absent or unreadable. */
  readonly receipt: Receipt | undefined;
  /** An alternating pair's logins (then `provider`/`receipt` are the live login's file, `R+x`). */
  readonly logins?: LoginsReading;
}

/** What an alternating pair's holders say about its two logins. */
export interface LoginsReading {
  /** The login the consumer end names (`user=`), undefined when it names none (a pair being switched). */
  readonly live: string | undefined;
  /** The other login, and whether its provider file and its receipt are there. */
  readonly other:
    | {
        readonly login: string;
        /** The other login's provider file (`…/R+y`): where a rotation of the pair stages and commits. */
        readonly path: string;
        readonly read: boolean;
        readonly file: boolean;
        readonly receipt: boolean;
        /** Its receipt's digest: a revoke the provisioner confirmed after baton exited shows there (revokeTarget). */
        readonly receiptDigest?: SecretDigest;
        /** A staged `.next` beside it, and the previous file a provider commit keeps until the pair finishes. */
        readonly next: boolean;
        readonly prev: boolean;
        /** Its file's and its `.next`'s digests: an interrupted revoke's fresh secret is one of them (revokeOf). */
        readonly liveDigest?: SecretDigest;
        readonly nextDigest?: SecretDigest;
      }
    | undefined;
}

/**
 * `revoked`: the last rotation that finished the pair gave it a fresh password delivered nowhere;
 * `copied`: no file of its own yet, right after a switch from one role — the provisioner copied
 * the single role's verifier to it, so it accepts the password the consumer held before;
 * `unknown`: its machine could not be read.
 */
export type OtherLoginState = 'valid' | 'revoked' | 'copied' | 'missing' | 'unknown';

export interface PairLogins {
  readonly live: string | undefined;
  readonly other: { readonly login: string; readonly state: OtherLoginState } | undefined;
}

export interface PairStatus {
  readonly pair: PlannedPair;
  readonly state: PairState;
  /** Why, in words (one sentence, names the end and the file). */
  readonly detail: string;
  /** When the credential last changed, and how baton knows. */
  readonly lastRotated: { readonly atMs: number; readonly source: 'journal' | 'file-mtime' } | undefined;
  readonly ageMs: number | undefined;
  /** Older than `--max-age` (or never rotated while a limit is set). */
  readonly tooOld: boolean;
  readonly lastRotation: { readonly id: string; readonly outcome: string } | undefined;
  /** The `mesh resume` / `mesh rollback` id of a staged leftover, when the journal knows it. */
  readonly resumeId: string | undefined;
  /** A rotation holds the pair's provider lock now (its words): the way out is to wait for it. */
  readonly running?: string;
  /** The leftover's rotation never finished preparing: `mesh rollback` takes it back; resume would be refused. */
  readonly takeBackOnly?: boolean;
  /** The leftover is a switch back to single cut short: `mesh resume` finishes it; a rollback has nothing to take back. */
  readonly finishOnly?: boolean;
  /** Neither end holds a credential: the pair was never seeded. */
  readonly neverDelivered: boolean;
  /** Machines that could not be read, with why. */
  readonly unreadable: readonly { readonly machine: string; readonly reason: string }[];
  /** What the provisioner last found in PostgreSQL for the credential the ends hold (its receipt's check). */
  readonly database?: DatabaseCheck;
  /** An alternating pair: its live login and the other one's state. */
  readonly logins?: PairLogins;
  /** app-truth: how its app takes the credential (app-status.ts). */
  readonly app?: PairApp;
  /**
   * A `--revoke-previous` the provisioner has not confirmed yet: the request stays armed, and its
   * next cycle refuses the left login's old password (and ends its sessions with `--end-sessions`).
   */
  readonly armedRevoke?: { readonly login: string; readonly endSessions: boolean };
  /**
   * A `--revoke-previous` whose fresh password never went live (baton stopped before its commit,
   * or the stage or commit failed): the left login keeps its old password, which MAY STILL WORK.
   * `staged`: the revoke's fresh secret waits in `.next`, delivered nowhere; the next rotation
   * of the pair replaces it. `endSessions`: it was asked with `--end-sessions` (its way out asks again).
   */
  readonly revokeNotDone?: {
    readonly login: string;
    readonly staged: boolean;
    readonly endSessions: boolean;
  };
  /** Which of its steps were confirmed: the file, the test login, the reload, the app's new sessions (confirmed.ts). */
  readonly confirmed?: Confirmations;
}

/**
 * app-truth: the app's part beside the files' state. An applied pair whose app keeps using the
 * login its file left is `app-behind`, its own state; the rest only adds `app`.
 */
export function withApp(status: PairStatus, app: PairApp): PairStatus {
  if (status.state === 'applied' && app.takes === 'behind')
    return { ...status, state: 'app-behind', detail: app.detail, app };
  return { ...status, app };
}

/**
 * The state, by precedence: a holder that cannot be read hides the rest; a `.next` leftover is
 * `staged` unless it is the consumer end waiting for its provider's receipt (then `pending`);
 * ends that differ or are missing are `drifted`; equal ends without a matching receipt are
 * `pending`; only equal ends with the provider's receipt are `applied`.
 */
export function classifyPair(
  pair: PlannedPair,
  reading: PairReading,
  running?: string,
  /** An alternating pair: the consumer end the journal says was delivered with the live login's provider file. */
  deliveredConsumer?: SecretDigest,
  /** The pair's last revoke's target (journal `revoke_target`): its staged fresh secret is not a leftover. */
  revokeTarget?: string,
): { state: PairState; detail: string } {
  const { provider, consumer, receipt } = reading;
  if (!provider.read || !consumer.read) {
    // Both ends on one machine that could not be read: the machine is named once.
    const sameMachine = pair.providerMachine === pair.consumerMachine;
    const which = [
      !provider.read ? `${pair.providerMachine} (${provider.reason})` : '',
      !consumer.read && !(sameMachine && !provider.read)
        ? `${pair.consumerMachine} (${consumer.reason})`
        : '',
    ].filter(Boolean);
    return { state: 'unreachable', detail: `could not read ${which.join(' and ')}` };
  }
  const applied = receipt !== undefined && provider.live !== undefined && receipt.digest === provider.live;
  const moving = alternatingLeftover(pair, reading, running, revokeTarget);
  if (moving) return moving;
  if (provider.next)
    return {
      state: 'staged',
      detail: `${pair.providerMachine} has ${pair.providerPath}.next left from a rotation that did not finish`,
    };
  // Baton stopped between this pair's provider commit and its consumer commit: the provider is
  // live with the new password (its previous file kept), the consumer's new end staged.
  if (provider.prev && consumer.next && consumer.next === provider.live && running === undefined) {
    return {
      state: 'staged',
      detail: applied
        ? `a rotation stopped between the provider commit and the consumer commit: ${pair.provider} applied the new password, so ${pair.consumer}'s live password is refused`
        : `a rotation stopped between the provider commit and the consumer commit: if ${pair.provider} applies the new password, ${pair.consumer}'s live password is refused`,
    };
  }
  if (consumer.next) {
    if (consumer.next === provider.live && !applied) {
      return {
        state: 'pending',
        detail: `${pair.provider} has not applied the new credential; ${pair.consumer}'s end waits staged for its receipt${running ? ` (${running} is running)` : ''}`,
      };
    }
    return {
      state: 'staged',
      detail: `${pair.consumerMachine} has ${pair.consumerPath}.next left from a rotation that did not finish`,
    };
  }
  if (!provider.live && !consumer.live)
    return { state: 'drifted', detail: `no credential was ever delivered: both ends are missing` };
  if (!provider.live)
    return {
      state: 'drifted',
      detail: `the provider end ${pair.providerPath} on ${pair.providerMachine} is missing`,
    };
  if (!consumer.live)
    return {
      state: 'drifted',
      detail: `the consumer end ${pair.consumerPath} on ${pair.consumerMachine} is missing`,
    };
  // A consumer on a login holds `user=… password=…`, its provider the bare secret: their digests differ by design.
  if (provider.live !== consumer.live && reading.logins?.live === undefined)
    return {
      state: 'drifted',
      detail: `the two ends differ: ${pair.consumerPath} on ${pair.consumerMachine} is not what ${pair.providerMachine} holds`,
    };
  if (
    reading.logins?.live !== undefined &&
    deliveredConsumer !== undefined &&
    consumer.live !== deliveredConsumer
  ) {
    return {
      state: 'drifted',
      detail: `the two ends differ: ${pair.consumerPath} on ${pair.consumerMachine} names ${reading.logins.live} but is not the file delivered with ${pair.providerMachine}'s ${pair.providerPath} (changed by hand?)`,
    };
  }
  if (!applied) {
    return {
      state: 'pending',
      detail: receipt
        ? `${pair.provider}'s receipt is for another credential: the provisioner has not applied this one`
        : `${pair.provider} has no receipt for ${pair.role}: the provisioner has not applied it`,
    };
  }
  return (
    databaseTruth(pair, receipt) ?? {
      state: 'applied',
      detail: `both ends equal; ${pair.provider} applied it${restoredNote(receipt)}`,
    }
  );
}

/**
 * An alternating pair's rotation lands on the login its consumer is NOT on: a `.next` left beside
 * that login's file, or that file committed while the consumer's new end waits staged. The
 * consumer's own login keeps working throughout, so the detail says so.
 */
function alternatingLeftover(
  pair: PlannedPair,
  reading: PairReading,
  running: string | undefined,
  revokeTarget: string | undefined,
): { state: PairState; detail: string } | undefined {
  const other = reading.logins?.other;
  const live = reading.logins?.live;
  if (!other || !live || !reading.consumer.read) return undefined;
  // An interrupted revoke's fresh secret, delivered nowhere: said by revokeOf, not a rotation's leftover.
  if (other.next && !isDigestOf(revokeTarget, other.nextDigest))
    return {
      state: 'staged',
      detail: `${pair.providerMachine} has ${other.path}.next left from a rotation that did not finish; ${pair.consumer} still uses ${live}, which works`,
    };
  if (reading.consumer.next && other.prev) {
    return running
      ? {
          state: 'pending',
          detail: `${pair.consumer}'s end for ${other.login} waits staged for ${pair.provider}'s receipt (${running} is running); ${pair.consumer} still uses ${live}, which works`,
        }
      : {
          state: 'staged',
          detail: `a rotation stopped between the provider commit and the consumer commit: ${pair.consumer} still uses ${live}, which works`,
        };
  }
  return undefined;
}

/**
 * What the provisioner last found in PostgreSQL itself for an applied pair: `changed-in-db`
 * when the role was dropped, set NOLOGIN, expired, or given another password there — its
 * consumer is refused although both ends agree. Undefined when the database holds it (or
 * the receipt predates these checks).
 */
function databaseTruth(
  pair: PlannedPair,
  receipt: Receipt,
): { state: PairState; detail: string } | undefined {
  if (!changedInDatabase(receipt)) return undefined;
  const check = receipt.database!;
  const repair = check.problem
    ? `the provisioner could not put the delivered password back: ${check.problem}`
    : 'the provisioner puts the delivered password back on its next cycle';
  return {
    state: 'changed-in-db',
    detail: `PostgreSQL on ${pair.providerMachine} no longer accepts ${pair.role}'s delivered password: ${DATABASE_FINDING_WORDS[check.found]} (found ${check.since}); ${repair}`,
  };
}

function restoredNote(receipt: Receipt): string {
  const restored = receipt.database?.restored;
  return restored ? ` (put back at ${receipt.database.since}: ${DATABASE_FINDING_WORDS[restored]})` : '';
}

/** `running`: who holds the mesh lock now, when someone does: a staged consumer end is then that rotation's wait, not a leftover. */
export function pairStatus(
  pair: PlannedPair,
  reading: PairReading,
  history: JournalHistory,
  nowMs: number,
  maxAgeMs: number | undefined,
  running?: string,
  /**
   * What `mesh rotate` would refuse the pair for now (leftoversIn, from the same reading): THE
   * answer to "what is unfinished, which rotation, what finishes it". The state and the ids
   * status suggests derive from it, so status never calls a pair healthy that rotate refuses,
   * nor offers a resume/rollback that would be refused.
   */
  leftover?: Leftover,
): PairStatus {
  const deliveredConsumer =
    reading.logins?.live !== undefined && reading.provider.read && reading.provider.live
      ? history.consumerDeliveredWith(pair.key, reading.provider.live)
      : undefined;
  const { state, detail } = unfinishedFirst(
    classifyPair(pair, reading, running, deliveredConsumer, history.revokeTarget(pair.key)),
    leftover,
  );
  const remembered = history.pair(pair.key);
  const fromJournal = remembered.lastRotatedAt ? Date.parse(remembered.lastRotatedAt) : NaN;
  // Without a journal entry, the provider end's mtime is the best evidence of when it changed;
  // it is labelled as such, because a restore or a copy also sets it.
  const mtime = reading.provider.read ? reading.provider.liveModifiedMs : undefined;
  const lastRotated = Number.isFinite(fromJournal)
    ? { atMs: fromJournal, source: 'journal' as const }
    : mtime !== undefined
      ? { atMs: mtime, source: 'file-mtime' as const }
      : undefined;
  const ageMs = lastRotated ? Math.max(0, nowMs - lastRotated.atMs) : undefined;
  const resumeId = state === 'staged' || state === 'pending' ? leftover?.rotation : undefined;
  const busy = leftover?.running ?? running;
  const unreadable = [
    ...(reading.provider.read ? [] : [{ machine: pair.providerMachine, reason: reading.provider.reason }]),
    ...(reading.consumer.read || pair.consumerMachine === pair.providerMachine
      ? []
      : [{ machine: pair.consumerMachine, reason: reading.consumer.reason }]),
  ];
  return {
    pair,
    state,
    detail,
    lastRotated,
    ageMs,
    tooOld: maxAgeMs !== undefined && (ageMs === undefined || ageMs > maxAgeMs),
    lastRotation: remembered.lastRotation
      ? { id: remembered.lastRotation.id, outcome: remembered.lastRotation.outcome }
      : undefined,
    resumeId,
    ...(busy !== undefined && (state === 'staged' || state === 'pending') ? { running: busy } : {}),
    // Never prepared whole: nothing of it can be finished, only taken back.
    ...(resumeId !== undefined && leftover?.takeBackOnly ? { takeBackOnly: true } : {}),
    // A switch back cut short after its consumer commit: only resume removes what it left.
    ...(resumeId !== undefined && leftover?.finishOnly ? { finishOnly: true } : {}),
    neverDelivered:
      reading.provider.read &&
      reading.consumer.read &&
      !reading.provider.live &&
      !reading.consumer.live &&
      !reading.provider.next &&
      !reading.consumer.next,
    unreadable,
    ...databaseOf(reading),
    ...(reading.logins
      ? {
          logins: loginsOf(
            reading.logins,
            history.revoked(pair.key),
            history.switchedIn(pair.key),
            history.revokeTarget(pair.key),
          ),
        }
      : {}),
  };
}

/**
 * A pair rotate refuses is never `applied`, `drifted` or `changed-in-db` (whose ways out are a
 * rotation): its leftover makes it `staged`, in the leftover's words. A state that already
 * says "unfinished" (staged, pending) or hides the rest (unreachable) keeps its detail.
 */
function unfinishedFirst(
  classified: { state: PairState; detail: string },
  leftover: Leftover | undefined,
): { state: PairState; detail: string } {
  if (!leftover) return classified;
  switch (classified.state) {
    case 'unreachable':
    case 'staged':
    case 'pending':
      return classified;
    case 'drifted':
    case 'changed-in-db':
    case 'app-behind':
    case 'applied':
      return {
        state: 'staged',
        detail: leftover.rotation
          ? `rotation ${leftover.rotation} did not finish: ${leftover.what}`
          : `${leftover.what}; no rotation it names is unfinished`,
      };
  }
}

/**
 * The other login: without its file or receipt, copied right after a switch, else missing;
 * revoked if the last finished rotation said so; otherwise valid.
 */
export function loginsOf(
  reading: LoginsReading,
  revoked: boolean,
  switchedIn = false,
  /** An unconfirmed revoke's target (digest prefix): the other login's receipt for it confirms it now. */
  revokeTarget?: string,
): PairLogins {
  const other = reading.other;
  if (!other) return { live: reading.live, other: undefined };
  const state: OtherLoginState = !other.read
    ? 'unknown'
    : !other.file || !other.receipt
      ? switchedIn && !other.file
        ? 'copied'
        : 'missing'
      : revoked || isDigestOf(revokeTarget, other.receiptDigest)
        ? 'revoked'
        : 'valid';
  return { live: reading.live, other: { login: other.login, state } };
}

/**
 * The last revoke of the pair's left login, read against its files: a target the other login's
 * receipt holds is `revoked` (loginsOf); one its live file holds waits for the provisioner
 * (armed); one that never went live was not done — the journal alone cannot tell these apart,
 * since baton may have stopped at any step of the revoke.
 */
export function revokeOf(
  other: LoginsReading['other'],
  state: OtherLoginState | undefined,
  armed: { readonly target: string; readonly endSessions: boolean } | undefined,
): Pick<PairStatus, 'armedRevoke' | 'revokeNotDone'> {
  if (!other || !armed || state !== 'valid') return {};
  if (isDigestOf(armed.target, other.liveDigest))
    return { armedRevoke: { login: other.login, endSessions: armed.endSessions } };
  return {
    revokeNotDone: {
      login: other.login,
      staged: isDigestOf(armed.target, other.nextDigest),
      endSessions: armed.endSessions,
    },
  };
}

/** The receipt's database check, when the receipt is for what the provider end holds. */
function databaseOf(reading: PairReading): { database?: DatabaseCheck } {
  const { receipt, provider } = reading;
  return receipt?.database && provider.read && receipt.digest === provider.live
    ? { database: receipt.database }
    : {};
}

/** Worst first, then oldest first, then by key: the order every view lists pairs in. */
export function sortWorstFirst(statuses: readonly PairStatus[]): PairStatus[] {
  const rank = (s: PairStatus) => PAIR_STATES.indexOf(s.state);
  return [...statuses].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      Number(b.tooOld) - Number(a.tooOld) ||
      (b.ageMs ?? Infinity) - (a.ageMs ?? Infinity) ||
      a.pair.key.localeCompare(b.pair.key),
  );
}

export function countStates(statuses: readonly PairStatus[]): Record<PairState, number> {
  const counts = Object.fromEntries(PAIR_STATES.map((s) => [s, 0])) as Record<PairState, number>;
  for (const s of statuses) counts[s.state]++;
  return counts;
}

/**
 * 1 when a holder could not be read (the answer is incomplete), 3 when any pair needs action
 * (not applied, or older than --max-age), 0 when every pair is applied and young enough.
 */
export function meshStatusExitCode(statuses: readonly PairStatus[]): number {
  if (statuses.some((s) => s.state === 'unreachable')) return EXIT_CODES.failed;
  if (statuses.some((s) => s.state !== 'applied' || s.tooOld)) return EXIT_CODES['action-needed'];
  // A revoke asked for and not done: the old password of a login suspected compromised may still work.
  if (statuses.some((s) => s.revokeNotDone)) return EXIT_CODES['action-needed'];
  // app-truth: only evidence counts (a failed reload, an app behind), never "not known".
  if (statuses.some((s) => appNeedsAction(s.app))) return EXIT_CODES['action-needed'];
  return EXIT_OK;
}

/** leftoverOf over what `mesh status` read of one pair (an unread end is unknown, as in readPlanEnds). */
export function leftoverOfReading(
  pair: PlannedPair,
  reading: Pick<PairReading, 'provider' | 'consumer'>,
  history: JournalHistory,
): Leftover | undefined {
  const digests = (end: EndReading): FileDigests | undefined =>
    end.read ? { live: end.live, next: end.next, ...(end.prev ? { prev: end.prev } : {}) } : undefined;
  return leftoverOf(pair, digests(reading.provider), digests(reading.consumer), history);
}
