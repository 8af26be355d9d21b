/**
 * One SSH connection per machine per command, by OpenSSH connection sharing: the first ssh to
 * a machine becomes its master (ControlMaster=auto) and every later operation of the command
 * rides it, so a machine is handshaken once per plan, rotate or status instead of once per
 * phase. The control sockets live in a private 0700 directory of this command: another local
 * user who could reach a socket could run commands on the holder as us.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import os from 'node:os';
import path from 'node:path';
import type { SshTarget } from '../mesh/inventory.js';
import { runProcess, type ExecFn } from './run-process.js';

/**
 * How long an idle master outlives its last operation. The command ends every master it
 * started on close; this is only the backstop for a baton killed with SIGKILL, and it is long
 * enough that a rotation waiting on its typed confirmation keeps its connections.
 */
export const CONTROL_PERSIST_SECONDS = 600;

export interface SshConnectionShare {
  /** The `-o` options that route an ssh to `target` through this share. */
  options(target: SshTarget): string[];
  /** Records a target so `close()` ends its master. */
  use(target: SshTarget): void;
  /** Ends every master and removes the socket directory; safe to call twice. */
  close(): Promise<void>;
  /** The same, synchronously: for process `exit`, where nothing asynchronous runs any more. */
  closeSync(): void;
  /** The socket directory, once created (tests check it is gone). */
  readonly directory: string | undefined;
}

export interface ShareOptions {
  readonly exec?: ExecFn;
  readonly sshPath?: string;
  /** Where the private directory is made (default: the system temp dir, if its paths are short enough). */
  readonly parent?: string;
}

/** How long close() waits for the masters it asked to exit to be gone. */
const MASTER_EXIT_WAIT_MS = 3_000;

function socketsLeft(directory: string): number {
  try {
    return readdirSync(directory).length;
  } catch {
    return 0;
  }
}

// A unix socket path is at most 108 bytes; a socket's name is 40 hex characters.
const MAX_SOCKET_DIR = 60;

/** What one shared connection is: the inventory's host, port, user and ssh config. */
export function connectionKey(target: SshTarget): string {
  return `${target.user ?? ''}@${target.host}:${target.port ?? ''}:${target.config ?? ''}`;
}

/**
 * The socket's name: the connection key's digest rather than ssh's %C (local host, HostName,
 * port, user). With %C, ssh_config aliases of one HostName would ride one connection that
 * baton counts as several — past that host's MaxSessions, where sshd refuses sessions and
 * ssh falls back to connections of its own (ssh-start-limits.ts).
 */
function socketName(target: SshTarget): string {
  return createHash('sha256').update(connectionKey(target)).digest('hex').slice(0, 40);
}

/** OpenSSH's multiplexing protocol (PROTOCOL.mux): the hello, and the `-O exit` request. */
const MUX_MSG_HELLO = 0x00000001;
const MUX_C_TERMINATE = 0x10000005;
const MUX_S_OK = 0x80000001;
const MUX_VERSION = 4;

function muxPacket(...words: number[]): Buffer {
  const packet = Buffer.alloc(4 + 4 * words.length);
  packet.writeUInt32BE(4 * words.length, 0);
  words.forEach((word, i) => packet.writeUInt32BE(word, 4 + 4 * i));
  return packet;
}

/**
 * What `ssh -O exit` asks of a master, said on its control socket from this process: `gone`
 * when it agreed (or no master listens there any more), `failed` when it said anything else.
 * Closing a fleet's masters this way starts no process per machine: each `ssh -O exit` was a
 * process that baton forked, and a fork blocks baton's one thread until the child has exec'd
 * (on a loaded 2-core controller ~10–40 ms each, N of them in a row at the end of every command).
 */
