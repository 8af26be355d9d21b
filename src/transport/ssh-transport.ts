/**
 * The `ssh` transport: one `ssh -o BatchMode=yes` per operation per machine, the remote side
 * a short POSIX sh script (remote-scripts.ts). BatchMode because a password or host-key prompt
 * on a holder would hang a rotation mid-delivery; the host key is checked as the inventory
 * or the operator's ssh config says, never silently accepted. With a connection share
 * (ssh-connection-share.ts) every operation of one command rides the machine's one connection.
 */
import type { SshTarget } from '../mesh/inventory.js';
import {
  AGENT_PROTOCOL,
  answerLines,
  answerOf,
  channelRequest,
  decodeChannelAnswer,
  ANSWER_PREFIX,
  decodeDigests,
  decodeHello,
  NO_PERL,
  decodeText,
  decodeWatchAnswer,
  digestOf,
  relayableHost,
  unsendablePath,
  type ArmOutcome,
  type ChannelAnswer,
  type ReloadEvent,
  type SocketEvent,
} from './agent-protocol.js';
import {
  CHANNEL,
  COMMIT,
  DIGESTS,
  LOCK,
  WRITE_RECORDS,
  DISCARD_PREVIOUS,
  KEEP_PREVIOUS,
  RETIRE,
  READ_TEXTS,
  RESOLVE,
  RESTORE_PREVIOUS,
  STAGE,
  UNSTAGE,
  WATCH,
  remoteCommand,
} from './remote-scripts.js';
import { runProcess, startProcess, type ExecFn, type LiveProcess, type StartFn } from './run-process.js';
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
  RUN_COMMAND,
  preparedRunInput,
  remotePreparedRun,
  remoteRunCommand,
} from './machine-command.js';
import { openSshStream, SocketShapedStream } from './machine-stream.js';
import {
  abortedError,
  TransportError,
  type ArmResult,
  type ChannelRelay,
  type ClockOffset,
  type CommandRequest,
  type CommandResult,
  type RelayedSocket,
  type FileDigests,
  type MachineLock,
  type RenameChannel,
  type TextChange,
  type Transport,
} from '../mesh/transport.js';

