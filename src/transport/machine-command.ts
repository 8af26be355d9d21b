/**
 * A command run on a holder for the app's sake (a consumer's `reload:`, docs/mesh-rotation.md
 * "The app, not only its file"): `sh -c`, stdin closed, stdout dropped, stderr kept in a temp
 * file of which only the end comes back. Bounded ON the machine (GNU `timeout`, which ends the
 * whole process group, else a sleeping killer), because ending the ssh client does not end a
 * remote command. Its stdout and stderr never stay tied to the session: an app the command
 * starts would otherwise hold the channel open and the reload would never return.
 */
import { spawn } from 'node:child_process';
import { promises as fs, openSync, closeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { abortedError, TransportError, type CommandRequest, type CommandResult } from '../mesh/transport.js';
import { ANSWER_PREFIX } from './agent-protocol.js';
import { shQuote } from './remote-scripts.js';

/** How much of the end of stderr is read back. */
export const STDERR_TAIL_BYTES = 4096;
/** After the bound, TERM; this long after, KILL. */
const KILL_GRACE_S = 2;

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

function checkRequest(machine: string, request: CommandRequest): void {
  for (const [name, value] of Object.entries(request.env))
    if (!ENV_NAME.test(name) || /[\n\0]/.test(value))
      throw new TransportError(
        machine,
        `the command's environment entry ${JSON.stringify(name)} is not plain`,
      );
}

/**
 * The remote side: `$1` seconds, `$2` the command, then `NAME=value` words. Answers
 * `@baton rc <code> <timed-out 0|1>`, then `@baton e <line>` for the end of stderr.
 */
export const RUN_COMMAND = `t=$1; c=$2; shift 2
for kv in "$@"; do export "$kv"; done
e=$(mktemp "\${TMPDIR:-/tmp}/baton-run.XXXXXX") || { printf '@baton rc 126 0\\n@baton e cannot make a temp file\\n'; exit 0; }
to=0
if command -v timeout >/dev/null 2>&1; then
  timeout -k ${KILL_GRACE_S} "$t" sh -c "$c" </dev/null >/dev/null 2>"$e"; rc=$?
  [ "$rc" -eq 124 ] && to=1
else
  sh -c "$c" </dev/null >/dev/null 2>"$e" & p=$!
  ( sleep "$t"; kill -TERM "$p" 2>/dev/null && : >"$e.to"; sleep ${KILL_GRACE_S}; kill -KILL "$p" 2>/dev/null ) </dev/null >/dev/null 2>&1 & k=$!
  wait "$p"; rc=$?; kill "$k" 2>/dev/null
  [ -e "$e.to" ] && to=1; rm -f "$e.to"
fi
printf '@baton rc %s %s\\n' "$rc" "$to"
tail -c ${STDERR_TAIL_BYTES} "$e" | sed 's/^/@baton e /'
rm -f "$e"`;

/** What ssh hands the remote login shell for a request. */
export function remoteRunCommand(request: CommandRequest): string {
  const seconds = Math.max(1, Math.ceil(request.timeoutMs / 1000));
  return [
    'sh',
    '-c',
    shQuote(RUN_COMMAND),
    'baton-run',
    String(seconds),
    shQuote(request.command),
    ...Object.entries(request.env).map(([k, v]) => shQuote(`${k}=${v}`)),
  ].join(' ');
}

/**
 * A run prepared ahead (Transport.prepareCommand): the session waits on stdin for `go`, then
 * `NAME=value` lines up to an empty one, and runs RUN_COMMAND with them; stdin closing first
 * (the reload was not needed) ends it having run nothing.
 */
export const PREPARED_RUN = `IFS= read -r go || exit 0
[ "$go" = go ] || exit 0
t=$1; c=$2; r=$3; set --
while IFS= read -r kv && [ -n "$kv" ]; do set -- "$@" "$kv"; done
exec sh -c "$r" baton-run "$t" "$c" "$@"`;

/** What ssh hands the remote login shell for a prepared run: the command, but no environment yet. */
export function remotePreparedRun(command: string, timeoutMs: number): string {
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  return [
    'sh',
    '-c',
    shQuote(PREPARED_RUN),
    'baton-prepared',
    String(seconds),
    shQuote(command),
    shQuote(RUN_COMMAND),
  ].join(' ');
}

/** The lines that start a prepared run (checked as a request's environment is). */
export function preparedRunInput(env: Readonly<Record<string, string>>): string {
  return `go\n${Object.entries(env)
    .map(([k, v]) => `${k}=${v}\n`)
    .join('')}\n`;
}

/** Reads the remote script's answer; throws when it is not one. */
export function parseRunAnswer(machine: string, stdout: string, durationMs: number): CommandResult {
  let exitCode: number | undefined;
  let timedOut = false;
  const tail: string[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith(ANSWER_PREFIX)) continue;
    const answer = line.slice(ANSWER_PREFIX.length);
    const rc = /^rc (\d+) ([01])$/.exec(answer);
    if (rc) {
      exitCode = Number(rc[1]);
      timedOut = rc[2] === '1';
    } else if (answer.startsWith('e ')) tail.push(answer.slice(2));
  }
  if (exitCode === undefined)
    throw new TransportError(machine, 'the command ran, but the machine did not say how it ended');
  return {
    exitCode: timedOut ? undefined : exitCode,
    timedOut,
    durationMs,
    stderrTail: tail.join('\n'),
  };
}

