/**
 * The shell completion scripts `baton completion bash|zsh|fish` prints, made from the command
 * tree (cli-tree.ts): at each position the subcommands and flags of the command typed so far
 * (the global flags everywhere, as commander takes them after a command too), files after a
 * flag that takes a value, and the deployment ids known when the script was made after
 * `--deployment`.
 */
import { everyCommand, type CliCommand } from './cli-tree.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** A word in single quotes for sh-like shells (bash, zsh). */
const shQuote = (word: string) => `'${word.replace(/'/g, `'\\''`)}'`;
/** A word in single quotes for fish, where only \ and ' are escaped. */
const fishQuote = (word: string) => `'${word.replace(/[\\']/g, (c) => `\\${c}`)}'`;

/** The words offered after `command`: its subcommands, then its flags and the global ones. */
function candidates(tree: CliCommand, command: CliCommand): string[] {
  const flags = command === tree ? tree.flags : [...command.flags, ...tree.flags];
  return [...new Set([...command.commands.map((sub) => sub.name), ...flags.flatMap((flag) => flag.names)])];
}

function valueFlags(tree: CliCommand): string[] {
  const names = everyCommand(tree).flatMap((command) =>
    command.flags.filter((flag) => flag.takesValue).flatMap((flag) => flag.names),
  );
  return [...new Set(names)].filter((name) => name !== '--deployment').sort();
}

function bash(tree: CliCommand, deployments: readonly string[]): string {
  const paths = everyCommand(tree).filter((command) => command !== tree);
  return [
    '# baton completion for bash, as baton completion bash prints it: source it from ~/.bashrc, or write it to',
    '# /etc/bash_completion.d/baton. Made from the command definitions of this baton.',
    '_baton_complete() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" path="" next i',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    next="${path:+$path }${COMP_WORDS[i]}"',
    '    case "$next" in',
    `      ${paths.map((command) => shQuote(command.words)).join('|')}) path="$next" ;;`,
    '    esac',
    '  done',
    '  case "$prev" in',
    `    --deployment) COMPREPLY=($(compgen -W ${shQuote(deployments.join(' '))} -- "$cur")); return ;;`,
    // Nothing offered: `-o default` completes a file name, which most values are.
    `    ${valueFlags(tree).join('|')}) COMPREPLY=(); return ;;`,
    '  esac',
    '  local words',
    '  case "$path" in',
    ...everyCommand(tree).map(
      (command) => `    ${shQuote(command.words)}) words=${shQuote(candidates(tree, command).join(' '))} ;;`,
    ),
    '  esac',
    '  COMPREPLY=($(compgen -W "$words" -- "$cur"))',
    '}',
    'complete -o default -F _baton_complete baton',
    '',
  ].join('\n');
}

/** zsh runs the bash function through its bashcompinit layer: one script to keep right. */
function zsh(tree: CliCommand, deployments: readonly string[]): string {
  return [
    '#compdef baton',
    '# baton completion for zsh, as baton completion zsh prints it: source it from ~/.zshrc.',
    'autoload -U +X compinit && compinit',
    'autoload -U +X bashcompinit && bashcompinit',
    bash(tree, deployments),
  ].join('\n');
}

function fish(tree: CliCommand, deployments: readonly string[]): string {
  const paths = everyCommand(tree).filter((command) => command !== tree);
  const lines = [
    '# baton completion for fish, as baton completion fish prints it: write it to',
    '# ~/.config/fish/completions/baton.fish. Made from the command definitions of this baton.',
    'function __baton_path',
    '    set -l path',
    '    for word in (commandline -opc)[2..-1]',
    '        switch (string join " " $path $word)',
    `            case ${paths.map((command) => fishQuote(command.words)).join(' ')}`,
    '                set path $path $word',
    '        end',
    '    end',
    '    echo "$path"',
    'end',
    'function __baton_at',
    '    set -l here (__baton_path)',
    '    test "$here" = "$argv[1]"',
    'end',
    'complete -c baton -f',
  ];
  for (const command of everyCommand(tree)) {
    const at = `-n ${fishQuote(`__baton_at ${fishQuote(command.words)}`)}`;
    for (const sub of command.commands)
      lines.push(`complete -c baton ${at} -a ${fishQuote(sub.name)} -d ${fishQuote(sub.description)}`);
    for (const flag of command === tree ? tree.flags : [...command.flags, ...tree.flags]) {
      const names = flag.names
        .map((name) => (name.startsWith('--') ? `-l ${name.slice(2)}` : `-s ${name.slice(1)}`))
        .join(' ');
      const value =
        flag.names.includes('--deployment') && deployments.length > 0
          ? ` -x -a ${fishQuote(deployments.join(' '))}`
          : flag.takesValue
            ? ' -r -F'
            : '';
      lines.push(`complete -c baton ${at} ${names}${value} -d ${fishQuote(flag.description)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The completion script for `shell`, offering `deployments` after --deployment. */
export function completionScript(shell: Shell, tree: CliCommand, deployments: readonly string[]): string {
  return { bash, zsh, fish }[shell](tree, deployments);
}
