/**
 * The one way baton starts a child process for a transport. Input goes to the child's STDIN:
 * a secret put in argv or the environment is readable by every local user in
 * /proc/<pid>/cmdline and /proc/<pid>/environ for as long as the child runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ProcessResult {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
  /** The signal aborted and the child was stopped (SIGTERM, then SIGKILL). */
  readonly cancelled: boolean;
  /** Set when the program could not be started at all (ENOENT…). */
  readonly failedToStart: string | undefined;
}

export interface ProcessOptions {
  /** Written to the child's stdin, then stdin is closed. */
  readonly input?: string;
  /** Stops the child when it aborts: the one bound on how long a transport call may take. */
  readonly signal: AbortSignal;
}

export type ExecFn = (
  file: string,
  args: readonly string[],
  options: ProcessOptions,
) => Promise<ProcessResult>;

/**
 * How long a live ssh's stderr is read after it exited 255, when it has not ended by then: a
 * pipe an ssh master still holds (stoppedAfterAbort) must not hold the process's end open.
 */
const PIPES_AFTER_EXIT_MS = 500;

/** ssh exits on SIGTERM; one that does not is killed this long after, rather than left behind. */
const KILL_AFTER_MS = 2_000;

export const runProcess: ExecFn = (file, args, options) =>
  new Promise((resolve) => {
    const { signal } = options;
    const child = spawn(file, [...args], { env: childEnv(), stdio: 'pipe' });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    let killer: NodeJS.Timeout | undefined;
    let settled = false;
    const finish = (exitCode: number | undefined, failedToStart?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(killer);
      signal.removeEventListener('abort', onAbort);
      const cancelled = signal.aborted;
      resolve({
        exitCode: cancelled ? undefined : exitCode,
        stdout: cancelled ? '' : Buffer.concat(stdout).toString('utf8'),
        stderr: cancelled ? '' : Buffer.concat(stderr).toString('utf8'),
        cancelled,
        failedToStart,
      });
    };
    // After an abort the child's exit is enough, not its streams' close: with connection
    // sharing the ssh master holds those very descriptors for the session it runs on the
    // child's behalf, and a cancelled operation would wait for a remote command nobody waits for.
    const gone = () => {
      child.stdout.destroy();
      child.stderr.destroy();
      finish(undefined);
    };
    function onAbort() {
      if (child.exitCode !== null || child.signalCode !== null) return gone();
      child.once('exit', gone);
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    }
    child.once('error', (error) => finish(undefined, child.pid === undefined ? error.message : undefined));
    child.once('close', (code) => finish(code ?? undefined));
    child.stdin.on('error', () => undefined); // EPIPE: the child exited without reading its input
    child.stdin.end(options.input ?? '');
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });

/** The child gets only what it needs to find its tools and its user's ssh config. */
function childEnv(): Record<string, string> {
  return pickEnv(process.env, [
    'PATH',
    'HOME',
    'USER',
    'LOGNAME',
    'LANG',
    'LC_ALL',
    'SSH_AUTH_SOCK',
    'TMPDIR',
  ]);
}

function pickEnv(env: NodeJS.ProcessEnv, names: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** A child that keeps running: lines in, lines out, for a session that outlives one request. */
export interface LiveProcess {
  /** Writes to the child's stdin (never a secret: only paths and requests go this way). */
  write(text: string): void;
  /** Closes the child's stdin: a remote loop reading it ends. */
  end(): void;
  /**
   * Whether the child keeps this process alive (default: it does). An idle session kept for
   * the command's next operation is let go of (`false`) so it never holds a finished command open.
   */
  hold?(on: boolean): void;
  /** Resolves once the child has exited (on its own, or stopped by the signal). */
  readonly exited: Promise<{
    readonly exitCode: number | undefined;
    readonly stderr: string;
    readonly failedToStart: string | undefined;
  }>;
}

export interface LiveOptions {
  /** Each complete stdout line, as it arrives. */
  readonly onLine: (line: string) => void;
  /** Stops the child when it aborts (SIGTERM, then SIGKILL). */
  readonly signal: AbortSignal;
  /**
   * Its own process group: a Ctrl-C at the terminal reaches baton, not this child. The provider
   * lock's session must outlive the first signal (the roll-back runs under it); it still ends
   * when baton dies, since its stdin closes with baton.
   */
  readonly ownGroup?: boolean;
}

export type StartFn = (file: string, args: readonly string[], options: LiveOptions) => LiveProcess;

export const startProcess: StartFn = (file, args, options) => {
  const child = spawn(file, [...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: childEnv(),
    ...(options.ownGroup ? { detached: true } : {}),
  });
  let stderr = '';
  let partial = '';
  let failedToStart: string | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) options.onLine(line);
  });
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 16_384) stderr += chunk.toString('utf8');
  });
  // A write after the child died is not an error of its own: `exited` says what happened.
  child.stdin.on('error', () => undefined);
  const exited = new Promise<{
    exitCode: number | undefined;
    stderr: string;
    failedToStart: string | undefined;
  }>((resolve) => {
    child.once('error', (error) => {
      failedToStart = error.message;
      resolve({ exitCode: undefined, stderr, failedToStart });
    });
    const finish = (code: number | null) => {
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({ exitCode: code ?? undefined, stderr, failedToStart });
    };
    // 'exit', not 'close': with connection sharing the ssh master holds this child's pipes
    // (see stoppedAfterAbort), so they may stay open after the child is gone.
    child.once('exit', (code) => {
      if (options.signal.aborted) return finish(code);
      // Let output already in the pipes arrive first (20 ms). ssh's own failure (exit 255: a
      // connection sshd refused or dropped) says why on stderr as it exits, and on a loaded
      // controller 20 ms lost those words: a MaxStartups drop read as "ssh failed (exit 255)" and
      // was not tried again. So then stderr is read to its end first (at most PIPES_AFTER_EXIT_MS).
      const settle = () => setTimeout(() => finish(code), 20);
      if (code !== 255 || child.stderr.readableEnded) return void settle();
      const timer = setTimeout(() => finish(code), PIPES_AFTER_EXIT_MS);
      child.stderr.once('end', () => {
        clearTimeout(timer);
        settle();
      });
    });
  });
  void exited.then(stopOnAbort(child, options.signal));
  return {
    write: (text) => {
      if (child.stdin.writable) child.stdin.write(text);
    },
    end: () => child.stdin.end(),
    hold: (on) => {
      // The pipes are sockets underneath; their types do not say so.
      for (const h of [child, child.stdin, child.stdout, child.stderr] as { ref?(): void; unref?(): void }[])
        if (on) h.ref?.();
        else h.unref?.();
    },
    exited,
  };
};

/**
 * A live process is stopped when its operation is cancelled: SIGTERM, then SIGKILL after
 * KILL_AFTER_MS, so one that ignores TERM cannot hold a cancelled command open. Returns what
 * forgets the signal once the process has ended (a long command must not collect listeners).
 */
export function stopOnAbort(child: Pick<ChildProcess, 'kill'>, signal: AbortSignal): () => void {
  let killer: NodeJS.Timeout | undefined;
  const stop = () => {
    child.kill('SIGTERM');
    killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    killer.unref();
  };
  if (signal.aborted) stop();
  else signal.addEventListener('abort', stop, { once: true });
  return () => {
    signal.removeEventListener('abort', stop);
    clearTimeout(killer);
  };
}
