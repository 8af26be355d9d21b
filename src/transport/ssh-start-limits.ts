/**
 * sshd's own limits, as the ssh transport meets them in a fleet. Two settings of every sshd
 * turn "too much at once" into what looks like a dead machine:
 *
 * - `MaxStartups` (default 10:30:100): past 10 connections that have not yet authenticated,
 *   sshd drops new ones at random (`kex_exchange_identification: Connection closed by remote
 *   host`, `Connection reset by … port …`, through a ProxyCommand `Connection closed by UNKNOWN
 *   port 65535`). A command contacting more machines at once than that on one sshd meets it.
 * - `MaxSessions` (default 10): sessions on one connection. Machines behind one host, port
 *   and user ride one shared connection (ssh-connection-share.ts); past the limit sshd refuses
 *   the session (`no more sessions`) and ssh opens a connection of its own, which then meets
 *   MaxStartups.
 *
 * A connection dropped before authentication ran nothing on the machine, so it is tried again
 * with backoff within the operation's bound; one still refused at the end says which limit is
 * the likely cause, what `--concurrency` was in force and the way out.
 */
import type { SshTarget } from '../mesh/inventory.js';

/** sshd's default MaxSessions, and the inventory's `max_sessions` when it sets none. */
export const DEFAULT_MAX_SESSIONS = 10;

/** sshd's default MaxStartups start: `--concurrency` up to this stays inside it. */
export const DEFAULT_MAX_STARTUPS_START = 10;

/**
 * `startups`: sshd dropped the connection before its key exchange (MaxStartups, full);
 * `sessions`: the shared connection refused one more session (MaxSessions); `banner`: sshd
 * accepted the TCP connection and said nothing within ConnectTimeout — nothing was refused,
 * the host is slow to answer (a loaded host, a reverse-DNS lookup), and MaxStartups advice
 * would send the operator to the wrong setting.
 */
export type StartRefusal = 'startups' | 'sessions' | 'banner';

/**
 * What ssh's stderr says about a connection refused before anything ran, or undefined when it
 * says something else (a refused port, an authentication failure, a command's own failure).
 */
export function startRefusal(stderr: string): StartRefusal | undefined {
  if (/no more sessions|Session open refused by peer/i.test(stderr)) return 'sessions';
  if (/Connection timed out during banner exchange/i.test(stderr)) return 'banner';
  if (
    /kex_exchange_identification|ssh_exchange_identification|Connection closed by \S+ port \d+|Connection reset by \S+ port \d+/i.test(
      stderr,
    )
  )
    return 'startups';
  return undefined;
}

/** The wait before attempt `attempt + 1` (attempt ≥ 1): doubling from 100 ms to 2 s, jittered ±50%. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(2_000, 100 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.5 + random()));
}

/** Waits `ms` unless the signal aborts first; resolves either way. */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export interface Refused {
  readonly refusal: StartRefusal;
  /** How many attempts were refused. */
  readonly attempts: number;
  /** From the first attempt to the last refusal. */
  readonly overMs: number;
  /** ssh's own last words. */
  readonly said: string;
  /**
   * baton's own connection starts to that host in flight at the last refusal (this one
   * included): 1 means sshd was full of someone else's, and lowering --concurrency cannot help.
   */
  readonly starting?: number;
}

/**
 * baton's connection starts, to every host at once: machines named by ssh_config aliases of one
 * sshd look like several hosts here, so "none other of baton's" is said only when true of all.
 */
const starts = { open: new Set<{ peak: number }>(), ended: [] as number[] };

/**
 * sshd counts a connection against MaxStartups until it authenticates, and a refused or ended
 * client can still be counted there for a moment: a start that ended this recently is still
 * one of baton's in sshd's eyes.
 */
const STILL_COUNTED_MS = 10_000;

/**
 * Counts baton's connection starts while one is under way (the ssh process runs); `now()` is the
 * most of baton's starts that were under way beside this one, or ended within STILL_COUNTED_MS
 * before. Read at the end, when the others may have finished, a count of "now" would say "only
 * this one" of a refusal that 32 of baton's own starts caused. What `Refused.starting` is read from.
 */
export function connectionStart(clock: () => number = Date.now): { now(): number; end(): void } {
  const at = clock();
  starts.ended = starts.ended.filter((t) => at - t < STILL_COUNTED_MS);
  const mine = { peak: 0 };
  starts.open.add(mine);
  const counted = starts.open.size + starts.ended.length;
  for (const start of starts.open) start.peak = Math.max(start.peak, counted);
  let ended = false;
  return {
    now: () => mine.peak,
    end: () => {
      if (ended) return;
      ended = true;
      starts.open.delete(mine);
      starts.ended.push(clock());
    },
  };
}

function hostOf(target: SshTarget): string {
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  return `${target.user ? `${target.user}@` : ''}${host}${target.port === undefined ? '' : `:${target.port}`}`;
}

/**
 * The words for a machine still refused: the likely limit on that host, the `--concurrency`
 * in force and the way out. `answer` is set when the bound ran out on a later attempt.
 */