export interface SshTransportOptions {
  /** Replaces the process runner (tests record every child's argv and environment). */
  readonly exec?: ExecFn;
  /** The ssh program (default `ssh` on PATH). */
  readonly sshPath?: string;
  /** The command's connection share: one TCP connection and handshake per machine. */
  readonly share?: SshConnectionShare;
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
  const run = async (what: string, command: string, signal: AbortSignal, input?: string): Promise<string> => {
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
      const result = await exec(options.sshPath ?? 'ssh', [...sshArgs(target, options.share), command], {
        signal,
        ...(input === undefined ? {} : { input }),
      });
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
        if (result.exitCode === 255) {
          const said = lastLine(result.stderr);
          throw new TransportError(machine, `ssh failed${said ? `: ${said}` : ` (exit 255)`}`, true);
        }
        throw new TransportError(machine, `${what} failed on the machine${machineReason(result)}`);
      }
      return result.stdout;
    }
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
  const lines = (text: string, count: number, what: string): string[] => {
    const out = answerLines(text, count);
    if (!Array.isArray(out))
      throw new TransportError(machine, `${what}: the machine answered ${out.got} of ${count} lines`);
    return out;
  };
  return {
    machine,
    reportsSent: true,
    // The agent's hello: a holder without perl 5, or answering another protocol, is unresolved
    // at plan time, before anything is generated (docs/agent-protocol.md, "Mode hello").
    resolve: async (signal) => {
      const hello = decodeHello(await run('resolve', remoteCommand(RESOLVE, []), signal));
      if (hello === undefined)
        throw new TransportError(machine, 'resolve: the machine did not answer the hello');
      if (hello.kind === 'no-perl' || !/^5\./.test(hello.perl)) throw new TransportError(machine, NO_PERL);
      if (hello.protocol !== AGENT_PROTOCOL)
        throw new TransportError(
          machine,
          `the agent answered in protocol v${hello.protocol}, not baton's v${AGENT_PROTOCOL}: it is not the agent this baton sent`,
        );
    },
    stage: async (files, signal) => {
      if (files.length === 0) return [];
      const input = files.map((f) => `${f.secret.reveal()}\n`).join('');
      const out = lines(
        await run(
          'staging',
          remoteCommand(
            STAGE,
            files.map((f) => f.path),
          ),
          signal,
          input,
        ),
        files.length,
        'staging',
      );
      return out.map(digestOf);
    },
    commit: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('commit', remoteCommand(COMMIT, paths), signal);
    },
    unstage: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('unstage', remoteCommand(UNSTAGE, paths), signal);
    },
    keepPrevious: async (paths, signal) => {
      if (paths.length === 0) return [];
      return lines(
        await run('keeping the previous file', remoteCommand(KEEP_PREVIOUS, paths), signal),
        paths.length,
        'keeping the previous file',
      ).map(digestOf);
    },
    restorePrevious: async (paths, signal) => {
      if (paths.length === 0) return [];
      return lines(
        await run('restoring the previous file', remoteCommand(RESTORE_PREVIOUS, paths), signal),
        paths.length,
        'restoring the previous file',
      ).map((l) => l === 'restored');
    },
    discardPrevious: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('removing the previous file', remoteCommand(DISCARD_PREVIOUS, paths), signal);
    },
    retire: async (paths, signal) => {
      if (paths.length === 0) return;
      await run('removing the switched file', remoteCommand(RETIRE, paths), signal);
    },
    digests: async (paths, signal) => {
      if (paths.length === 0) return [];
      // Three lines a path: its digests, its rotation record, its directory's lock.
      const out = lines(
        await run('reading digests', remoteCommand(DIGESTS, paths), signal),
        paths.length * 3,
        'reading digests',
      );
      return decodeDigests(out, paths.length).map((d): FileDigests => ({
        live: d.live,
        next: d.next,
        ...(d.prev ? { prev: d.prev } : {}),
        ...(d.liveModifiedMs === undefined ? {} : { liveModifiedMs: d.liveModifiedMs }),
        ...(d.liveLogin === undefined ? {} : { liveLogin: d.liveLogin }),
        ...(d.record === undefined ? {} : { record: d.record }),
        ...(d.lockedBy === undefined ? {} : { lockedBy: d.lockedBy }),
      }));
    },
    writeRecords: async (records, signal) => {
      if (records.length === 0) return;
      const bad = records.find((r) => r.text.includes('\n'));
      if (bad) throw new TransportError(machine, `a record with a line break cannot be written: ${bad.path}`);
      await run(
        'writing the rotation record',
        remoteCommand(
          WRITE_RECORDS,
          records.map((r) => r.path),
        ),
        signal,
        records.map((r) => `${r.text}\n`).join(''),
      );
    },
    // A session of its own on the shared connection, for the rotation's whole life: the remote
    // shell holds the flock, and ending the session (or losing it) lets the lock go.
    lock: (dir, holder, signal) => {
      if (signal.aborted) return Promise.reject(abortedError(machine, 'taking the provider lock', signal));
      return new Promise<MachineLock>((resolve, reject) => {
        let answered = false;
        const child = start(
          options.sshPath ?? 'ssh',
          [...sshArgs(target, options.share), remoteCommand(LOCK, [dir, holder.replace(/\n/g, ' ')])],
          {
            onLine: (line) => {
              const answer = answerOf(line);
              if (answered || answer === undefined) return;
              if (answer === 'locked') {
                answered = true;
                let released: Promise<void> | undefined;
                resolve({
                  taken: true,
                  release: () =>
                    (released ??= (async () => {
                      child.end();
                      await child.exited;
                    })()),
                });
              } else if (answer.startsWith('busy')) {
                answered = true;
                const words = answer.slice(5).trim();
                resolve({ taken: false, holder: words === '' ? undefined : words });
              }
            },
            signal,
            ownGroup: true,
          },
        );
        void child.exited.then((result) => {
          if (answered) return;
          answered = true;
          if (signal.aborted) return reject(abortedError(machine, 'taking the provider lock', signal));
          try {
            failedSession(machine, 'taking the provider lock', result);
            reject(new TransportError(machine, 'taking the provider lock: the machine did not answer'));
          } catch (error) {
            reject(error);
          }
        });
      });
    },
    readTexts: async (paths, signal) => {
      if (paths.length === 0) return [];
      const out = lines(
        await run('reading', remoteCommand(READ_TEXTS, paths), signal),
        paths.length,
        'reading',
      );
      return out.map(decodeText);
    },
    // One session on the shared connection for the whole wait: the machine reads the files
    // itself and reports changes, so a receipt costs a poll interval and a one-way trip
    // instead of an ssh call per poll.
    watchTexts: async (paths, watch, onChange, signal) => {
      if (signal.aborted) throw abortedError(machine, 'watching receipts', signal);
      if (paths.length === 0) return;
      const interval = (Math.max(watch.intervalMs, 1) / 1000).toFixed(3);
      const lifetime = String(Math.ceil(watch.forMs / 1000) + 2);
      const reported = new Map<number, string | undefined>();
      let snapshot = new Map<number, string | undefined>();
      const onLine = (line: string) => {
        const answer = decodeWatchAnswer(line, paths.length);
        if (answer === undefined || answer.kind === 'beat') return;
        if (answer.kind === 'reported') {
          const changes: TextChange[] = [];
          for (const [index, text] of snapshot) {
            if (!reported.has(index) || reported.get(index) !== text) changes.push({ index, text });
            reported.set(index, text);
          }
          snapshot = new Map();
          if (changes.length > 0) onChange(changes);
          return;
        }
        snapshot.set(answer.index, answer.text);
      };
      const session = longLived();
      const child = start(
        options.sshPath ?? 'ssh',
        [...session.args, remoteCommand(WATCH, [interval, lifetime, ...paths])],
        {
          onLine,
          signal,
        },
      );
      const result = await child.exited.finally(session.done);
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- aborted while the session ran
      if (signal.aborted) return;
      failedSession(machine, 'watching receipts', result);
    },
    openChannel: (signal) => {
      const open = (life: AbortSignal) =>
        openRenameChannel(
          machine,
          (onLine) => {
            const session = longLived();
            const child = start(
              options.sshPath ?? 'ssh',
              [...session.args, remoteCommand(CHANNEL, [RUN_COMMAND])],
              {
                onLine,
                signal: life,
              },
            );
            void child.exited.finally(session.done);
            return child;
          },
          life,
        );
      return options.share ? sharedChannel(options.share, targetKey(target), open, signal) : open(signal);
    },
    // app-truth: a consumer's reload, and a test login's stream, both on the shared connection.
    runCommand: async (request, signal) => {
      checkCommandRequest(machine, request);
      const started = performance.now();
      const out = await run('running the command', remoteRunCommand(request), signal);
      return parseRunAnswer(machine, out, Math.round(performance.now() - started));
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
      const child = start(
        options.sshPath ?? 'ssh',
        [...sshArgs(target, options.share), remotePreparedRun(command, timeoutMs)],
        { onLine: (line) => (out += `${line}\n`), signal: life.signal },
      );
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

/** Clock readings after the first, taken in the background; the closest-timed one wins. */
const CLOCK_SAMPLES = 3;

/** The controller's clock with sub-millisecond resolution. */
const clockNow = () => performance.timeOrigin + performance.now();

/**
 * The rename channel over one long-lived session: requests go out on its stdin and are
 * answered in order, so a rename costs one round trip on a session that is already open.
 * The clock is read once before the channel is handed out (a remote time is useless without
 * it) and a few more times after, keeping the reading with the shortest round trip.
 *
 * app-rtt: where the machine's end says `relay` (the agent's `channel`, docs/agent-protocol.md) the
 * channel also carries, tagged by id and out of order, TCP sockets opened from the machine
 * (`s <id> …`), armed commits (`a <id> …`) and reloads started after renames (`r <id> …`).
 */
export function openRenameChannel(
  machine: string,
  startSession: (onLine: (line: string) => void) => LiveProcess,
  signal: AbortSignal,
): Promise<RenameChannel> {
  type Untagged = Extract<ChannelAnswer, { kind: 'clock' | 'renamed' | 'failed' | 'malformed' }>;
  type Waiter = { settle: (answer: Untagged | Error) => void };
  const waiting: Waiter[] = [];
  let ready: ((answer: Extract<ChannelAnswer, { kind: 'ready' }> | Error) => void) | undefined;
  let ended: Error | undefined;
  const sockets = new Map<string, RelaySocket>();
  const arms = new Map<string, (answer: ArmOutcome | Error) => void>();
  const reloads = new Map<string, PendingReload>();
  /** Everyone waiting for the last reload's answer (whenIdle may be asked by each wrapper). */
  const idle: (() => void)[] = [];
  const settleIdle = () => {
    if (reloads.size === 0) for (const resolve of idle.splice(0)) resolve();
  };
  let nextId = 0;
  const onLine = (line: string) => {
    const answer = decodeChannelAnswer(line);
    if (answer === undefined) return;
    switch (answer.kind) {
      case 'ready':
        return ready?.(answer);
      case 'socket':
        return sockets.get(answer.id)?.answer(answer.event);
      case 'arm':
        arms.get(answer.id)?.(answer.outcome);
        arms.delete(answer.id);
        return;
      case 'reload':
        return reloaded(answer.id, answer.event);
      default:
        return waiting.shift()?.settle(answer);
    }
  };
  const reloaded = (id: string, event: ReloadEvent) => {
    const pending = reloads.get(id);
    if (!pending) return;
    if (event.type === 'line') return void pending.lines.push(event.answer);
    reloads.delete(id);
    if (event.type === 'skip') pending.settle(undefined);
    else if (event.type === 'fail')
      pending.settle(new TransportError(machine, `the reload could not start: ${event.why}`));
    else
      try {
        pending.settle(
          parseRunAnswer(machine, pending.lines.join('\n'), Math.round(performance.now() - pending.sent)),
        );
      } catch (error) {
        pending.settle(error as Error);
      }
    settleIdle();
  };
  const session = startSession(onLine);
  const failAll = (error: Error) => {
    ended = error;
    ready?.(error);
    for (const w of waiting.splice(0)) w.settle(error);
    for (const socket of sockets.values()) socket.destroy(error);
    for (const arm of arms.values()) arm(error);
    arms.clear();
    for (const pending of reloads.values()) pending.settle(error);
    reloads.clear();
    settleIdle();
  };
  void session.exited.then((result) => {
    if (signal.aborted) return failAll(abortedError(machine, 'the rename channel', signal));
    try {
      failedSession(machine, 'the rename channel', result);
      failAll(new TransportError(machine, 'the rename channel closed', true));
    } catch (error) {
      failAll(error as Error);
    }
  });
  const send = (lines: string) => {
    if (!ended) session.write(lines);
  };
  const request = (lines: string, opSignal?: AbortSignal): Promise<Untagged> => {
    if (ended) return Promise.reject(ended);
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(abortedError(machine, 'renaming', opSignal!));
      // An abandoned request keeps its place: answers arrive in order.
      waiting.push({
        settle: (answer) => {
          opSignal?.removeEventListener('abort', onAbort);
          if (answer instanceof Error) reject(answer);
          else resolve(answer);
        },
      });
      opSignal?.addEventListener('abort', onAbort, { once: true });
      session.write(lines);
    });
  };
  const checkPaths = (paths: readonly string[]) => {
    const bad = unsendablePath(paths);
    if (bad !== undefined)
      throw new TransportError(machine, `a path with a line break cannot be renamed: ${JSON.stringify(bad)}`);
  };
  /** Declares each reload to the machine (started only by the commit that names it) and its outcome's promise. */
  const declare = (requests: readonly CommandRequest[]) => {
    const ids: string[] = [];
    const outcomes: Promise<CommandResult | undefined>[] = [];
    let lines = '';
    for (const r of requests) {
      checkCommandRequest(machine, r);
      const id = `r${++nextId}`;
      lines += channelRequest.reload(id, Math.max(1, Math.ceil(r.timeoutMs / 1000)), r.command, r.env);
      ids.push(id);
      outcomes.push(
        new Promise<CommandResult | undefined>((resolve, reject) =>
          reloads.set(id, {
            lines: [],
            sent: performance.now(),
            settle: (result) => (result instanceof Error ? reject(result) : resolve(result)),
          }),
        ),
      );
    }
    // Read by whoever takes the outcome; an outcome nobody awaited must not be an unhandled rejection.
    for (const o of outcomes) o.catch(() => undefined);
    return { lines, ids, outcomes };
  };
  const relay: ChannelRelay = {
    openSocket: (host, port, opSignal) => {
      if (ended) return Promise.reject(ended);
      if (opSignal.aborted) return Promise.reject(abortedError(machine, 'opening a connection', opSignal));
      if (!relayableHost(host))
        return Promise.reject(
          new TransportError(machine, `the host ${JSON.stringify(host)} cannot be relayed`),
        );
      const id = `s${++nextId}`;
      const socket = new RelaySocket(id, send, () => sockets.delete(id));
      sockets.set(id, socket);
      const onAbort = () => socket.destroy(abortedError(machine, 'the relayed connection', opSignal));
      opSignal.addEventListener('abort', onAbort, { once: true });
      socket.once('close', () => opSignal.removeEventListener('abort', onAbort));
      socket.armWith = (paths, requests) => {
        checkPaths(paths);
        if (socket.destroyed || ended)
          return Promise.resolve({ moved: false as const, reason: 'the relayed connection had closed' });
        const declared = declare(requests);
        return new Promise<ArmResult>((resolve, reject) => {
          arms.set(id, (outcome) => {
            if (outcome instanceof Error) return reject(outcome);
            if (outcome.type === 'renamed')
              resolve({ moved: true, at: outcome.atMs, reloads: declared.outcomes });
            else if (outcome.type === 'failed')
              reject(new TransportError(machine, `commit failed on the machine: ${outcome.why}`));
            else resolve({ moved: false, reason: 'the login did not pass' });
          });
          send(`${declared.lines}${channelRequest.arm(id, paths, declared.ids)}`);
        });
      };
      return new Promise<RelayedSocket>((resolve, reject) => {
        socket.opened = (error) => (error ? reject(error) : resolve(socket));
        send(channelRequest.open(id, host, port));
      });
    },
    commitThen: async (paths, requests, opSignal) => {
      if (opSignal.aborted) throw abortedError(machine, 'renaming', opSignal);
      checkPaths(paths);
      const declared = declare(requests);
      const answer = await request(
        `${declared.lines}${channelRequest.commit(paths, declared.ids)}`,
        opSignal,
      );
      if (answer.kind === 'failed')
        throw new TransportError(machine, `commit failed on the machine: ${answer.why}`);
      if (answer.kind !== 'renamed')
        throw new TransportError(machine, `the rename channel answered ${said(answer)}`);
      return { at: answer.atMs, reloads: declared.outcomes };
    },
  };
  let clock: ClockOffset | undefined;
  let rtt = Infinity;
  const sample = async () => {
    const sent = clockNow();
    const answer = await request(channelRequest.clock());
    const back = clockNow();
    if (answer.kind !== 'clock')
      throw new TransportError(machine, `the rename channel answered ${said(answer)} to a clock request`);
    const remote = answer.atMs;
    if (back - sent < rtt) {
      rtt = back - sent;
      clock = { offsetMs: remote - (sent + back) / 2, withinMs: rtt / 2 };
    }
  };
  return new Promise<RenameChannel>((resolve, reject) => {
    ready = (answer) => {
      ready = undefined;
      if (answer instanceof Error) return reject(answer);
      // The agent is sent with this very session, so another protocol means another program
      // answered (a wrapper on the machine, a stale copy): nothing is asked of it.
      if (answer.relay && answer.protocol !== AGENT_PROTOCOL) {
        session.end();
        return reject(
          new TransportError(
            machine,
            `the rename channel answered in protocol ${answer.protocol === undefined ? 'without a version' : `v${answer.protocol}`}, not baton's v${AGENT_PROTOCOL}: it is not the agent this baton sent`,
          ),
        );
      }
      const relays = answer.relay;
      sample().then(
        () => {
          void (async () => {
            for (let i = 1; i < CLOCK_SAMPLES && !ended; i++) await sample().catch(() => undefined);
          })();
          resolve({
            get clock() {
              return clock!;
            },
            commit: async (paths, opSignal) => {
              if (opSignal.aborted) throw abortedError(machine, 'renaming', opSignal);
              if (paths.length === 0) return clockNow() + clock!.offsetMs;
              return (await relay.commitThen(paths, [], opSignal)).at;
            },
            close: () => session.end(),
            ...(relays ? { relay } : {}),
            whenIdle: () => (reloads.size === 0 ? Promise.resolve() : new Promise<void>((r) => idle.push(r))),
          });
        },
        (error: unknown) => {
          session.end();
          reject(error);
        },
      );
    };
    if (ended) ready(ended);
  });
}

