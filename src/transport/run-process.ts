/**
 * The one way baton starts a child process for a transport. Input goes to the child's STDIN:
 * a secret put in argv or the environment is readable by every local user in
 * /proc/<pid>/cmdline and /proc/<pid>/environ for as long as the child runs.
 */
import { spawn } from 'node:child_process';
import { execa } from 'execa';

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

export type ExecFn = (file: string, args: readonly string[], options: ProcessOptions) => Promise<ProcessResult>;

export const runProcess: ExecFn = async (file, args, options) => {
  const child = execa(file, [...args], {
    input: options.input ?? '',
    cancelSignal: options.signal,
    // ssh exits on SIGTERM; one that does not is killed rather than left behind.
    forceKillAfterDelay: 2_000,
    reject: false,
    stripFinalNewline: false,
    // The child gets only what it needs to find its tools and its user's ssh config.
    extendEnv: false,
    env: pickEnv(process.env, ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'SSH_AUTH_SOCK', 'TMPDIR']),
  });
  const result = await Promise.race([child, stoppedAfterAbort(child, options.signal)]);
  const startFailure = result.failed && result.exitCode === undefined && !result.isCanceled && !result.isTerminated;
  return {
    exitCode: result.exitCode,
    stdout: String(result.stdout ?? ''),
    stderr: String(result.stderr ?? ''),
    cancelled: Boolean(result.isCanceled) || options.signal.aborted,
    failedToStart: startFailure ? (result.originalMessage || result.shortMessage) : undefined,
  };
};

/**
 * Resolves once the signal aborted AND the child is gone. execa alone also waits for the
 * child's stdout/stderr to close, and with connection sharing the ssh master holds those very
 * descriptors for the session it runs on the child's behalf: a cancelled operation would then
 * wait for a remote command nobody is waiting for. The master is ended when the command closes.
 */
function stoppedAfterAbort(child: ReturnType<typeof execa>, signal: AbortSignal): Promise<{ failed: true; exitCode: undefined; stdout: string; stderr: string; isCanceled: true; isTerminated: true; originalMessage: string; shortMessage: string }> {
  return new Promise((resolve) => {
    const settle = () => {
      const gone = () => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        resolve({ failed: true, exitCode: undefined, stdout: '', stderr: '', isCanceled: true, isTerminated: true, originalMessage: 'cancelled', shortMessage: 'cancelled' });
      };
      if (child.exitCode !== null || child.signalCode !== null) gone();
      else child.once('exit', gone);
    };
    if (signal.aborted) settle();
    else signal.addEventListener('abort', settle, { once: true });
  });
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
  /** Resolves once the child has exited (on its own, or stopped by the signal). */
  readonly exited: Promise<{ readonly exitCode: number | undefined; readonly stderr: string; readonly failedToStart: string | undefined }>;
}

export interface LiveOptions {
  /** Each complete stdout line, as it arrives. */
  readonly onLine: (line: string) => void;
  /** Stops the child when it aborts (SIGTERM, then SIGKILL). */
  readonly signal: AbortSignal;
}

export type StartFn = (file: string, args: readonly string[], options: LiveOptions) => LiveProcess;

export const startProcess: StartFn = (file, args, options) => {
  const child = spawn(file, [...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: pickEnv(process.env, ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'SSH_AUTH_SOCK', 'TMPDIR']),
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
  const exited = new Promise<{ exitCode: number | undefined; stderr: string; failedToStart: string | undefined }>((resolve) => {
    child.once('error', (error) => {
      failedToStart = error.message;
      resolve({ exitCode: undefined, stderr, failedToStart });
    });
    // 'exit', not 'close': with connection sharing the ssh master holds this child's pipes
    // (see stoppedAfterAbort), so they may stay open after the child is gone.
    child.once('exit', (code) => {
      const done = () => {
        child.stdout.destroy();
        child.stderr.destroy();
        resolve({ exitCode: code ?? undefined, stderr, failedToStart });
      };
      // Let output already in the pipe arrive first, unless the child was stopped.
      if (options.signal.aborted) done();
      else setTimeout(done, 20);
    });
  });
  let killer: NodeJS.Timeout | undefined;
  const stop = () => {
    child.kill('SIGTERM');
    killer = setTimeout(() => child.kill('SIGKILL'), 2_000);
    killer.unref();
  };
  if (options.signal.aborted) stop();
  else options.signal.addEventListener('abort', stop, { once: true });
  void exited.then(() => {
    options.signal.removeEventListener('abort', stop);
    if (killer) clearTimeout(killer);
  });
  return {
    write: (text) => {
      if (child.stdin.writable) child.stdin.write(text);
    },
    end: () => child.stdin.end(),
    exited,
  };
};