export function refusedWords(
  target: SshTarget,
  refused: Refused,
  concurrency: number | undefined,
  answer?: string,
): string {
  const seconds = (refused.overMs / 1000).toFixed(1);
  const then = answer ? ` (then ${answer})` : '';
  const attempts = `${refused.attempts} attempt${refused.attempts === 1 ? '' : 's'} in ${seconds} s`;
  if (refused.refusal === 'banner')
    return `ssh failed: ${refused.said} — sshd on ${hostOf(target)} accepted the connection but sent no banner within ConnectTimeout (${target.connectTimeout} s; ${attempts})${then}: nothing was refused — that host or its sshd is slow to answer (a loaded host, a reverse-DNS lookup with UseDNS). Check that host, or raise ssh.connect_timeout in the inventory.`;
  const head = `ssh failed: ${refused.said} — sshd on ${hostOf(target)} refused ${refused.attempts} connection start${refused.attempts === 1 ? '' : 's'} in ${seconds} s${then}`;
  const running = concurrency === undefined ? 'baton' : `baton at --concurrency ${concurrency}`;
  if (refused.refusal === 'startups' && refused.starting !== undefined && refused.starting <= 1)
    return `${head}: sshd there was full (MaxStartups: connections not yet authenticated) with connections that were not baton's — baton had no other connection starting anywhere, so lowering --concurrency will not help. Find what holds that sshd's unauthenticated connections, or raise MaxStartups in its sshd_config.`;
  if (refused.refusal === 'sessions') {
    const limit = target.maxSessions ?? DEFAULT_MAX_SESSIONS;
    return `${head}: the likely limit is MaxSessions on that host (sessions on one connection; baton keeps at most ${limit}, the inventory's max_sessions${target.maxSessions === undefined ? ', default 10' : ''}, and ${running} contacts machines at once). Set max_sessions for that host in the inventory to its sshd's MaxSessions, or lower --concurrency.`;
  }
  const own =
    refused.starting === undefined
      ? ''
      : ` (${refused.starting} of baton's connections were starting at the last refusal)`;
  return `${head}: the likely limit is MaxStartups on that host (sshd drops new connections past its limit of unauthenticated ones; default 10:30:100), and ${running} opens that many at once${own}. Lower --concurrency (the default 8 stays inside sshd's defaults), or raise MaxStartups in that host's sshd_config.`;
}

/**
 * Sessions on one shared connection, kept under that host's MaxSessions. Until the first
 * session has succeeded there is no master yet, so one at a time: machines behind one host
 * would otherwise each open a connection of their own and race to become the master — N
 * handshakes at once on one sshd, which is MaxStartups again. A long-lived session (a receipt
 * reader, a rename channel) takes a place only while one stays free for short operations;
 * otherwise it gets a connection of its own, so a fleet of readers never starves the renames
 * and commits that end their wait.
 */
export interface SessionGate {
  /** Waits for a place; the returned function gives it back, saying whether the session got through. */
  acquire(signal: AbortSignal): Promise<(ok: boolean) => void>;
  /** A place for a long-lived session if one can be spared now; undefined: ride a connection of its own. */
  tryHold(): (() => void) | undefined;
  /**
   * The one place of a connection nothing has opened yet, for a session that will carry the
   * calls after it (the agent's `serve`, ssh-serve.ts) — so the read that opens a machine's
   * connection is a request on the session its later operations use, not an ssh of its own.
   * Undefined once a session got through (tryHold's turn) or while another holds or awaits the
   * place. `opened()` when it has answered (the master exists: the gate opens to its limit, as
   * a first session that got through does); `done(ok)` when it ends.
   */
  tryOpen(): { opened(): void; done(ok: boolean): void } | undefined;
}

export function sessionGate(limit: number): SessionGate {
  const full = Math.max(1, limit);
  let size = 1;
  let used = 0;
  const queue: (() => void)[] = [];
  const admit = () => {
    while (used < size && queue.length > 0) {
      used++;
      queue.shift()!();
    }
  };
  const release = () => {
    let given = false;
    return (ok: boolean) => {
      if (given) return;
      given = true;
      used--;
      if (ok) size = full;
      admit();
    };
  };
  return {
    acquire: (signal) =>
      new Promise((resolve, reject) => {
        const take = () => {
          signal.removeEventListener('abort', onAbort);
          resolve(release());
        };
        const onAbort = () => {
          const at = queue.indexOf(take);
          if (at >= 0) queue.splice(at, 1);
          reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        };
        queue.push(take);
        signal.addEventListener('abort', onAbort, { once: true });
        admit();
      }),
    tryHold: () => {
      if (size < full || used + 1 >= size || queue.length > 0) return undefined;
      used++;
      const give = release();
      return () => give(true);
    },
    tryOpen: () => {
      if (size === full || used > 0 || queue.length > 0) return undefined;
      used++;
      const give = release();
      return {
        opened: () => {
          size = full;
          admit();
        },
        done: give,
      };
    },
  };
}