/** The local transport's runner: the machine is this host; `cwd` is the directory that plays its root. */
export async function runLocalCommand(
  machine: string,
  cwd: string,
  request: CommandRequest,
  signal: AbortSignal,
): Promise<CommandResult> {
  checkRequest(machine, request);
  if (signal.aborted) throw abortedError(machine, 'running the command', signal);
  const errFile = path.join(os.tmpdir(), `baton-run-${randomBytes(6).toString('hex')}`);
  const fd = openSync(errFile, 'wx', 0o600);
  const started = performance.now();
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'USER', 'LOGNAME'])
    if (process.env[name] !== undefined) env[name] = process.env[name];
  try {
    // detached: its own process group, so the bound ends everything it started in it.
    const child = spawn('sh', ['-c', request.command], {
      cwd,
      // BATON_ROOT: the directory that plays the machine's root, so a command finds the files under it.
      env: { ...env, ...request.env, BATON_ROOT: cwd },
      stdio: ['ignore', 'ignore', fd],
      detached: true,
    });
    // An object, not a let: the bound sets it from a timer callback.
    const ended = { byTime: false, byCancel: false };
    const killGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    let grace: NodeJS.Timeout | undefined;
    const end = (why: 'time' | 'cancel') => {
      if (why === 'time') ended.byTime = true;
      else ended.byCancel = true;
      killGroup('SIGTERM');
      grace = setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_S * 1000);
    };
    const timer = setTimeout(() => end('time'), request.timeoutMs);
    const onAbort = () => end('cancel');
    signal.addEventListener('abort', onAbort, { once: true });
    const code = await new Promise<number | undefined>((resolve) => {
      child.once('error', () => resolve(127));
      child.once('exit', (exit) => resolve(exit ?? undefined));
    });
    clearTimeout(timer);
    clearTimeout(grace);
    signal.removeEventListener('abort', onAbort);
    const timedOut = ended.byTime;
    if (ended.byCancel && !timedOut) throw abortedError(machine, 'running the command', signal);
    const stat = await fs.stat(errFile);
    const handle = await fs.open(errFile, 'r');
    const length = Math.min(stat.size, STDERR_TAIL_BYTES);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, stat.size - length);
    await handle.close();
    return {
      exitCode: timedOut ? undefined : code,
      timedOut,
      durationMs: Math.round(performance.now() - started),
      stderrTail: buffer.toString('utf8'),
    };
  } finally {
    closeSync(fd);
    await fs.rm(errFile, { force: true });
  }
}

export { checkRequest as checkCommandRequest };
