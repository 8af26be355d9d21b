/**
 * The ONE command baton hands a holder's login shell: a line that finds perl and starts the agent
 * (agent/baton-agent.pl, docs/agent-protocol.md). Everything the machine does is a mode of the
 * agent, named by the arguments; this line only execs perl with the loader and the program's
 * core (what a read needs), the session's stdin also on fd 3. The program's whole text comes first
 * on that stdin (agentInput), its length fixed in the loader, then whatever the session carries:
 * secrets, one per line, and requests, so no process on the holder ever carries one in argv.
 *
 * A machine without perl is answered `@baton no-perl` on stdout (resolve reads it: the holder is
 * unresolved at plan time) and told so by name on stderr with exit 3 (any other operation
 * fails with those words, never with the shell's "not found").
 */

import { agentSource } from './agent-program.js';
import { NO_PERL } from './agent-protocol.js';

export { ANSWER_PREFIX } from './agent-protocol.js';

/**
 * The `perl -e` program that starts the agent. Its first argument is the program as the command
 * carries it (agentCore: base64, decoded here with perl's own `unpack "u"`, perl-base has no
 * MIME::Base64), which it compiles without its parts between a `#>>> <name>:` line and its
 * `#<<< <name>`, kept as blank lines so every line number stays the file's; the program's
 * Baton::later compiles a part in a mode that uses it. The whole text follows on stdin,
 * $Baton::WHOLE bytes, read by the program (Baton::whole) before any input: a part the command
 * did not carry comes from there. (The markers are found from their line breaks, not with `^`
 * under /m: a search for the literal text is ~0.35 ms cheaper, a tenth of a start.) The loader
 * has no single quote: agentCommand single-quotes it for the login shell.
 */
export function agentLoader(): string {
  const bytes = Buffer.byteLength(agentSource(), 'utf8');
  return [
    `my $p = shift @ARGV; $p =~ tr|A-Za-z0-9+/||cd; $p =~ tr|A-Za-z0-9+/| -_|;`,
    `my $u = ""; $u .= chr(32 + length($1) * 3 / 4) . $1 . "\\n" while $p =~ /(.{1,60})/gs;`,
    `$p = unpack("u", $u); $Baton::TEXT = $p; $Baton::WHOLE = ${bytes};`,
    `$p =~ s/(\\n#>>> .*?\\n#<<< [^\\n]*)/(my $l = $1) =~ tr|\\n||cd; $l/gse;`,
    `eval $p; die $@ if $@;`,
  ].join(' ');
}

/**
 * What a session's stdin carries: the program's whole text first (the agent reads exactly its
 * length before any input), then the session's own input, if any.
 */
export function agentInput(input = ''): string {
  return agentSource() + input;
}

/** The parts of the agent a read never compiles (a digest or a text read, a hello). */
const PARTS_LEFT_TO_STDIN = ['writes', 'modes'];

let core: { readonly of: string; readonly base64: string } | undefined;

/**
 * The agent as its command carries it, base64 (no character any login shell reads): its text
 * without the parts a read never needs and without its comments, those lines kept blank so every
 * line number stays the file's. The login shell scans the command at every start (bash: ~0.5 ms
 * per 20 KB): it carries a quarter of the program, whose whole text follows on stdin.
 */
export function agentCore(): string {
  const text = agentSource();
  if (core?.of !== text) {
    const without = PARTS_LEFT_TO_STDIN.reduce(
      (left, name) =>
        left.replace(new RegExp(`\\n#>>> ${name}:[\\s\\S]*?\\n#<<< ${name}(?=\\n|$)`), (part) =>
          part.replace(/[^\n]/g, ''),
        ),
      text,
    );
    // Comment lines go blank too (never a part's marker): 40% of what is left, scanned for nothing.
    const code = without.replace(/^[ \t]*#(?!>>> |<<< ).*$/gm, '');
    core = { of: text, base64: Buffer.from(code, 'utf8').toString('base64') };
  }
  return core.base64;
}

/** perl's arguments to run the agent with `args`: the loader, then the program's core. */
export function agentPerlArgs(args: readonly string[]): string[] {
  return ['-e', agentLoader(), '--', agentCore(), ...args];
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
    `command -v perl >/dev/null 2>&1 && exec perl`,
    ...agentPerlArgs(args).map(shQuote),
    `3<&0; echo '@baton no-perl'; echo '${NO_PERL}' >&2; exit 3`,
  ].join(' ');
}
