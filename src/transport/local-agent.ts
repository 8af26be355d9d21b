/**
 * The agent (agent/baton-agent.pl) run on THIS host for the local transport: the same program a
 * holder runs over ssh, started by the same loader (`perl -e <loader> -- <core> --root <root> <mode> …`)
 * with its whole text on perl's stdin and the session's input on fd 3, as the ssh command arranges
 * it on a machine. So there is one implementation of every file operation, and the drill and the
 * tests that use the local transport exercise it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import { agentSource } from './agent-program.js';
import { agentInput, agentPerlArgs } from './remote-scripts.js';
import { decodeServeLine, NO_PERL, serveRequest } from './agent-protocol.js';
import { lastLine, machineReason, ownLine } from './agent-channel.js';
import type { AgentHost } from './agent-operations.js';
import { stopOnAbort, type LiveOptions, type LiveProcess } from './run-process.js';
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

/**
 * Every local agent runs in its own process group, as a holder's agent runs on another machine:
 * a terminal's SIGHUP or Ctrl-C reaches baton, which decides (roll back, finish), and not the
 * program baton needs to carry that decision out. It still ends with baton: its stdin closes.
 */
function startAgent(root: string | undefined, args: readonly string[]): ChildProcess {
  const rooted = root === undefined ? [] : ['--root', root];
  const child = spawn('perl', agentPerlArgs([...rooted, ...args]), {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: agentEnv(),
    detached: true,
  });
  child.stdin.on('error', () => undefined);
  child.stdin.end(agentInput());
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
      args[0] === 'files' || args[0] === 'hello'
        ? sharedFileServer().call(machine, root, what, args, signal, text)
        : runOnce(what, args, signal, text),
    session: (args, options) => liveAgent(startAgent(root, args), options),
  };

  /** One run of the agent for one request (resolve's hello, a reload). */
  function runOnce(
    what: string,
    args: readonly string[],
    signal: AbortSignal,
    text?: string,
  ): Promise<string> {
    return new Promise((resolve, reject) => {
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
                : `${what} failed on the machine${machineReason({ stderr: Buffer.concat(err).toString('utf8'), exitCode: code })}`,
            ),
          );
        }),
      );
    });
  }
}

interface Pending {
  readonly machine: string;
  readonly what: string;
  readonly request: string;
  readonly lines: string[];
  settle(result: string | Error): void;
}

/**
 * The agent's `serve` for the file operations of every local machine: one perl answers them in
 * order, each request naming its machine's root, so an operation costs a request on a running
 * process, not a perl start (docs/agent-protocol.md, "Mode serve"). baton ends its input after
 * IDLE_MS without a request (it also exits by itself after 2 s idle); the next operation starts
 * another. One that exited idle had read nothing of what was written since, so those requests go
 * to the next one; one that died otherwise fails what it was asked. While nothing is asked of
 * it, it keeps no command alive (its handles are unref'd).
 */
/**
 * How long the serving agent waits for the next operation before baton lets it go. A command's
 * operations come 0.3–1 s apart (a status read, then the rotation's plan and checks): at 300 ms
 * most of them started a perl of their own (~30 CPU-ms each), the rotation sequences' largest
 * cost. It stays under the agent's own 2 s, so baton, not the agent, ends an idle one.
 */
const IDLE_MS = 1_000;

/**
 * One serving agent in this process for every machine root: every command makes its transports
 * anew, and one made 100 ms after the last would otherwise start a perl beside the idle one; an
 * agent per root cost a perl start per machine each time a fleet's phase came back to it (a
 * rotation of 1,000 local holders: 38 s against 8.8 s of its latency floor, docs/benchmarks.md
 * round 14). Every file operation is short and none waits on another (locks are sessions of
 * their own), so answering several machines' and commands' in one queue only orders them.
 */
