/**
 * The ONE script baton hands a holder's login shell: the bootstrap that finds perl and feeds it
 * the agent (agent/baton-agent.pl, docs/agent-protocol.md). Everything the machine does is a
 * mode of the agent, named by the arguments; this script only moves the session's stdin to
 * fd 3 (perl's own stdin is the program, the here-document) and execs perl. Secrets arrive on
 * that stdin, one per line, so no process on the holder ever carries one in argv.
 *
 * A machine without perl is answered `@baton no-perl` on stdout (resolve reads it: the holder is
 * unresolved at plan time) and told so by name on stderr with exit 3 (any other operation
 * fails with those words, never with the shell's "not found").
 */

import { agentSource } from './agent-program.js';
import { NO_PERL } from './agent-protocol.js';

export { ANSWER_PREFIX } from './agent-protocol.js';

/** The bootstrap; its arguments (`"$@"`) are the agent's: the mode, then the mode's own. */
export function agentBootstrap(): string {
  return `command -v perl >/dev/null 2>&1 || { echo '@baton no-perl'; echo '${NO_PERL}' >&2; exit 3; }
exec 3<&0
exec perl - "$@" <<'BATON_PERL'
${agentSource()}
BATON_PERL`;
}

/** One argument for the remote login shell, single-quoted. */
export function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** What ssh hands the remote login shell to run the agent with `args` (`sh -c '<bootstrap>' baton-agent <mode> …`). */
export function agentCommand(args: readonly string[]): string {
  return ['sh', '-c', shQuote(agentBootstrap()), 'baton-agent', ...args.map(shQuote)].join(' ');
}
