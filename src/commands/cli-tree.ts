/**
 * The command tree as data, read from commander's definitions: what `baton completion` and the
 * man page (dist/man/baton.1) are made from, so neither can list a command or flag the CLI does
 * not have, nor miss one it gained.
 */
import type { Command } from 'commander';

export interface CliFlag {
  /** `--json`, and `-V` where there is a short form. */
  readonly names: readonly string[];
  /** As help prints it: `--interval <seconds>`. */
  readonly flags: string;
  readonly description: string;
  readonly takesValue: boolean;
}

export interface CliCommand {
  /** Its words under `baton`: `mesh status` (empty for baton itself). */
  readonly words: string;
  readonly name: string;
  /** `mesh status [options]`, as help prints it. */
  readonly usage: string;
  readonly description: string;
  readonly flags: readonly CliFlag[];
  readonly commands: readonly CliCommand[];
}

/** What help shows of `command` and everything under it (the help command commander adds included). */
export function cliTree(command: Command, words = ''): CliCommand {
  const help = command.createHelp();
  return {
    words,
    name: command.name(),
    usage: help.commandUsage(command),
    description: command.description(),
    flags: help.visibleOptions(command).map((option) => ({
      names: [option.short, option.long].filter((name): name is string => name !== undefined),
      flags: option.flags,
      description: option.description,
      takesValue: option.required || option.optional,
    })),
    commands: help
      .visibleCommands(command)
      .map((sub) => cliTree(sub, words === '' ? sub.name() : `${words} ${sub.name()}`)),
  };
}

/** Every command of the tree, depth first, the root first. */
export function everyCommand(tree: CliCommand): CliCommand[] {
  return [tree, ...tree.commands.flatMap(everyCommand)];
}