interface PendingReload {
  readonly lines: string[];
  readonly sent: number;
  settle(result: CommandResult | undefined | Error): void;
}

/**
 * app-rtt: one TCP connection from the machine, relayed as hex on the rename channel. What is
 * written goes out as `w <id> <hex>`; what the machine reads comes back as `s <id> d <hex>`.
 * Ending it (destroy) closes the machine's socket, which also disarms a commit armed on it.
 */
class RelaySocket extends SocketShapedStream implements RelayedSocket {
  opened: ((error?: Error) => void) | undefined;
  armWith: RelayedSocket['arm'] | undefined;
  private closedThere = false;
  constructor(
    private readonly id: string,
    private readonly send: (lines: string) => void,
    private readonly forget: () => void,
  ) {
    super();
  }
  answer(event: SocketEvent): void {
    if (event.type === 'open') {
      this.opened?.();
      this.opened = undefined;
    } else if (event.type === 'data') this.push(event.bytes);
    else {
      this.closedThere = true;
      const error = event.type === 'end' ? undefined : new Error(event.why);
      // Before it opened, the opening's promise is the one told; after, the stream's listeners.
      const opening = this.opened;
      this.opened = undefined;
      opening?.(error ?? new Error('the connection closed'));
      this.push(null);
      if (error && !opening) this.destroy(error);
      else this.destroy();
    }
  }
  arm(paths: readonly string[], reloads: readonly CommandRequest[]): Promise<ArmResult> {
    return this.armWith!(paths, reloads);
  }
  override _read(): void {}
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.closedThere) return callback(new Error('the connection closed'));
    this.send(channelRequest.write(this.id, chunk));
    callback();
  }
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.closedThere) this.send(channelRequest.close(this.id));
    this.closedThere = true;
    this.opened?.(error ?? new Error('the connection was closed'));
    this.opened = undefined;
    this.forget();
    callback(error);
  }
  connect(): this {
    return this;
  }
}