export function terminateMaster(socket: string, timeoutMs = 5_000): Promise<'gone' | 'failed'> {
  return new Promise((resolve) => {
    let answer = Buffer.alloc(0);
    let hello = false;
    let settled = false;
    const done = (result: 'gone' | 'failed') => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      connection.destroy();
      resolve(result);
    };
    const connection = net.connect(socket);
    const timer = setTimeout(() => done('failed'), timeoutMs);
    connection.on('error', (error: NodeJS.ErrnoException) =>
      // No socket, or nobody listening on it: the master has already gone.
      done(error.code === 'ENOENT' || error.code === 'ECONNREFUSED' ? 'gone' : 'failed'),
    );
    connection.on('connect', () =>
      connection.write(Buffer.concat([muxPacket(MUX_MSG_HELLO, MUX_VERSION), muxPacket(MUX_C_TERMINATE, 1)])),
    );
    // The master's hello comes first, then its answer to the request (MUX_S_OK, request id 1).
    connection.on('data', (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      for (let at = 0, seen = 0; at + 8 <= answer.length; seen++) {
        const length = answer.readUInt32BE(at);
        const type = answer.readUInt32BE(at + 4);
        if (seen === 0 && (type !== MUX_MSG_HELLO || length > 64 * 1024)) return done('failed');
        if (seen === 0) hello = true;
        if (seen === 1) return done(type === MUX_S_OK ? 'gone' : 'failed');
        if (at + 4 + length > answer.length) return;
        at += 4 + length;
      }
    });
    // A master closes the socket as it exits, often before its answer is out (OpenSSH's own
    // `-O exit` takes that as done too); without its hello it was no master.
    connection.on('close', () => done(hello ? 'gone' : 'failed'));
  });
}

export function sshConnectionShare(options: ShareOptions = {}): SshConnectionShare {
  let directory: string | undefined;
  let closed = false;
  const targets = new Map<string, SshTarget>();
  const ensureDirectory = (): string => {
    if (closed) throw new Error('the ssh connection share is closed');
    if (!directory) {
      const parent = options.parent ?? (os.tmpdir().length + 20 <= MAX_SOCKET_DIR ? os.tmpdir() : '/tmp');
      // mkdtemp creates the directory 0700.
      directory = mkdtempSync(path.join(parent, 'baton-ssh-'));
    }
    return directory;
  };
  const controlOptions = (target: SshTarget): string[] => [
    '-o',
    'ControlMaster=auto',
    '-o',
    `ControlPath=${path.join(ensureDirectory(), socketName(target))}`,
    '-o',
    `ControlPersist=${CONTROL_PERSIST_SECONDS}`,
  ];
  /** `ssh … -O exit -- host`: asks the target's master, if any, to end. */
  const exitArgs = (target: SshTarget): string[] => {
    const args = ['-o', 'BatchMode=yes', ...controlOptions(target), '-O', 'exit'];
    if (target.config) args.push('-F', target.config);
    if (target.port !== undefined) args.push('-p', String(target.port));
    if (target.user) args.push('-l', target.user);
    args.push('--', target.host);
    return args;
  };
  const removeDirectory = () => {
    if (directory) rmSync(directory, { recursive: true, force: true });
    closed = true;
  };
  return {
    get directory() {
      return directory;
    },
    options: controlOptions,
    use(target) {
      targets.set(connectionKey(target), target);
    },
    async close() {
      if (closed) return;
      if (directory) {
        const exec = options.exec ?? runProcess;
        const dir = directory;
        await Promise.all(
          [...targets.values()].map(async (target) => {
            // A replaced runner (tests) sees every `-O exit`; otherwise the socket is asked
            // directly, and `ssh -O exit` is left for a master that did not answer as expected.
            if (!options.exec && (await terminateMaster(path.join(dir, socketName(target)))) === 'gone')
              return;
            // A master that is already gone answers with an error; that is the state we want.
            await exec(options.sshPath ?? 'ssh', exitArgs(target), {
              signal: AbortSignal.timeout(5_000),
            }).catch(() => undefined);
          }),
        );
        // `-O exit` is answered before the master has gone; a master unlinks its socket as it
        // ends, so wait (bounded) for the directory to empty — else a command could return
        // while its masters still hold connections to the holders.
        const deadline = Date.now() + MASTER_EXIT_WAIT_MS;
        while (Date.now() < deadline && socketsLeft(directory) > 0) await sleep(20);
      }
      removeDirectory();
    },
    closeSync() {
      if (closed) return;
      if (directory) {
        for (const target of targets.values())
          spawnSync(options.sshPath ?? 'ssh', exitArgs(target), { stdio: 'ignore', timeout: 2_000 });
      }
      removeDirectory();
    },
  };
}
