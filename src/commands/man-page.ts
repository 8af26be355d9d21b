/**
 * baton(1), made by `npm run build` into dist/man/baton.1 (the package's `man` entry) from the
 * command tree (cli-tree.ts): the same commands, flags and descriptions as `--help`, never a
 * second copy written by hand.
 */
import { everyCommand, type CliCommand } from './cli-tree.js';

/** Text for roff: a backslash doubled, a leading dot or quote escaped, dashes as minus signs. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .replace(/^([.'])/gm, '\\&$1');
}

function flagLines(flags: CliCommand['flags']): string[] {
  return flags.flatMap((flag) => ['.TP', `.B ${roff(flag.flags)}`, roff(flag.description)]);
}

export function manPage(
  tree: CliCommand,
  info: { readonly version: string; readonly exitCodes: readonly { code: number; meaning: string }[] },
): string {
  const commands = everyCommand(tree).filter(
    (command) => command !== tree && command.name !== 'help' && command.commands.length === 0,
  );
  return [
    `.TH BATON 1 "" "baton ${roff(info.version)}" "User Commands"`,
    '.SH NAME',
    `baton \\- ${roff(tree.description)}`,
    '.SH SYNOPSIS',
    '.B baton',
    '[\\fIglobal options\\fR] \\fIcommand\\fR [\\fIoptions\\fR]',
    '.SH DESCRIPTION',
    roff(tree.description),
    'Every command, its flags and what it promises a script are in',
    '.BR "baton help " \\fIcommand\\fR',
    'and in the docs/ pages of the project (docs/cli.md: the CLI contract).',
    '.SH GLOBAL OPTIONS',
    ...flagLines(tree.flags),
    '.SH COMMANDS',
    ...commands.flatMap((command) => [
      '.SS',
      `.B ${roff(command.usage)}`,
      '.PP',
      roff(command.description),
      ...flagLines(command.flags.filter((flag) => !flag.names.includes('--help'))),
    ]),
    '.SH EXIT STATUS',
    ...info.exitCodes.flatMap(({ code, meaning }) => ['.TP', `.B ${code}`, roff(meaning)]),
    '.SH ENVIRONMENT',
    '.TP',
    '.B BATON_CONFIG',
    'the config file when \\-\\-config is not given',
    '.TP',
    '.B NO_COLOR',
    'no colour (also \\-\\-no\\-color, TERM=dumb)',
    '.SH SEE ALSO',
    '.BR "baton completion " bash | zsh | fish',
    '',
  ].join('\n');
}