/** An untagged answer that was not the one asked for, in words (the machine's own text quoted). */
function said(
  answer: Extract<ChannelAnswer, { kind: 'clock' | 'renamed' | 'failed' | 'malformed' }>,
): string {
  if (answer.kind === 'malformed') return JSON.stringify(answer.text);
  if (answer.kind === 'failed') return `err ${JSON.stringify(answer.why)}`;
  return answer.kind === 'clock' ? 'with a clock reading' : 'with a rename';
}

/** Throws the TransportError a session that ended by itself deserves; returns if it ended well. */
function failedSession(machine: string, what: string, result: Awaited<LiveProcess['exited']>): void {
  if (result.failedToStart) throw new TransportError(machine, `could not start ssh: ${result.failedToStart}`);
  if (result.exitCode === 0) return;
  if (result.exitCode === 255 || result.exitCode === undefined) {
    const said = lastLine(result.stderr);
    throw new TransportError(
      machine,
      `ssh failed${said ? `: ${said}` : ` (exit ${result.exitCode ?? 'by signal'})`}`,
      true,
    );
  }
  throw new TransportError(machine, `${what} failed on the machine${machineReason(result)}`);
}

/**
 * Why a command failed ON the machine, as baton's own program said it: the last `@baton err …`
 * (or `@baton …`) line on its stderr. Nothing else is quoted — a login shell's rc prints there
 * first (issue 45: a pyenv error on root's rc was quoted as the failure reason), and ssh itself
 * said nothing, as it connected. Without such a line only the exit status is said.
 */
function machineReason(result: { readonly stderr: string; readonly exitCode?: number | undefined }): string {
  const own = result.stderr
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.startsWith(ANSWER_PREFIX))
    .pop();
  const said = own?.slice(ANSWER_PREFIX.length).replace(/^err /, '').trim();
  return said ? `: ${said}` : ` (exit ${result.exitCode ?? '?'}, with no answer line of baton's)`;
}

/** The line that says what went wrong, without ssh's own `ssh: ` prefix. */
function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .pop()
      ?.trim() ?? ''
  ).replace(/^ssh: /, '');
}
