/**
 * The transports of one command (plan, rotate, resume, status): every operation bounded by the
 * command's `--timeout`, all of them cancelled together, and one shared ssh connection per
 * machine whose control sockets are removed when the command ends — normally, on an error,
 * on SIGINT/SIGTERM, or at process exit — so no master and no socket outlives baton.
 */
import { EXIT_CODES } from '../errors.js';
import type { Machine } from '../mesh/inventory.js';
import type { TransportFor } from '../mesh/transport.js';
import { transportsFor, type TransportOptions } from '../transport/make-transport.js';
import type { ExecFn } from '../transport/run-process.js';
import { sshConnectionShare, type SshConnectionShare } from '../transport/ssh-connection-share.js';

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
}

export interface CommandTransports {
  readonly transportFor: TransportFor;
  /** Aborts when the command is interrupted. */
  readonly signal: AbortSignal;
  readonly share: SshConnectionShare | undefined;
  /** Ends the ssh masters and removes their sockets; call it in a `finally`. */
  close(): Promise<void>;
}

export function openCommandTransports(
  machines: readonly Machine[],
  options: CommandTransportOptions,
): CommandTransports {
  const controller = new AbortController();
  const share = machines.some((m) => m.transport === 'ssh')
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
    await share?.close();
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('SIGHUP', onSignal);
  };
  if (share) {
    process.on('exit', onExit);
    if (!options.noSignalHandlers) {
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      // A dropped ssh session or terminal: the masters must end as they do on Ctrl-C.
      process.on('SIGHUP', onSignal);
    }
  }
  const ssh = {
    ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
    ...(options.exec ? { exec: options.exec } : {}),
    ...(options.sshPath ? { sshPath: options.sshPath } : {}),
    ...(share ? { share } : {}),
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
