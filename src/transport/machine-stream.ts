/**
 * A TCP stream opened FROM a holder (docs/mesh-rotation.md "Testing the new credential from the consumer"): over
 * ssh, `ssh -W host:port` on the command's shared connection — a `direct-tcpip` channel, so
 * nothing runs or is installed on the machine and what flows through it (a database login)
 * never leaves baton's process except inside that channel. Shaped like a net.Socket for the
 * database client: `connect()` starts nothing new, it only says the channel is there; a refused
 * connection on the far side ends the ssh, whose last line is the reason.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { TransportError, abortedError, type MachineStream } from '../mesh/transport.js';

/**
 * A stream a database client can take for a socket: the socket options it sets are no-ops here,
 * because the TCP connection is the machine's (ssh's, or the rename channel's), not ours.
 */
export abstract class SocketShapedStream extends Duplex {
  abstract connect(port: number, host: string): this;
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}

class SshStream extends SocketShapedStream implements MachineStream {
  private stderr = '';
  constructor(
    private readonly child: ChildProcess,
    private readonly machine: string,
    private readonly target: string,
  ) {
    super();
    child.stdout!.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) child.stdout!.pause();
    });
    child.stdout!.on('end', () => this.push(null));
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString('utf8')).slice(-2048);
    });
    child.stdin!.on('error', () => undefined);
    child.once('exit', (code) => {
      const said = this.stderr
        .trim()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .pop();
      if (code !== 0 && !this.destroyed)
        this.destroy(
          new TransportError(
            this.machine,
            `the stream to ${this.target} from ${this.machine} ended${said ? `: ${said.replace(/^ssh: /, '')}` : ` (exit ${code ?? 'by signal'})`}`,
            code === 255,
          ),
        );
      else this.push(null);
    });
  }
  override _read(): void {
    this.child.stdout!.resume();
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (error?: Error | null) => void): void {
    if (!this.child.stdin!.writable) return done(new TransportError(this.machine, 'the stream is closed'));
    this.child.stdin!.write(chunk, (error) => done(error ?? null));
  }
  override _final(done: (error?: Error | null) => void): void {
    this.child.stdin!.end();
    done();
  }
  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    done(error);
  }
  connect(): this {
    queueMicrotask(() => this.emit('connect'));
    return this;
  }
}

/**
 * `args` is the machine's ssh argv up to and including `--` and the host (sshArgs); `-W` goes in
 * before the `--`. The stream ends when `signal` aborts.
 */
export function openSshStream(
  machine: string,
  sshPath: string,
  args: readonly string[],
  host: string,
  port: number,
  signal: AbortSignal,
): Promise<MachineStream> {
  if (signal.aborted) return Promise.reject(abortedError(machine, 'opening a stream', signal));
  const at = args.indexOf('--');
  const target = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const argv = [...args.slice(0, at), '-W', target, ...args.slice(at)];
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'SSH_AUTH_SOCK', 'TMPDIR'])
    if (process.env[name] !== undefined) env[name] = process.env[name];
  const child = spawn(sshPath, argv, { env, stdio: 'pipe' });
  const stream = new SshStream(child, machine, target);
  const onAbort = () => stream.destroy(abortedError(machine, `the stream to ${target}`, signal));
  signal.addEventListener('abort', onAbort, { once: true });
  child.once('exit', () => signal.removeEventListener('abort', onAbort));
  return new Promise((resolve, reject) => {
    // Ended before it was handed out (a stream opened ahead and closed at once): the opener
    // hears it, and nobody else has a listener the error could miss.
    const early = (error: Error) => reject(error);
    stream.once('error', early);
    child.once('spawn', () => {
      stream.off('error', early);
      // An abort just before the spawn is emitted on the next tick, before the opener's own
      // listener is attached (promise callbacks run after ticks): unheard, it would be an
      // uncaught exception that ends baton mid-rotation. Readers still hear it with their own.
      stream.on('error', () => undefined);
      if (signal.aborted) reject(abortedError(machine, `the stream to ${target}`, signal));
      else resolve(stream);
    });
    child.once('error', (error) =>
      reject(new TransportError(machine, `could not start ssh: ${error.message}`)),
    );
  });
}

/** The local transport's stream: this host is the machine, so a plain socket. */
export function openLocalStream(signal: AbortSignal): Promise<MachineStream> {
  const socket = new net.Socket();
  signal.addEventListener('abort', () => socket.destroy(), { once: true });
  return Promise.resolve(socket as MachineStream);
}
