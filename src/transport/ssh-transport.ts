/**
 * The `ssh` transport: one `ssh -o BatchMode=yes` per operation per machine, the remote side
 * the agent (agent/baton-agent.pl) started by the one command line (remote-scripts.ts
 * agentCommand); every operation is agent-operations.ts, this module only the ssh process.
 * BatchMode because a password or host-key prompt on a holder would hang a rotation
 * mid-delivery; the host key is checked as the inventory or the operator's ssh config says,
 * never silently accepted. With a connection share
 * (ssh-connection-share.ts) every operation of one command rides the machine's one connection.
 */
import type { SshTarget } from '../mesh/inventory.js';
import { NO_PERL, serveArgs } from './agent-protocol.js';
import { agentOperations, type AgentHost } from './agent-operations.js';
import { failedSession, lastLine, machineReason, openRenameChannel } from './agent-channel.js';
import { agentSource } from './agent-program.js';
import { agentCommand, agentInput } from './remote-scripts.js';
import {
  runProcess,
  startProcess,
  type ExecFn,
  type LiveOptions,
  type LiveProcess,
  type StartFn,
} from './run-process.js';
import { sent } from '../mesh/deadline.js';
import { connectionKey, type SshConnectionShare } from './ssh-connection-share.js';
import {
  backoffMs,
  DEFAULT_MAX_SESSIONS,
  pause,
  connectionStart,
  refusedWords,
  sessionGate,
  startRefusal,
  type Refused,
  type SessionGate,
} from './ssh-start-limits.js';
import {
  checkCommandRequest,
  parseRunAnswer,
  preparedRunInput,
  remotePreparedRun,
} from './machine-command.js';
import { openSshStream } from './machine-stream.js';
import { SERVE_IDLE_SECONDS, sshServe, type ServeSessions, type SshServe } from './ssh-serve.js';
import { abortedError, TransportError, type RenameChannel, type Transport } from '../mesh/transport.js';

export interface SshTransportOptions {
  /** Replaces the process runner (tests record every child's argv and environment). */
  readonly exec?: ExecFn;
  /** The ssh program (default `ssh` on PATH). */
  readonly sshPath?: string;
  /** The command's connection share: one TCP connection and handshake per machine. */
  readonly share?: SshConnectionShare;
  /**
   * Without a share: the command's agent sessions, each machine's file operations requests on
   * one plain `ssh … serve` of its own (ssh-serve.ts ServeSessions), ended when the command closes.
   */
  readonly sessions?: ServeSessions;
  /** Replaces the starter of long-lived sessions (the receipt reader, the rename channel). */
  readonly start?: StartFn;
  /** The command's `--concurrency`: named when sshd's limits refuse a connection. */
  readonly concurrency?: number;
  /** Replaces the jitter of the retry backoff (tests). */
  readonly random?: () => number;
}

/** The ssh argv up to and including the destination; the remote command is appended. */
export function sshArgs(target: SshTarget, share?: SshConnectionShare): string[] {
  const args = ['-o', 'BatchMode=yes', '-o', `ConnectTimeout=${target.connectTimeout}`, '-T'];
  if (share) args.push(...share.options(target));
  if (target.config) args.push('-F', target.config);
  if (target.port !== undefined) args.push('-p', String(target.port));
  if (target.identity) args.push('-i', target.identity, '-o', 'IdentitiesOnly=yes');
  if (target.knownHosts) args.push('-o', `UserKnownHostsFile=${target.knownHosts}`);
  if (target.strictHostKeyChecking) args.push('-o', `StrictHostKeyChecking=${target.strictHostKeyChecking}`);
  if (target.user) args.push('-l', target.user);
  args.push('--', target.host);
  return args;
}

