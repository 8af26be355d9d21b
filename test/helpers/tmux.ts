/**
 * A real terminal for end-to-end tests: a PRIVATE tmux server (its own socket, no user config)
 * running one command in an 80×24 pane. Tests poll the pane for the text they expect before
 * every key — never a fixed sleep — and send text and Enter separately (one write would be a
 * paste, and the Enter would land in the text field).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { promisify } from 'node:util';
import { vi } from 'vitest';
import { REPO } from './bundle-script.js';
import { BIN } from './run-baton.js';
import { registerProcess } from './process-registry.js';
import type { Sshd } from './sshd.js';

const run = promisify(execFile);

export interface TmuxOptions {
  /** The shell command to run in the pane (already quoted). */
  readonly command: string;
  readonly cwd?: string;
  /** Extra environment for the command, e.g. { NO_COLOR: '1' }. */
  readonly env?: Readonly<Record<string, string>>;
  readonly columns?: number;
  readonly rows?: number;
}

/** Marks the end of the command in the pane with its exit code; the pane stays for capture. */
const EXIT_MARK = /\[exit (\d+)\]/;

export class TmuxSession {
  private constructor(private readonly socket: string) {}

  static async start(options: TmuxOptions): Promise<TmuxSession> {
    const socket = `baton-e2e-${process.pid}-${randomBytes(4).toString('hex')}`;
    const env = Object.entries({ TERM: 'xterm-256color', ...options.env })
      .map(([k, v]) => `${k}=${shellQuote(v)}`)
      .join(' ');
    // CI=true makes Ink draw only the final frame at exit: unset it for the child.
    const inner = `env -u CI -u CONTINUOUS_INTEGRATION ${env} ${options.command}; printf '\\n[exit %d]\\n' $?; exec sleep 600`;
    const args = [
      '-L',
      socket,
      '-f',
      '/dev/null',
      'new-session',
      '-d',
      '-x',
      String(options.columns ?? 80),
      '-y',
      String(options.rows ?? 24),
    ];
    if (options.cwd) args.push('-c', options.cwd);
    args.push(`sh -c ${shellQuote(inner)}`);
    await run('tmux', args);
    // The tmux server detaches (parent 1): registered so a test that never kills it does not leak it.
    const { stdout: serverPid } = await run('tmux', ['-L', socket, 'display-message', '-p', '#{pid}']);
    registerProcess(Number(serverPid.trim()), `tmux server -L ${socket}`);
    return new TmuxSession(socket);
  }

  /**
   * The visible pane; with `escapes`, colour and attribute escapes kept (for screenshots); with
   * `history`, from the first line the pane ever held (a plain report taller than the pane, whose
   * top scrolled away, read whole).
   */
  async capture(escapes = false, history = false): Promise<string> {
    const args = ['-L', this.socket, 'capture-pane', '-p', '-t', '0'];
    if (escapes) args.push('-e');
    if (history) args.push('-S', '-');
    const { stdout } = await run('tmux', args);
    return stdout;
  }

  /** Lines scrolled off the top of the pane into its history: frames taller than the pane pile up there. */
  async historySize(): Promise<number> {
    const { stdout } = await run('tmux', [
      '-L',
      this.socket,
      'display-message',
      '-p',
      '-t',
      '0',
      '#{history_size}',
    ]);
    return Number(stdout.trim());
  }

  /** Polls the pane until `predicate` holds; the error shows the last screen. */
  async waitFor(
    predicate: string | ((screen: string) => boolean),
    what?: string,
    timeout = 20_000,
  ): Promise<string> {
    const test = typeof predicate === 'string' ? (s: string) => s.includes(predicate) : predicate;
    let screen = '';
    await vi.waitFor(
      async () => {
        screen = await this.capture();
        if (!test(screen)) throw new Error(`waiting for ${what ?? String(predicate)}; screen:\n${screen}`);
      },
      { timeout, interval: 50 },
    );
    return screen;
  }

  /** Appends everything the program writes to the pane from now on, raw, to `file`. */
  async record(file: string): Promise<void> {
    await run('tmux', ['-L', this.socket, 'pipe-pane', '-o', '-t', '0', `cat >> ${shellQuote(file)}`]);
  }

  /** Named keys (Enter, Escape, Down, C-c). */
  async keys(...names: string[]): Promise<void> {
    await run('tmux', ['-L', this.socket, 'send-keys', '-t', '0', ...names]);
  }

