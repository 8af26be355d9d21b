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
        await Promise.all(
          [...targets.values()].map((target) =>
            // A master that is already gone answers with an error; that is the state we want.
            exec(options.sshPath ?? 'ssh', exitArgs(target), { signal: AbortSignal.timeout(5_000) }).catch(
              () => undefined,
            ),
          ),
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