export function sshTransport(
  machine: string,
  target: SshTarget,
  options: SshTransportOptions = {},
): Transport {
  const exec = options.exec ?? runProcess;
  const start = options.start ?? startProcess;
  options.share?.use(target);
  const gate = options.share ? gateFor(options.share, target) : undefined;
  // No timeout of its own: the caller's signal is the one bound (bound-transport.ts), and an
  // aborted signal stops this ssh rather than leaving it to outlive the command. A connection
  // sshd dropped before authentication ran nothing, so it is tried again within that bound.
  const run = async (
    what: string,
    args: readonly string[],
    signal: AbortSignal,
    input?: string,
  ): Promise<string> => {
    let refused: Refused | undefined;
    const firstAt = Date.now();
    const stillRefused = (answer?: string) =>
      new TransportError(machine, refusedWords(target, refused!, options.concurrency, answer), true);
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) {
        if (refused && timedOut(signal)) throw stillRefused();
        throw abortedError(machine, what, signal);
      }
      let release: ((ok: boolean) => void) | undefined;
      try {
        release = gate ? await gate.acquire(signal) : undefined;
      } catch {
        if (refused && timedOut(signal)) throw stillRefused();
        throw abortedError(machine, what, signal);
      }
      // deadline.ts: a place on the connection was waited for above; the machine's time starts now.
      sent(signal);
      // ssh-start-limits.ts: how many of baton's own starts to that host a refusal met.
      const starting = connectionStart();
      // The program first on its stdin, then the operation's input (remote-scripts.ts).
      const result = await exec(
        options.sshPath ?? 'ssh',
        [...sshArgs(target, options.share), agentCommand(args)],
        {
          signal,
          input: agentInput(input),
        },
      );
      const startingThen = starting.now();
      starting.end();
      const refusal = result.exitCode === 255 ? startRefusal(result.stderr) : undefined;
      release?.(
        !result.cancelled &&
          result.failedToStart === undefined &&
          refusal === undefined &&
          result.exitCode !== 255,
      );
      if (result.failedToStart)
        throw new TransportError(machine, `could not start ssh: ${result.failedToStart}`);
      if (result.cancelled) {
        if (refused && timedOut(signal)) throw stillRefused(abortedError(machine, what, signal).reason);
        throw abortedError(machine, what, signal);
      }
      if (refusal) {
        refused = {
          refusal,
          attempts: attempt,
          overMs: Date.now() - firstAt,
          said: lastLine(result.stderr),
          starting: startingThen,
        };
        await pause(backoffMs(attempt, options.random), signal);
        continue;
      }
      if (result.exitCode !== 0) {
        const said = lastLine(result.stderr);
        // The command found no perl: the holder's words, whatever was asked.
        if (said === NO_PERL) throw new TransportError(machine, NO_PERL);
        if (result.exitCode === 255)
          throw new TransportError(machine, `ssh failed${said ? `: ${said}` : ` (exit 255)`}`, true);
        throw new TransportError(machine, `${what} failed on the machine${machineReason(result)}`);
      }
      return result.stdout;
    }
  };
  /** An ssh that runs the agent: its program goes first on the session's stdin (remote-scripts.ts). */
  const startAgent = (argv: readonly string[], live: LiveOptions): LiveProcess => {
    const child = start(options.sshPath ?? 'ssh', argv, live);
    child.write(agentInput());
    return child;
  };
  /**
   * The argv of a long-lived session: on the shared connection while a place can be spared
   * there, else on a connection of its own (ssh-start-limits.ts, SessionGate).
   */
  const longLived = (): { args: string[]; done: () => void } => {
    const held = gate?.tryHold();
    if (gate && !held) return { args: sshArgs(target), done: () => undefined };
    return { args: sshArgs(target, options.share), done: held ?? (() => undefined) };
  };
  // The agent's sessions that outlive one request: the lock on the shared connection (it must
  // hold for the command's life, a gate place would starve the others), the rest under the gate.
  const session = (args: readonly string[], live: LiveOptions): LiveProcess => {
    if (live.ownGroup) {
      // The lock opens the connection outside the gate: until it answers, nothing opens ahead there.
      const opening = options.share ? lockOpening(options.share, target) : undefined;
      const child = startAgent([...sshArgs(target, options.share), agentCommand(args)], {
        ...live,
        onLine: (line) => {
          opening?.();
          live.onLine(line);
        },
      });
      void child.exited.finally(() => opening?.());
      return child;
    }
    const place = longLived();
    const child = startAgent([...place.args, agentCommand(args)], live);
    void child.exited.finally(place.done);
    return child;
  };
  // The program as it is when the session starts (the contract's version case swaps it); the
  // first reads ride in the command (ssh-serve.ts).
  const serveCommand = (carried: string) => agentCommand(serveArgs(SERVE_IDLE_SECONDS, carried));
  // With a connection share, the file operations are requests on the connection's one agent
  // session (ssh-serve.ts) while a place on it can be spared; with the command's sessions, on
  // this machine's one session over a connection of its own; otherwise each is an ssh of its own.
  const serve = options.share
    ? serveFor(options.share, target, (onLine, signal, carried) => {
        const held = gate?.tryHold();
        // Nothing has opened the connection yet: this session opens it (makes the master), so a
        // machine's first read and everything after it are one ssh process (docs/benchmarks.md,
        // "Round 10: places and processes"). Until it answers it is one of baton's connection
        // starts (the words for a refusal count them).
        const opening = gate && !held ? gate.tryOpen() : undefined;
        if (gate && !held && !opening) return undefined;
        const starting = opening ? connectionStart() : undefined;
        let heard = false;
        const child = startAgent([...sshArgs(target, options.share), serveCommand(carried)], {
          onLine: (line) => {
            if (!heard) {
              heard = true;
              starting?.end();
              opening?.opened();
            }
            onLine(line);
          },
          signal,
        });
        void child.exited.finally(() => {
          starting?.end();
          opening?.done(heard);
          held?.();
        });
        return child;
      })
    : options.sessions
      ? ownServe(options.sessions, (onLine, signal, carried) => {
          // Until it answers, one of baton's connection starts (the words for a refusal count them).
          const starting = connectionStart();
          const child = startAgent([...sshArgs(target), serveCommand(carried)], {
            onLine: (line) => {
              starting.end();
              onLine(line);
            },
            signal,
          });
          void child.exited.finally(() => starting.end());
          return child;
        })
      : undefined;
  const host: AgentHost = {
    machine,
    via: 'ssh',
    call: (what, args, signal, input) => {
      const oneShot = () => run(what, args, signal, input);
      if (!serve || (args[0] !== 'files' && args[0] !== 'hello')) return oneShot();
      return serve.call({ machine, what, args, signal, input, oneShot });
    },
    session,
  };
  return {
    machine,
    reportsSent: true,
    ...agentOperations(host),
    ...(serve ? { release: () => serve.release() } : {}),
    // The agent's session a first read would start, started now by its hello (a request on it
    // where one runs). Nothing where a lock or another session is opening the connection (no
    // place to spare): a second opener would race the first to be the master, one more
    // handshake on that sshd.
    ...(options.share && serve
      ? {
          open: async (signal: AbortSignal) => {
            if (locksOpening.get(options.share!)?.has(targetKey(target))) return;
            await serve.call({
              machine,
              what: 'opening the connection',
              args: ['hello'],
              signal,
              oneShot: () => Promise.resolve(''),
            });
          },
        }
      : {}),
    openChannel: (signal) => {
      // The connection's idle agent session becomes the channel (no process of its own) where there is one.
      const open = (life: AbortSignal) =>
        openRenameChannel(
          machine,
          (onLine) => serve?.adopt(onLine, life) ?? session(['channel'], { onLine, signal: life }),
          life,
        );
      return options.share ? sharedChannel(options.share, targetKey(target), open, signal) : open(signal);
    },
    openStream: (host, port, signal) =>
      openSshStream(machine, options.sshPath ?? 'ssh', sshArgs(target, options.share), host, port, signal),
    // app-truth: a reload's session opened while the receipt is awaited, only on the shared
    // connection and only with a session to spare (a second connection would cost more than it saves).
    prepareCommand: (command, timeoutMs, signal) => {
      checkCommandRequest(machine, { command, env: {}, timeoutMs });
      const held = options.share ? gate?.tryHold() : undefined;
      if (!held || signal.aborted) {
        held?.();
        return Promise.resolve(undefined);
      }
      const life = new AbortController();
      const onAbort = () => life.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      let out = '';
      const child = startAgent([...sshArgs(target, options.share), remotePreparedRun(command, timeoutMs)], {
        onLine: (line) => (out += `${line}\n`),
        signal: life.signal,
      });
      let ended = false;
      const exited = child.exited.finally(() => {
        ended = true;
        held();
        signal.removeEventListener('abort', onAbort);
      });
      let used = false;
      return Promise.resolve({
        run: async (env) => {
          if (used || ended) return undefined;
          used = true;
          checkCommandRequest(machine, { command, env, timeoutMs });
          const started = performance.now();
          // The command is bounded on the machine; this bounds a machine that stops answering.
          const timer = setTimeout(
            () => life.abort(new Error(`no answer within ${Math.ceil(timeoutMs / 1000) + 15} s`)),
            timeoutMs + 15_000,
          );
          child.write(preparedRunInput(env));
          child.end();
          const result = await exited.finally(() => clearTimeout(timer));
          if (life.signal.aborted) throw abortedError(machine, 'running the command', life.signal);
          failedSession(machine, 'running the command', result);
          return parseRunAnswer(machine, out, Math.round(performance.now() - started));
        },
        close: () => {
          if (used) return;
          used = true;
          child.end();
          life.abort(new Error('the prepared command was not needed'));
        },
      });
    },
  };
}

