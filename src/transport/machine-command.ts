/**
 * A command run on a holder for the app's sake (a consumer's `reload:`, docs/mesh-rotation.md
 * "The app, not only its file"): the agent's `run` mode (agent/baton-agent.pl) does it on the
 * machine — `sh -c`, stdin closed, stdout dropped, the end of stderr kept, bounded ON the
 * machine, because ending the ssh client does not end a remote command. This module only builds
 * its arguments and reads its answer.
 */
import { TransportError, type CommandRequest, type CommandResult } from '../mesh/transport.js';
import { ANSWER_PREFIX } from './agent-protocol.js';
import { agentCommand } from './remote-scripts.js';

const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

function checkRequest(machine: string, request: CommandRequest): void {
  for (const [name, value] of Object.entries(request.env))
    if (!ENV_NAME.test(name) || /[\n\0]/.test(value))
      throw new TransportError(
        machine,
        `the command's environment entry ${JSON.stringify(name)} is not plain`,
      );
}

/** The agent's arguments for a run (docs/agent-protocol.md, "Modes run and prepared"): its bound in whole seconds, the command, the environment. */
export function runArgs(request: CommandRequest): string[] {
  return [
    'run',
    String(boundSeconds(request.timeoutMs)),
    request.command,
    ...Object.entries(request.env).map(([k, v]) => `${k}=${v}`),
  ];
}

const boundSeconds = (timeoutMs: number) => Math.max(1, Math.ceil(timeoutMs / 1000));

/** What ssh hands the remote login shell for a request: the agent's `run`. */
export function remoteRunCommand(request: CommandRequest): string {
  return agentCommand(runArgs(request));
}

/**
 * A run prepared ahead (Transport.prepareCommand): the agent's `prepared` waits on stdin for
 * `go`, then `NAME=value` lines up to an empty one, and runs as `run`; stdin closing first
 * (the reload was not needed) ends it having run nothing.
 */
export function remotePreparedRun(command: string, timeoutMs: number): string {
  return agentCommand(['prepared', String(boundSeconds(timeoutMs)), command]);
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

export { checkRequest as checkCommandRequest };
