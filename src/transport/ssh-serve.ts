/**
 * One agent `serve` session per shared ssh connection for a command's file operations — or,
 * for `mesh status`, per machine over a plain ssh of its own (ServeSessions, below)
 * (docs/agent-protocol.md, "Mode serve"): the resolve's hello, the digest reads, the stage, the
 * records… are requests on one running agent, not an ssh process each — a process that Node
 * forks from its one thread, the largest part of a rotation's controller CPU (docs/benchmarks.md,
 * "Round 9: fewer ssh processes per machine"). The rename channel takes the session over when
 * it opens (`adopt`), so a consumer machine's stage and renames are one session. A session starts
 * at the end of the turn that first asked it something, its command carrying that turn's reads
 * (docs/agent-protocol.md, "Mode serve"): they are answered before sshd lets its stdin through.
 *
 * The rules the one-shot run kept hold here too:
 * - a call's deadline starts when its request is written (deadline.ts `sent`);
 * - a call whose bound runs out is answered "no answer within N s" and its session takes nothing
 *   more: a machine that stalled one request would stall the next; the session is stopped once
 *   nothing it holds is still awaited, as the one-shot's ssh was;
 * - a session that ends with calls unanswered fails them with the one-shot's words (ssh's own
 *   for exit 255, else "<what> failed on the machine…"), except: a READ (hello, digests, texts)
 *   is asked once more on a fresh session; calls the agent had not read (it idled out) go to the
 *   next session; and calls on a connection sshd refused before anything ran go to the one-shot
 *   run, whose retries and words for MaxStartups are the ones documented. A write is never
 *   asked twice.
 */
import { decodeServeLine, NO_PERL, serveRequest, unsendablePath } from './agent-protocol.js';
import { lastLine, machineReason } from './agent-channel.js';
import type { LiveProcess } from './run-process.js';
import { startRefusal } from './ssh-start-limits.js';
import { sent } from '../mesh/deadline.js';
import { abortedError, TransportError } from '../mesh/transport.js';

/**
 * How long baton keeps an idle session for the command's next operation (its handles unref'd
 * meanwhile, so it never holds a finished command open). A fleet's phases keep a machine waiting
 * for its next operation as long as the other machines take (at N = 50 on a loaded controller,
 * its stage to its channel took longer than 10 s): let go sooner, the channel starts a session
 * of its own again.
 */
const IDLE_MS = 60_000;

/** The agent's own idle bound (`serve <seconds>`): a backstop for a baton that went away without closing. */
export const SERVE_IDLE_SECONDS = 90;

/** Requests that change nothing on the machine: the only ones asked again on a fresh session. */
const READS = new Set(['hello', 'files digests', 'files texts']);

/** How many times a call the agent had not read is sent to the next session. */
const UNREAD_RESENDS = 3;

export interface ServeCall {
  readonly machine: string;
  readonly what: string;
  /** As a one-shot run would be asked: `hello`, or `files <op> <path>…`. */
  readonly args: readonly string[];
  readonly signal: AbortSignal;
  readonly input?: string | undefined;
  /** The same call as an ssh process of its own. */
  readonly oneShot: () => Promise<string>;
}

export interface SshServe {
  call(call: ServeCall): Promise<string>;
  /**
   * The idle session, made the rename channel (the request `channel`): its lines go to `onLine`
   * from now on, and `life` aborting stops it. Undefined when there is none idle.
   */
  adopt(onLine: (line: string) => void, life: AbortSignal): LiveProcess | undefined;
  /**
   * Ends every session it started that is still running (their stdin: the agent reads what it
   * was sent, answers, and exits) and resolves once they have exited. The command's close, for
   * sessions on connections of their own (ServeSessions); a later call starts a new session.
   */
  close(): Promise<void>;
  /**
   * The current session ends once it has answered what it was sent (its stdin: the agent answers,
   * reads the end, and exits); a later call starts another. Transport.release.
   */
  release(): void;
}

/**
 * Starts the agent's `serve` over the shared connection, its command carrying `carried` (the
 * first requests, reads only: they are answered before the session's stdin is read); undefined
 * when no session can be spared there.
 */
export type StartServe = (
  onLine: (line: string) => void,
  signal: AbortSignal,
  carried: string,
) => LiveProcess | undefined;

/**
 * At most this much of the first requests rides in a session's command (hex doubles it): with the
 * agent's core, well under Linux's 128 KB for one argument. The rest go on its stdin.
 */
const CARRIED_MAX_BYTES = 16 * 1024;

interface Pending {
  readonly call: ServeCall;
  readonly request: string;
  readonly read: boolean;
  lines: string[];
  /** Its caller gave up (its bound ran out, or the command was cancelled): answers to it are dropped. */
  abandoned: boolean;
  retried: boolean;
  resends: number;
  session: Session | undefined;
  readonly settle: (result: string | Error) => void;
}

