/**
 * The agent (agent/baton-agent.pl) run on THIS host for the local transport: the same program a
 * holder runs over ssh, started as `perl - --root <root> <mode> …` with its text on perl's stdin
 * and the session's input on fd 3, exactly as the ssh bootstrap arranges it on a machine. So
 * there is one implementation of every file operation, and the drill and the tests that use the
 * local transport exercise it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { agentSource } from './agent-program.js';
import { NO_PERL } from './agent-protocol.js';
import { lastLine } from './agent-channel.js';
import type { AgentHost } from './agent-operations.js';
import type { LiveOptions, LiveProcess } from './run-process.js';
import { abortedError, TransportError } from '../mesh/transport.js';

/** After SIGTERM, a perl that has not exited is killed this long after, rather than left behind. */
const KILL_AFTER_MS = 2_000;

/** What the agent's command runs with on this host: enough to find its tools, nothing of baton's own. */
function agentEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TMPDIR'])
    if (process.env[name] !== undefined) env[name] = process.env[name];
  return env;
}

function startAgent(root: string, args: readonly string[], ownGroup = false): ChildProcess {
  const child = spawn('perl', ['-', '--root', root, ...args], {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: agentEnv(),
    ...(ownGroup ? { detached: true } : {}),
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(agentSource());
  // A write after the agent exited is not an error of its own: its exit says what happened.
  input(child).on('error', () => undefined);
  return child;
}

/** The agent's fd 3: requests, staged secrets and records go there, never in argv. */
const input = (child: ChildProcess) => child.stdio[3] as Writable;

/** The start failure in words: no perl on this host is the holder's "no perl 5". */
const notStarted = (error: Error & { code?: string }) => (error.code === 'ENOENT' ? NO_PERL : error.message);

export function localAgent(machine: string, root: string): AgentHost {
  return {
    machine,
    via: 'perl',
    call: (what, args, signal, text) =>
      new Promise((resolve, reject) => {
        if (signal.aborted) return reject(abortedError(machine, what, signal));
        const child = startAgent(root, args);
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        child.stdout!.on('data', (c: Buffer) => out.push(c));
        child.stderr!.on('data', (c: Buffer) => err.push(c));
        input(child).end(text ?? '');
        let killer: NodeJS.Timeout | undefined;
        const onAbort = () => {
          child.kill('SIGTERM');
          killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        const settle = (fn: () => void) => {
          clearTimeout(killer);
          signal.removeEventListener('abort', onAbort);
          fn();
        };
        child.once('error', (error) =>
          settle(() => reject(new TransportError(machine, `${what}: ${notStarted(error)}`))),
        );
        child.once('close', (code) =>
          settle(() => {
            if (signal.aborted) return reject(abortedError(machine, what, signal));
            if (code === 0) return resolve(Buffer.concat(out).toString('utf8'));
            const said = lastLine(Buffer.concat(err).toString('utf8'));
            reject(
              new TransportError(
                machine,
                said === NO_PERL
                  ? NO_PERL
                  : `${what} failed on the machine${said ? `: ${said}` : ` (exit ${code ?? 'by signal'})`}`,
              ),
            );
          }),
        );
      }),
    session: (args, options) => liveAgent(startAgent(root, args, options.ownGroup), options),
  };
}

/** A long-lived agent as a LiveProcess: lines out as they come, requests in on fd 3. */
function liveAgent(child: ChildProcess, options: LiveOptions): LiveProcess {
  let stderr = '';
  let partial = '';
  let failedToStart: string | undefined;
  child.stdout!.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) options.onLine(line);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    if (stderr.length < 16_384) stderr += chunk.toString('utf8');
  });
  const exited = new Promise<Awaited<LiveProcess['exited']>>((resolve) => {
    child.once('error', (error) => {
      failedToStart = notStarted(error);
      resolve({ exitCode: undefined, stderr, failedToStart });
    });
    // Exited, and every answer it wrote read: its stdout has closed too (fd 3 is ours to end).
    const stdoutClosed = new Promise((r) => child.stdout!.once('close', r));
    child.once('exit', (code) => {
      void stdoutClosed.then(() => resolve({ exitCode: code ?? undefined, stderr, failedToStart }));
    });
  });
  let killer: NodeJS.Timeout | undefined;
  const stop = () => {
    child.kill('SIGTERM');
    killer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
    killer.unref();
  };
  if (options.signal.aborted) stop();
  else options.signal.addEventListener('abort', stop, { once: true });
  void exited.then(() => {
    options.signal.removeEventListener('abort', stop);
    clearTimeout(killer);
  });
  return {
    write: (text) => {
      if (input(child).writable) input(child).write(text);
    },
    end: () => input(child).end(),
    exited,
  };
}