const servers = new Map<string, ReturnType<typeof fileServer>>();
function sharedFileServer() {
  // A serving agent answers for the program it was started with: a transport that sends another
  // (a stale copy, in the contract's version case) gets its own, so its hello is the one checked.
  const source = agentSource();
  let server = servers.get(source);
  if (!server) {
    // Forgotten once it lets its agent go: an entry with no agent behind it is only memory.
    const made = fileServer(() => servers.get(source) === made && servers.delete(source));
    servers.set(source, (server = made));
  }
  return server;
}

function fileServer(onIdle: () => void = () => undefined) {
  let child: ChildProcess | undefined;
  const queue: Pending[] = [];
  const hold = (on: boolean) => {
    if (!child) return;
    for (const h of [child, child.stdout, child.stderr, child.stdio[3]] as (
      { ref?: () => void; unref?: () => void } | null | undefined
    )[])
      if (on) h?.ref?.();
      else h?.unref?.();
  };
  const start = () => {
    const c = startAgent(undefined, ['serve']);
    child = c;
    let partial = '';
    let stderr = '';
    c.stdout!.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) answer(line);
    });
    c.stderr!.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    const gone = (code: number | null, error?: Error & { code?: string }) => {
      if (child !== c) return;
      child = undefined;
      if (code === 0 && queue.every((p) => p.lines.length === 0)) {
        if (queue.length > 0) resend();
        return;
      }
      const why = error
        ? notStarted(error)
        : lastLine(stderr) === NO_PERL
          ? NO_PERL
          : ownLine(stderr) || `the agent ended (exit ${code ?? 'by signal'})`;
      for (const p of queue.splice(0))
        p.settle(
          new TransportError(
            p.machine,
            why === NO_PERL ? NO_PERL : `${p.what} failed on the machine: ${why}`,
          ),
        );
    };
    c.once('error', (error) => gone(null, error));
    // Its last answers are read before its queue is failed; stdout may have closed before the
    // exit came (an agent that refused to start), and a 'close' waited for then never comes.
    c.once('exit', (code) => {
      if (c.stdout!.closed) gone(code);
      else c.stdout!.once('close', () => gone(code));
    });
  };
  const answer = (line: string) => {
    const head = queue[0];
    if (!head) return;
    const said = decodeServeLine(line);
    if (said.kind === 'ok') {
      queue.shift();
      head.settle(head.lines.map((l) => `${l}\n`).join(''));
    } else if (said.kind === 'err') {
      queue.shift();
      head.settle(new TransportError(head.machine, `${head.what} failed on the machine: ${said.why}`));
    } else head.lines.push(line);
    if (queue.length === 0) {
      hold(false);
      idle = setTimeout(letGo, IDLE_MS);
      idle.unref();
    }
  };
  /** Idle: its input ends and it exits (a command's last operation leaves no agent behind it). */
  let idle: NodeJS.Timeout | undefined;
  const letGo = () => {
    const c = child;
    child = undefined;
    if (c) (c.stdio[3] as Writable).end();
    onIdle();
  };
  const resend = () => {
    start();
    hold(true);
    for (const p of queue) (child!.stdio[3] as Writable).write(p.request);
  };
  return {
    call(
      machine: string,
      root: string,
      what: string,
      args: readonly string[],
      signal: AbortSignal,
      text?: string,
    ): Promise<string> {
      if (signal.aborted) return Promise.reject(abortedError(machine, what, signal));
      const request = serveRequest(args, text, root);
      return new Promise<string>((resolve, reject) => {
        const onAbort = () => reject(abortedError(machine, what, signal));
        signal.addEventListener('abort', onAbort, { once: true });
        // An abandoned request keeps its place: answers come in order.
        queue.push({
          machine,
          what,
          request,
          lines: [],
          settle: (result) => {
            signal.removeEventListener('abort', onAbort);
            if (result instanceof Error) reject(result);
            else resolve(result);
          },
        });
        clearTimeout(idle);
        if (!child) start();
        hold(true);
        (child!.stdio[3] as Writable).write(request);
      });
    },
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
  void exited.then(stopOnAbort(child, options.signal));
  return {
    write: (text) => {
      if (input(child).writable) input(child).write(text);
    },
    end: () => input(child).end(),
    exited,
  };
}