interface Session {
  readonly live: LiveProcess;
  readonly stop: AbortController;
  readonly queue: Pending[];
  /** Takes no new call (one of its calls went unanswered in time, or it became the channel). */
  retired: boolean;
  /** Any line came from it: the connection was not refused. */
  heard: boolean;
  /** Set once the channel took it over. */
  adopted: ((line: string) => void) | undefined;
}

export function sshServe(startServe: StartServe): SshServe {
  let current: Session | undefined;
  let idle: NodeJS.Timeout | undefined;
  /** Every session started and not yet exited (the channel one too): what close() ends. */
  const running = new Set<Session>();

  /**
   * The calls made while no session runs, until the turn ends (setImmediate): the session they
   * start carries the reads among them in its command. sshd lets a session's stdin through only
   * a round trip after it ran the command, so a machine's first reads (status asks its digests
   * and texts in one turn) are answered a round trip sooner than from stdin.
   */
  let opening: Pending[] | undefined;

  const open = (carried: string): Session | undefined => {
    const stop = new AbortController();
    const made: { session?: Session } = {};
    const live = startServe(
      (line) => (made.session ? onLine(made.session, line) : undefined),
      stop.signal,
      carried,
    );
    if (!live) return undefined;
    const session: Session = { live, stop, queue: [], retired: false, heard: false, adopted: undefined };
    made.session = session;
    running.add(session);
    void live.exited.then((result) => {
      running.delete(session);
      ended(session, result);
    });
    return session;
  };

  const send = (p: Pending) => {
    const s = current;
    if (!s || s.retired) {
      if (!opening) {
        opening = [];
        setImmediate(startOpening);
      }
      opening.push(p);
      return;
    }
    enqueue(s, p, true);
  };

  const enqueue = (s: Session, p: Pending, write: boolean) => {
    clearTimeout(idle);
    s.live.hold?.(true);
    p.session = s;
    s.queue.push(p);
    sent(p.call.signal);
    if (write) s.live.write(p.request);
  };

  /** Starts the session the calls of a turn wait for: its command carries their first reads, in order. */
  const startOpening = () => {
    const calls = (opening ?? []).filter((p) => !p.abandoned);
    opening = undefined;
    if (calls.length === 0) return;
    let carried = '';
    let count = 0;
    for (const p of calls) {
      const fits = Buffer.byteLength(carried + p.request) <= CARRIED_MAX_BYTES;
      if (!p.read || (p.call.input ?? '') !== '' || !fits) break;
      carried += p.request;
      count += 1;
    }
    const s = (current = open(carried));
    for (const [i, p] of calls.entries()) {
      if (s) enqueue(s, p, i >= count);
      else {
        // No session can be spared on the connection: the call is an ssh process of its own.
        p.session = undefined;
        void p.call.oneShot().then(p.settle, p.settle);
      }
    }
  };

  const onLine = (s: Session, line: string) => {
    s.heard = true;
    if (s.adopted) return s.adopted(line);
    const head = s.queue[0];
    if (!head) return;
    const said = decodeServeLine(line);
    if (said.kind === 'line') return void head.lines.push(line);
    s.queue.shift();
    if (said.kind === 'ok') head.settle(head.lines.map((l) => `${l}\n`).join(''));
    else
      head.settle(
        new TransportError(head.call.machine, `${head.call.what} failed on the machine: ${said.why}`),
      );
    if (s.queue.length === 0) rest(s);
  };

  /** Nothing left to answer: a retired session ends; the current one waits, idle, for the next call. */
  const rest = (s: Session) => {
    if (s.retired || current !== s) return s.live.end();
    s.live.hold?.(false);
    clearTimeout(idle);
    idle = setTimeout(() => {
      if (current !== s || s.queue.length > 0) return;
      current = undefined;
      s.live.end();
    }, IDLE_MS);
    idle.unref();
  };

  const ended = (s: Session, result: Awaited<LiveProcess['exited']>) => {
    if (current === s) current = undefined;
    const left = s.queue.splice(0).filter((p) => !p.abandoned);
    if (left.length === 0) return;
    // The agent exits 0 by itself only idle, having read none of these: the next session takes them.
    if (result.exitCode === 0 && left.every((p) => p.lines.length === 0 && p.resends < UNREAD_RESENDS)) {
      for (const p of left) {
        p.resends += 1;
        send(p);
      }
      return;
    }
    // sshd refused the connection before anything ran: the one-shot run retries it as documented.
    if (!s.heard && result.exitCode === 255 && startRefusal(result.stderr)) {
      for (const p of left) {
        p.session = undefined;
        void p.call.oneShot().then(p.settle, p.settle);
      }
      return;
    }
    const words = lastLine(result.stderr);
    // ssh itself failed before the session said anything (it may be the one opening the
    // connection): the one-shot's words at once, as its own ssh would have; asked again, an
    // unreachable machine would be waited on twice.
    const neverConnected = !s.heard && result.exitCode === 255;
    for (const p of left) {
      if (
        p.read &&
        !p.retried &&
        result.failedToStart === undefined &&
        words !== NO_PERL &&
        !neverConnected
      ) {
        p.retried = true;
        p.lines = [];
        send(p);
      } else p.settle(sessionFailure(p.call.machine, p.call.what, result));
    }
  };

  return {
    call: (call) => {
      const { machine, what, args, signal } = call;
      if (signal.aborted) return Promise.reject(abortedError(machine, what, signal));
      // A path with a line break cannot be a line of a request: its own process takes it, as before.
      if (unsendablePath(args.slice(2)) !== undefined) return call.oneShot();
      return new Promise<string>((resolve, reject) => {
        let settled = false;
        const p: Pending = {
          call,
          request: serveRequest(args, call.input),
          read: READS.has(args[0] === 'files' ? `files ${args[1]}` : (args[0] ?? '')),
          lines: [],
          abandoned: false,
          retried: false,
          resends: 0,
          session: undefined,
          settle: (result) => {
            if (settled) return;
            settled = true;
            signal.removeEventListener('abort', onAbort);
            if (result instanceof Error) reject(result);
            else resolve(result);
          },
        };
        function onAbort() {
          // Not sent yet (its session starts at the turn's end): it leaves the turn's calls.
          if (opening?.includes(p)) {
            opening.splice(opening.indexOf(p), 1);
            p.abandoned = true;
            return p.settle(abortedError(machine, what, signal));
          }
          const s = p.session;
          // A call gone to a one-shot run is stopped and answered by that run.
          if (!s) return;
          p.abandoned = true;
          p.settle(abortedError(machine, what, signal));
          s.retired = true;
          if (current === s) current = undefined;
          if (s.queue.every((q) => q.abandoned)) s.stop.abort(signal.reason);
        }
        signal.addEventListener('abort', onAbort, { once: true });
        send(p);
      });
    },
    adopt: (onChannelLine, life) => {
      const s = current;
      if (!s || s.retired || s.queue.length > 0 || life.aborted) return undefined;
      current = undefined;
      clearTimeout(idle);
      s.retired = true;
      s.adopted = onChannelLine;
      s.live.hold?.(true);
      life.addEventListener('abort', () => s.stop.abort(life.reason), { once: true });
      s.live.write('channel\n');
      return { write: (text) => s.live.write(text), end: () => s.live.end(), exited: s.live.exited };
    },
    release: () => {
      startOpening();
      const s = current;
      if (!s) return;
      current = undefined;
      clearTimeout(idle);
      s.retired = true;
      // Retired, it ends when its last answer is in (rest); with nothing asked, now.
      if (s.queue.length === 0) s.live.end();
    },
    close: async () => {
      startOpening();
      clearTimeout(idle);
      current = undefined;
      const sessions = [...running];
      for (const s of sessions) {
        s.retired = true;
        // Waited for: an idle session's handles were let go of (rest), and must count again.
        s.live.hold?.(true);
        s.live.end();
      }
      await Promise.all(sessions.map((s) => s.live.exited));
    },
  };
}