  /** Literal text, as typed. */
  async type(text: string): Promise<void> {
    await run('tmux', ['-L', this.socket, 'send-keys', '-t', '0', '-l', text]);
  }

  /** Resizes the window, as an operator dragging the terminal does: the program gets SIGWINCH. */
  async resize(columns: number, rows: number): Promise<void> {
    await run('tmux', [
      '-L',
      this.socket,
      'resize-window',
      '-t',
      '0',
      '-x',
      String(columns),
      '-y',
      String(rows),
    ]);
  }

  /** Raw bytes in ONE write (e.g. three DEL bytes: a held Backspace arriving over SSH). */
  async bytes(...hex: string[]): Promise<void> {
    await run('tmux', ['-L', this.socket, 'send-keys', '-t', '0', '-H', ...hex]);
  }

  /**
   * Pastes `text` as a terminal does: tmux wraps it in ESC[200~ … ESC[201~ (`paste-buffer -p`)
   * only while the program has asked for bracketed paste, and sends each line break as Enter (CR).
   */
  async paste(text: string): Promise<void> {
    const buffer = `baton-paste-${randomBytes(3).toString('hex')}`;
    await run('tmux', ['-L', this.socket, 'set-buffer', '-b', buffer, '--', text]);
    await run('tmux', ['-L', this.socket, 'paste-buffer', '-p', '-d', '-b', buffer, '-t', '0']);
  }

  /** The pid of the command the pane runs (the child of the pane's `sh -c`). */
  async commandPid(): Promise<number> {
    const { stdout } = await run('tmux', [
      '-L',
      this.socket,
      'display-message',
      '-p',
      '-t',
      '0',
      '#{pane_pid}',
    ]);
    const { stdout: children } = await run('ps', ['-o', 'pid=', '--ppid', stdout.trim()]);
    const pids = children
      .split('\n')
      .map((line) => Number(line.trim()))
      .filter((pid) => pid > 0);
    if (pids.length !== 1)
      throw new Error(`expected one command under the pane's shell, found ${pids.length}`);
    return pids[0]!;
  }

  /** Waits for the command to end and returns its exit code. */
  async exitCode(timeout = 20_000): Promise<number> {
    const screen = await this.waitFor((s) => EXIT_MARK.test(s), 'the command to exit', timeout);
    return Number(EXIT_MARK.exec(screen)![1]);
  }

  /** Stops the private server and removes its socket file (tmux leaves it behind). */
  async kill(): Promise<void> {
    const socketPath = await run('tmux', ['-L', this.socket, 'display-message', '-p', '#{socket_path}'])
      .then(({ stdout }) => stdout.trim())
      .catch(() => '');
    await run('tmux', ['-L', this.socket, 'kill-server']).catch(() => undefined);
    if (socketPath) await rm(socketPath, { force: true });
  }
}

export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The shell command for a pane that reaches the built CLI over `ssh -tt` to the test sshd (a real
 * remote terminal: the keys cross the network in the reads ssh makes of them).
 */
export function batonOverSsh(
  sshd: Pick<Sshd, 'user' | 'port' | 'identity' | 'knownHosts'>,
  batonArgs: readonly string[],
): string {
  const remote = `cd ${shellQuote(REPO)} && exec node ${[BIN, ...batonArgs].map(shellQuote).join(' ')}`;
  const ssh = [
    'ssh',
    '-tt',
    '-F',
    '/dev/null',
    '-i',
    sshd.identity,
    '-p',
    String(sshd.port),
    '-o',
    `UserKnownHostsFile=${sshd.knownHosts}`,
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'LogLevel=ERROR',
    `${sshd.user}@127.0.0.1`,
    remote,
  ];
  return ssh.map(shellQuote).join(' ');
}

/**
 * Whether bracketed paste was left on by what a pane recorded (`record()` from before the
 * program started): the last of ESC[?2004h / ESC[?2004l wins, undefined when neither was sent.
 * (tmux 3.3 has no `#{pane_bracket_paste}` to ask.)
 */
export function bracketedPasteLeftOn(recorded: string): boolean | undefined {
  const on = recorded.lastIndexOf('\u001b[?2004h');
  const off = recorded.lastIndexOf('\u001b[?2004l');
  if (on < 0 && off < 0) return undefined;
  return on > off;
}