/**
 * Inventory machines with the same host, port, user and config ride one connection, and sshd
 * allows only `MaxSessions` sessions on one (10 by default): they share one rename channel
 * (paths are absolute on that host), which ends when the last of them closes it.
 */
const channelsByShare = new WeakMap<
  SshConnectionShare,
  Map<string, { channel: Promise<RenameChannel>; users: number; life: AbortController }>
>();

/** Each shared connection's sessions, kept under its host's MaxSessions. */
const gatesByShare = new WeakMap<SshConnectionShare, Map<string, SessionGate>>();

function gateFor(share: SshConnectionShare, target: SshTarget): SessionGate {
  let byKey = gatesByShare.get(share);
  if (!byKey) gatesByShare.set(share, (byKey = new Map<string, SessionGate>()));
  const key = targetKey(target);
  let gate = byKey.get(key);
  if (!gate) byKey.set(key, (gate = sessionGate(target.maxSessions ?? DEFAULT_MAX_SESSIONS)));
  return gate;
}

/** Each share's connections a provider lock is opening (outside the gate), until the lock answers. */
const locksOpening = new WeakMap<SshConnectionShare, Map<string, number>>();

/** Marks `target`'s connection as opened by a lock; the function returned (idempotent) unmarks it. */
function lockOpening(share: SshConnectionShare, target: SshTarget): () => void {
  let byKey = locksOpening.get(share);
  if (!byKey) locksOpening.set(share, (byKey = new Map<string, number>()));
  const key = targetKey(target);
  byKey.set(key, (byKey.get(key) ?? 0) + 1);
  let done = false;
  return () => {
    if (done) return;
    done = true;
    const left = (byKey.get(key) ?? 1) - 1;
    if (left > 0) byKey.set(key, left);
    else byKey.delete(key);
  };
}