/**
 * A command's agent sessions on connections of their own (no connection share): one per
 * machine, each a plain `ssh … baton-agent serve` carrying every file operation of the command to that
 * machine. Nothing else is made per machine — no master, no control socket — so closing is
 * ending their stdin; and should baton die first, its end of their stdin closes with it.
 */
export interface ServeSessions {
  /** Records a machine's sessions so close() ends them. */
  add(serve: SshServe): void;
  /** Ends every session and waits, at most `waitMs`, for them to exit. */
  close(waitMs?: number): Promise<void>;
}

/** How long close() waits for the sessions it ended to exit (their agents answer EOF at once). */
const CLOSE_WAIT_MS = 3_000;

export function serveSessions(): ServeSessions {
  const serves = new Set<SshServe>();
  return {
    add: (serve) => void serves.add(serve),
    close: async (waitMs = CLOSE_WAIT_MS) => {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)));
      await Promise.race([Promise.all([...serves].map((serve) => serve.close())), waited]);
      clearTimeout(timer);
    },
  };
}

/** What a call left unanswered by a session that ended says: the one-shot run's words for the same end. */
function sessionFailure(
  machine: string,
  what: string,
  result: Awaited<LiveProcess['exited']>,
): TransportError {
  if (result.failedToStart)
    return new TransportError(machine, `could not start ssh: ${result.failedToStart}`);
  const said = lastLine(result.stderr);
  if (said === NO_PERL) return new TransportError(machine, NO_PERL);
  if (result.exitCode === 255)
    return new TransportError(machine, `ssh failed${said ? `: ${said}` : ` (exit 255)`}`, true);
  return new TransportError(machine, `${what} failed on the machine${machineReason(result)}`);
}
