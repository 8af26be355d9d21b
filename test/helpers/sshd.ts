/**
 * A throwaway OpenSSH server on 127.0.0.1 for the ssh transport's integration tests: its own
 * host key, a user key in its own authorized_keys, a random port, no PAM, no passwords. The
 * client side gets a known_hosts with exactly that host key, so tests run with
 * StrictHostKeyChecking=yes — the way production should.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/sandbox/free-port.js';
import type { SshTarget } from '../../src/mesh/inventory.js';
import { registerChild } from './process-registry.js';

export const SSHD_PATH = '/usr/sbin/sshd';

export interface Sshd {
  readonly port: number;
  /** Every port it listens on (`extraPorts` more than `port`): distinct "machines" on one server. */
  readonly ports: readonly number[];
  /**
   * TCP connections sshd accepted so far on these ports (default: all), from its "Connection
   * from … on … port N" log lines. The readiness probe connects to `port` only.
   */
  connections(onPorts?: readonly number[]): number;
  readonly user: string;
  /** Private key the client uses (0600). */
  readonly identity: string;
  /** known_hosts holding this server's host key for [127.0.0.1]:port. */
  readonly knownHosts: string;
  readonly dir: string;
  stop(): Promise<void>;
}

/**
 * How a client reaches this server as the transport would: its own key and known_hosts,
 * StrictHostKeyChecking=yes and no user ssh config, so no developer's ~/.ssh changes a result.
 */
export function sshTargetOf(sshd: Sshd, options: { port?: number; connectTimeout?: number } = {}): SshTarget {
  return {
    host: '127.0.0.1',
    user: sshd.user,
    port: options.port ?? sshd.port,
    identity: sshd.identity,
    knownHosts: sshd.knownHosts,
    strictHostKeyChecking: 'yes',
    config: '/dev/null',
    connectTimeout: options.connectTimeout ?? 5,
  };
}

