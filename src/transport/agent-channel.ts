/**
 * The rename channel's controller end (docs/agent-protocol.md, "Mode channel"): one long-lived
 * agent session per machine, whichever way it is reached (ssh-transport.ts over ssh,
 * local-transport.ts on this host), its lines decoded by the codec (agent-protocol.ts). Also
 * the words for an agent session that ended by itself, shared by every transport.
 */
import {
  AGENT_PROTOCOL,
  ANSWER_PREFIX,
  channelRequest,
  decodeChannelAnswer,
  relayableHost,
  unsendablePath,
  type ArmOutcome,
  type ChannelAnswer,
  type ReloadEvent,
  type SocketEvent,
} from './agent-protocol.js';
import { checkCommandRequest, parseRunAnswer } from './machine-command.js';
import { SocketShapedStream } from './machine-stream.js';
import type { LiveProcess } from './run-process.js';
import {
  abortedError,
  TransportError,
  type ArmResult,
  type ChannelRelay,
  type ClockOffset,
  type CommandRequest,
  type CommandResult,
  type RelayedSocket,
  type RenameChannel,
} from '../mesh/transport.js';

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

/**
 * Throws the TransportError an agent session that ended by itself deserves; returns if it
 * ended well. `via` is what carried it: over ssh, exit 255 (or a signal) is the connection
 * failing; on this host the agent's own reason is its last stderr line either way.
 */
export function failedSession(
  machine: string,
  what: string,
  result: Awaited<LiveProcess['exited']>,
  via: 'ssh' | 'perl' = 'ssh',
): void {
  if (result.failedToStart)
    throw new TransportError(machine, `could not start ${via}: ${result.failedToStart}`);
  if (result.exitCode === 0) return;
  const said = lastLine(result.stderr);
  if (via === 'ssh' && (result.exitCode === 255 || result.exitCode === undefined))
    throw new TransportError(
      machine,
      `ssh failed${said ? `: ${said}` : ` (exit ${result.exitCode ?? 'by signal'})`}`,
      true,
    );
  throw new TransportError(machine, `${what} failed on the machine${machineReason(result)}`);
}

/**
 * Why a command failed ON the machine, as baton's own program said it: the last `@baton err …`
 * (or `@baton …`) line on its stderr. Nothing else is quoted: a login shell's rc prints there
 * first (a pyenv error on root's rc was once quoted as the failure reason). Without such a line
 * only the exit status is said.
 */
export function machineReason(result: {
  readonly stderr: string;
  readonly exitCode?: number | null | undefined;
}): string {
  const said = ownLine(result.stderr);
  return said ? `: ${said}` : ` (exit ${result.exitCode ?? 'by signal'}, with no answer line of baton's)`;
}

/** The last line the agent wrote as its own on stderr (`@baton err <why>`), without the tag. */
export function ownLine(stderr: string): string {
  const own = stderr
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
    .filter((line) => line.startsWith(ANSWER_PREFIX))
    .pop();
  return own?.slice(ANSWER_PREFIX.length).replace(/^err /, '').trim() ?? '';
}

/** The line that says what went wrong, without ssh's own `ssh: ` prefix. */
export function lastLine(text: string): string {
  return (
    text
      .trim()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .pop()
      ?.trim() ?? ''
  ).replace(/^ssh: /, '');
}
