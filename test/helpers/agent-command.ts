/**
 * Reads back an agent command as src/transport/remote-scripts.ts `agentCommand` writes it — for
 * the tests that stand between baton and ssh (a starter, a shim) and must say what a session was
 * asked: its mode, and for `serve` the requests its command carries (hex, after its idle seconds:
 * docs/agent-protocol.md, "Mode serve"), which never pass through its stdin.
 */

export interface AgentCommandParts {
  /** The agent's mode (`serve`, `files`, `lock`…), or `?` when the command is not an agent's. */
  readonly mode: string;
  /** The requests the command carries, each whole (`files <op> <n> <k>` and its lines, or `hello`). */
  readonly carried: readonly string[];
  /** The same command carrying none of them: the session starts, and they never reach the machine. */
  readonly withoutCarried: string;
}

export function agentCommandParts(command: string): AgentCommandParts {
  const found = /'--' '[A-Za-z0-9+/=]*' '([^']*)'((?: '[^']*')*) 3<&0/.exec(command);
  if (!found) return { mode: '?', carried: [], withoutCarried: command };
  const mode = found[1]!;
  const words = [...found[2]!.matchAll(/ '([^']*)'/g)].map((m) => m[1]!);
  const hex = mode === 'serve' ? words[1] : undefined;
  if (hex === undefined || !/^(?:[0-9a-f]{2})+$/.test(hex))
    return { mode, carried: [], withoutCarried: command };
  return {
    mode,
    carried: requestsIn(Buffer.from(hex, 'hex').toString('utf8')),
    withoutCarried: command.replace(` '${hex}' 3<&0`, ' 3<&0'),
  };
}

/** Requests one after another, as `serve` reads them, each whole. */
export function requestsIn(text: string): string[] {
  const lines = text.split('\n');
  const requests: string[] = [];
  for (let i = 0; i < lines.length && lines[i] !== '';) {
    const head = /^files \S+ (\d+) (\d+)/.exec(lines[i]!);
    const count = head ? 1 + Number(head[1]) + Number(head[2]) : 1;
    requests.push(`${lines.slice(i, i + count).join('\n')}\n`);
    i += count;
  }
  return requests;
}