/** Why the sshd suite cannot run here, or undefined when it can. */
export function sshdUnavailable(): string | undefined {
  if (!existsSync(SSHD_PATH))
    return `${SSHD_PATH} is not installed (apt-get install openssh-server; .ci/run installs it)`;
  if (process.getuid?.() !== 0) return 'the test sshd needs root (it runs as root in CI)';
  for (const tool of ['ssh', 'ssh-keygen']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  return undefined;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('data', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

export interface SshdOptions {
  /** Listen on this many more ports, each its own known_hosts entry. */
  readonly extraPorts?: number;
  /**
   * sshd_config settings that replace this helper's (e.g. `{ MaxStartups: '2:100:2' }`, or
   * `{ MaxStartups: undefined }` for sshd's own default 10:30:100) or are added to them
   * (`MaxSessions: '2'`): how a test meets sshd's limits as a fleet does.
   */
  readonly settings?: Readonly<Record<string, string | undefined>>;
  /** Called with each line sshd logs (e.g. to see "drop connection #N … past MaxStartups"). */
  readonly onLog?: (line: string) => void;
}

/** What the test sshd sets in every session so the login shell reads no rc file. */
export const CLEAN_LOGIN_ENV = 'SHLVL=1';

/** This helper's settings that a test may replace (SshdOptions.settings). */
const DEFAULT_SETTINGS: Readonly<Record<string, string>> = {
  MaxStartups: '100:30:200',
  // bash run by sshd for a command sources ~/.bashrc (and /etc/bash.bashrc) only as a top-level
  // shell (SHLVL < 2 once incremented): root's rc (a pyenv init) made every test login take
  // 6–31 s under load. SetEnv overrides sshd's own environment; the test account stays root.
  SetEnv: CLEAN_LOGIN_ENV,
};

export async function startSshd(options: SshdOptions = {}): Promise<Sshd> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'baton-sshd-'));
  const keygen = (file: string) =>
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'baton-test', '-f', file], {
      stdio: 'ignore',
    });
  keygen(path.join(dir, 'host_key'));
  keygen(path.join(dir, 'user_key'));
  writeFileSync(path.join(dir, 'authorized_keys'), readFileSync(path.join(dir, 'user_key.pub')), {
    mode: 0o600,
  });
  // sshd refuses to start without its privilege-separation directory.
  mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
  const user = os.userInfo().username;
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const ports = [port];
    while (ports.length < 1 + (options.extraPorts ?? 0)) {
      const extra = await freePort();
      if (!ports.includes(extra)) ports.push(extra);
    }
    const config = path.join(dir, 'sshd_config');
    writeFileSync(
      config,
      [
        ...ports.map((p) => `Port ${p}`),
        'ListenAddress 127.0.0.1',
        `HostKey ${path.join(dir, 'host_key')}`,
        `PidFile ${path.join(dir, 'sshd.pid')}`,
        `AuthorizedKeysFile ${path.join(dir, 'authorized_keys')}`,
        'PermitRootLogin prohibit-password',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'UsePAM no',
        'StrictModes no',
        'PrintMotd no',
        'AcceptEnv none',
        ...Object.entries({ ...DEFAULT_SETTINGS, ...options.settings }).flatMap(([name, value]) =>
          value === undefined ? [] : [`${name} ${value}`],
        ),
        // VERBOSE logs one "Connection from" line per accepted TCP connection: the count the
        // connection-sharing tests read.
        'LogLevel VERBOSE',
        '',
      ].join('\n'),
    );
    const child: ChildProcess = spawn(SSHD_PATH, ['-D', '-e', '-f', config], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    registerChild(child, 'test sshd');
    let stderr = '';
    const accepted: number[] = [];
    let partial = '';
    child.stderr?.on('data', (b: Buffer) => {
      const text = b.toString();
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        options.onLog?.(line);
        const m = /Connection from \S+ port \d+ on \S+ port (\d+)/.exec(line);
        if (m) accepted.push(Number(m[1]));
      }
      if (stderr.length < 65_536) stderr += text;
    });
    let exited = false as boolean; // set by the exit listener
    child.once('exit', () => (exited = true));
    // sshd either accepts or exits (a port taken): waited for, not counted in attempts, so a
    // loaded machine's slow start is not taken for a failure.
    while (!exited) {
      if (await accepts(port)) {
        const hostKey = readFileSync(path.join(dir, 'host_key.pub'), 'utf8')
          .trim()
          .split(' ')
          .slice(0, 2)
          .join(' ');
        const knownHosts = path.join(dir, 'known_hosts');
        writeFileSync(knownHosts, ports.map((p) => `[127.0.0.1]:${p} ${hostKey}\n`).join(''));
        return {
          port,
          ports,
          connections: (onPorts) => accepted.filter((p) => !onPorts || onPorts.includes(p)).length,
          user,
          identity: path.join(dir, 'user_key'),
          knownHosts,
          dir,
          stop: async () => {
            if (!exited) {
              const gone = new Promise((r) => child.once('exit', r));
              child.kill('SIGTERM');
              await gone;
            }
            rmSync(dir, { recursive: true, force: true });
          },
        };
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    if (!/Address already in use|Bind to port/.test(stderr)) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`the test sshd did not start: ${stderr.trim()}`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw new Error('the test sshd found no free port in 5 attempts');
}

/** The relay ssh's ProxyCommand runs to put a round trip between baton and the test sshd. */
export const DELAY_RELAY = path.join(path.dirname(new URL(import.meta.url).pathname), 'delay-relay.mjs');

/**
 * An ssh_config (for the inventory's `config`) whose connections go through the delay relay:
 * `oneWayMs` each way, so a round trip of twice that. `log` records each connection.
 */
export function delayedSshConfig(dir: string, oneWayMs: number, log: string): string {
  const file = path.join(dir, `ssh_config_delay_${oneWayMs}`);
  writeFileSync(file, `Host *\n  ProxyCommand ${process.execPath} ${DELAY_RELAY} %h %p ${oneWayMs} ${log}\n`);
  return file;
}