/** Each shared connection's agent session for file operations (ssh-serve.ts). */
const servesByShare = new WeakMap<SshConnectionShare, Map<string, { source: string; serve: SshServe }>>();

function serveFor(
  share: SshConnectionShare,
  target: SshTarget,
  start: Parameters<typeof sshServe>[0],
): SshServe {
  let byKey = servesByShare.get(share);
  if (!byKey) servesByShare.set(share, (byKey = new Map<string, { source: string; serve: SshServe }>()));
  const key = targetKey(target);
  // A session answers for the program it was started with: a transport that sends another (a
  // stale copy, in the contract's version case) gets its own, so its hello is the one checked.
  const source = agentSource();
  let entry = byKey.get(key);
  if (entry?.source !== source) byKey.set(key, (entry = { source, serve: sshServe(start) }));
  return entry.serve;
}

/** A machine's one session on a connection of its own, recorded so the command's close ends it. */
function ownServe(sessions: ServeSessions, start: Parameters<typeof sshServe>[0]): SshServe {
  const serve = sshServe(start);
  sessions.add(serve);
  return serve;
}

/** The operation's bound ran out (bound-transport.ts NoAnswer), as opposed to a cancel. */
function timedOut(signal: AbortSignal): boolean {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'NoAnswer';
}

const targetKey = connectionKey;

function sharedChannel(
  share: SshConnectionShare,
  key: string,
  open: (life: AbortSignal) => Promise<RenameChannel>,
  signal: AbortSignal,
): Promise<RenameChannel> {
  let byKey = channelsByShare.get(share);
  if (!byKey)
    channelsByShare.set(
      share,
      (byKey = new Map<string, { channel: Promise<RenameChannel>; users: number; life: AbortController }>()),
    );
  let entry = byKey.get(key);
  if (!entry) {
    const life = new AbortController();
    // The first opener's bound covers the opening; after that the channel lives while used.
    const onAbort = () => life.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    const channel = open(life.signal).finally(() => signal.removeEventListener('abort', onAbort));
    entry = { channel, users: 0, life };
    byKey.set(key, entry);
    const opened = entry;
    channel.catch(() => {
      if (byKey.get(key) === opened) byKey.delete(key);
    });
  }
  const used = entry;
  used.users += 1;
  return used.channel.then(
    (channel) => {
      let closed = false;
      return {
        get clock() {
          return channel.clock;
        },
        commit: (paths, opSignal) => channel.commit(paths, opSignal),
        close: () => {
          if (closed) return;
          closed = true;
          used.users -= 1;
          if (used.users === 0) {
            if (byKey.get(key) === used) byKey.delete(key);
            channel.close();
            // A reload it started answers first (whenIdle); then its session goes.
            void (channel.whenIdle?.() ?? Promise.resolve()).then(() => used.life.abort());
          }
        },
        ...(channel.relay ? { relay: channel.relay } : {}),
        ...(channel.whenIdle ? { whenIdle: () => channel.whenIdle!() } : {}),
      };
    },
    (error: unknown) => {
      used.users -= 1;
      throw error;
    },
  );
}
