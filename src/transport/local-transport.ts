/**
 * The `local` transport: `address` is a directory that plays the machine's root (docs/mesh-rotation.md),
 * so a drill or a test runs the same delivery code as production against real files — and the
 * same machine side: every operation is the agent (agent/baton-agent.pl) run by a perl on this
 * host with `--root` (local-agent.ts), the program a holder runs over ssh.
 * A machine whose directory is missing does not resolve.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { agentOperations } from './agent-operations.js';
import { openRenameChannel } from './agent-channel.js';
import { localAgent } from './local-agent.js';
import { openLocalStream } from './machine-stream.js';
import {
  abortedError,
  TransportError,
  type CommandRequest,
  type CommandResult,
  type Transport,
} from '../mesh/transport.js';

export function localTransport(machine: string, root: string): Transport {
  const top = path.resolve(root);
  // The machine is "reachable" while its directory is there and writable: the drill unplugs a
  // machine by taking it away. Checked before each call, as ssh finds a machine gone.
  const reachable = async () => {
    let isDir: boolean;
    try {
      isDir = (await fs.stat(top)).isDirectory();
    } catch {
      throw new TransportError(machine, `its directory ${root} does not exist`, true);
    }
    if (!isDir) throw new TransportError(machine, `${root} is not a directory`);
    try {
      await fs.access(top, constants.W_OK);
    } catch {
      throw new TransportError(machine, `its directory ${root} is not writable`);
    }
  };
  const agent = localAgent(machine, top);
  const ops = agentOperations({
    ...agent,
    call: async (what, args, signal, input) => {
      if (signal.aborted) throw abortedError(machine, what, signal);
      await reachable();
      return agent.call(what, args, signal, input);
    },
  });
  const checked =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await reachable();
      return fn(...args);
    };
  return {
    machine,
    ...ops,
    lock: checked(ops.lock),
    watchTexts: checked(ops.watchTexts!),
    // The agent's rename channel on this host, as over ssh: renames timed by this clock, and
    // the relay (a TCP connection from "the machine" is one from this host).
    openChannel: async (signal) => {
      if (signal.aborted) throw abortedError(machine, 'opening', signal);
      await reachable();
      return openRenameChannel(machine, (onLine) => agent.session(['channel'], { onLine, signal }), signal);
    },
    openStream: async (_host, _port, signal) => {
      await reachable();
      return openLocalStream(signal);
    },
  };
}

/**
 * app-truth: a reload on the local transport, run by the agent's `run` on this host in the
 * directory that plays the machine's root (BATON_ROOT names it), bounded as on any holder.
 */
export async function runLocalCommand(
  machine: string,
  root: string,
  request: CommandRequest,
  signal: AbortSignal,
): Promise<CommandResult> {
  return agentOperations(localAgent(machine, path.resolve(root))).runCommand!(request, signal);
}
