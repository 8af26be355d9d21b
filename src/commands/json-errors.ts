/**
 * Every `--json` command prints exactly ONE JSON object on every exit (docs/cli.md,
 * "JSON output"): a script reading stdout sees why a run failed, with the exit code it ends
 * with, instead of an empty stream. Two ways a run fails before its report exists: its handler throws
 * (a config or store error, a bad value), or commander refuses the arguments (an unknown flag).
 */
import type { Command, CommanderError } from 'commander';
import { asBatonError, BatonError } from '../errors.js';
import { fileSystemError } from '../fs/file-system-error.js';
import { jsonForTerminal } from '../outside-text.js';
import { nextStep } from '../next-step.js';
import type { CliContext } from './context.js';

/** Whether a command's arguments (commander passes its options as one of them) asked for JSON. */
function askedForJson(args: readonly unknown[]): boolean {
  return args.some((arg) => typeof arg === 'object' && (arg as { json?: unknown } | null)?.json === true);
}

async function writeFailure(
  stdout: NodeJS.WritableStream,
  command: string,
  error: BatonError,
): Promise<void> {
  const { failedCommandJson, jsonFormatOf } = await import('../app/error-json.js');
  const format = jsonFormatOf(command);
  const object = { ...(format === undefined ? {} : { format }), ...failedCommandJson(error) };
  stdout.write(`${jsonForTerminal(object, 2)}\n`);
}

/**
 * Wraps a `--json` command's handler (inside `action`): what it throws is also printed as the
 * one JSON object when the run asked for JSON, then thrown on, so stderr carries the three-part
 * message and the exit code stays the error's.
 */
export function printsJsonOnError<A extends unknown[]>(
  ctx: CliContext,
  command: string,
  handler: (...args: A) => Promise<number | void> | number | void,
): (...args: A) => Promise<number | void> {
  return async (...args: A) => {
    try {
      return await handler(...args);
    } catch (thrown) {
      if (!askedForJson(args)) throw thrown;
      const error = asBatonError(fileSystemError(thrown) ?? thrown, { what: `baton ${command} failed` });
      await writeFailure(ctx.stdout, command, error);
      throw error;
    }
  };
}

/** The deepest command `args` name (`mesh status`), skipping the values of the global flags. */
export function commandOf(program: Command, args: readonly string[]): Command {
  const takesValue = new Set(
    program.options.filter((option) => option.required || option.optional).map((option) => option.long),
  );
  let command = program;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (takesValue.has(arg)) i += 1;
    else if (!arg.startsWith('-')) {
      const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
      if (sub === undefined) break;
      command = sub;
    }
  }
  return command;
}

/** `mesh status` for the command `mesh status`: its words under the program. */
export function commandWords(command: Command): string {
  const words: string[] = [];
  for (let c = command; c.parent !== null; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

/**
 * Commander refused the arguments of a run that asked a `--json` command for JSON: the refusal
 * as the one object (usage, exit 2). Commander wrote its own line to stderr already.
 */
export async function printUsageErrorAsJson(
  program: Command,
  args: readonly string[],
  refusal: CommanderError,
  stdout: NodeJS.WritableStream,
): Promise<void> {
  if (!args.includes('--json')) return;
  const command = commandOf(program, args);
  if (!command.options.some((option) => option.long === '--json')) return;
  const words = commandWords(command);
  const error = new BatonError('usage', {
    what: refusal.message.replace(/^error: /, ''),
    next: ['See ', nextStep(`${words} --help`), ' for its flags and arguments.'],
  });
  await writeFailure(stdout, words, error);
}
