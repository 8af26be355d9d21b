/**
 * The ONE command baton hands a holder's login shell: a line that finds perl and starts the agent
 * (agent/baton-agent.pl, docs/agent-protocol.md). Everything the machine does is a mode of the
 * agent, named by the arguments; this line only execs perl with the loader, the session's stdin
 * also on fd 3. The program itself comes first on that stdin (agentInput), its length fixed in
 * the loader, then whatever the session carries: secrets, one per line, and requests, so no
 * process on the holder ever carries one in argv.
 *
 * A machine without perl is answered `@baton no-perl` on stdout (resolve reads it: the holder is
 * unresolved at plan time) and told so by name on stderr with exit 3 (any other operation
 * fails with those words, never with the shell's "not found").
 */

import { agentSource } from './agent-program.js';
import { NO_PERL } from './agent-protocol.js';

export { ANSWER_PREFIX } from './agent-protocol.js';

/**
 * The `perl -e` program that reads the agent from stdin and runs it. It reads exactly the
 * program's bytes (sysread, unbuffered: what follows on the same pipe is the agent's input on
 * fd 3; binmode first, as a holder's PERL_UNICODE would make stdin a :utf8 handle, which
 * sysread refuses) and refuses a program that arrived short rather than run part of it. It
 * compiles the program without its parts between a `#>>> <name>:` line and its `#<<< <name>`,
 * kept as blank lines so every line number stays the file's; the program's Baton::later
 * compiles a part in a mode that uses it. (The markers are found from their line breaks, not
 * with `^` under /m: a search for the literal text is ~0.35 ms cheaper, a tenth of a start.)
 * The loader has no single quote: agentCommand single-quotes it for the login shell.
 */
export function agentLoader(): string {
  const bytes = Buffer.byteLength(agentSource(), 'utf8');
  return [
    `binmode STDIN; my ($n, $p) = (${bytes}, "");`,
    `while (length $p < $n) { sysread(STDIN, $p, $n - length $p, length $p) or do { print STDERR "\\@baton err baton-agent: the program arrived short\\n"; exit 3 } }`,
    `$Baton::TEXT = $p;`,
    `$p =~ s/(\\n#>>> .*?\\n#<<< [^\\n]*)/(my $l = $1) =~ tr|\\n||cd; $l/gse;`,
    `eval $p; die $@ if $@;`,
  ].join(' ');
}

/**
 * What a session's stdin carries: the program first (the loader reads exactly its length),
 * then the session's own input, if any.
 */
export function agentInput(input = ''): string {
  return agentSource() + input;
}

/** One argument for the remote login shell, single-quoted. */
export function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * What ssh hands the holder's login shell to run the agent with `args`. One line that the login
 * shell runs itself (sh, dash, bash, ksh, zsh and fish alike: `command -v`, `&&`, `exec`, `3<&0`
 * and single quotes mean the same in each), so a start costs no second shell: a `sh -c` around
 * it was ~0.9 ms of holder CPU at every start, a fifth of a digest read's over `cat`. `exec`
 * replaces the shell only when perl is there; otherwise the words after it answer.
 */
export function agentCommand(args: readonly string[]): string {
  return [
    `command -v perl >/dev/null 2>&1 && exec perl -e '${agentLoader()}' --`,
    ...args.map(shQuote),
    `3<&0; echo '@baton no-perl'; echo '${NO_PERL}' >&2; exit 3`,
  ].join(' ');
}
