/**
 * The transports of one command (plan, rotate, resume, status): every operation bounded by the
 * command's `--timeout`, all of them cancelled together, and one ssh connection per machine.
 * A command that locks, watches and renames (plan, rotate, resume) shares it (OpenSSH
 * ControlMaster): its control sockets are removed when the command ends — normally, on an
 * error, on SIGINT/SIGTERM, or at process exit — so no master and no socket outlives baton. A
 * command that only reads files (`mesh status`) needs none of that: each machine's reads are
 * requests on one agent session over a plain ssh of its own, ended with its stdin (by status
 * as soon as the machine is read: Transport.release).
 */
import { EXIT_CODES } from '../errors.js';
import type { Machine } from '../mesh/inventory.js';
import type { TransportFor } from '../mesh/transport.js';
import { transportsFor, type TransportOptions } from '../transport/make-transport.js';
import type { ExecFn } from '../transport/run-process.js';
import { sshConnectionShare, type SshConnectionShare } from '../transport/ssh-connection-share.js';
import { serveSessions } from '../transport/ssh-serve.js';

export interface CommandTransportOptions {
  /** `--timeout`: per operation, per holder. */
  readonly timeoutMs: number;
  /** `--concurrency`: what the ssh transport names when sshd's limits refuse a connection. */
  readonly concurrency?: number;
  readonly exec?: ExecFn;
  readonly sshPath?: string;
  readonly wrap?: TransportOptions['wrap'];
  /** Leave SIGINT/SIGTERM/SIGHUP alone (the rotation, tests and the drill own them). */
  readonly noSignalHandlers?: boolean;
  /**
   * `shared` (the default): one ControlMaster per machine, every session riding it.
   * `one-session`: no master; each machine's file operations are requests on one `serve`
   * session over a plain ssh (docs/benchmarks.md, "Round 12: mesh status"). Its locks, watches and
   * channels would each be a connection of their own: for commands that only read files.
   */
  readonly connections?: 'shared' | 'one-session';
}

export interface CommandTransports {
  readonly transportFor: TransportFor;
  /** Aborts when the command is interrupted. */
  readonly signal: AbortSignal;
  readonly share: SshConnectionShare | undefined;
  /** Ends the ssh masters and removes their sockets, or ends the sessions; call it in a `finally`. */
  close(): Promise<void>;
}

export function openCommandTransports(
  machines: readonly Machine[],
  options: CommandTransportOptions,
): CommandTransports {
  const controller = new AbortController();
  const overSsh = machines.some((m) => m.transport === 'ssh');
  const sessions = overSsh && options.connections === 'one-session' ? serveSessions() : undefined;
  const share =
    overSsh && !sessions
      ? sshConnectionShare({
          ...(options.exec ? { exec: options.exec } : {}),
          ...(options.sshPath ? { sshPath: options.sshPath } : {}),
        })
      : undefined;
  const onExit = () => share?.closeSync();
  const onSignal = (signal: NodeJS.Signals) => {
    controller.abort(new Error(`interrupted by ${signal}`));
    // The in-flight ssh children are stopped by the abort; then the masters and sockets go.
    void close().finally(() => process.exit(EXIT_CODES.aborted));
  };
  // The listeners stay until the masters are gone: a signal that no listener handles would
  // kill baton before its cleanup ran.
  const close = async () => {
    await Promise.all([share?.close(), sessions?.close()]);
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  };
  if (share) process.on('exit', onExit);
  // Interrupted, a command ends the same way in either shape: its ssh ended, then exit 3.
  if ((share || sessions) && !options.noSignalHandlers) {
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    // A dropped ssh session or terminal: the masters must end as they do on Ctrl-C.
    process.on('SIGHUP', onSignal);
  }
  const ssh = {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.exec ? { exec: options.exec } : {}),
    ...(options.sshPath ? { sshPath: options.sshPath } : {}),
    ...(share ? { share } : {}),
    ...(sessions ? { sessions } : {}),
  };
  return {
    transportFor: transportsFor(
      machines,
      { timeoutMs: options.timeoutMs, signal: controller.signal },
      { ssh, ...(options.wrap ? { wrap: options.wrap } : {}) },
    ),
    signal: controller.signal,
    share,
    close,
  };
}
