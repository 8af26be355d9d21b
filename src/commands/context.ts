import type { Command } from 'commander';
import { BatonError, EXIT_OK, exitCodeOf, isBatonError } from '../errors.js';
import { DEPLOYMENT_ID, loadConfig, type GlobalFlags, type ResolvedConfig } from '../config/config.js';
import { suggester, type MeshFlagsGiven, type Suggester } from '../suggest-command.js';
import { hasTerminal } from './mount-view.js';
import { fileSystemError } from '../fs/file-system-error.js';

/**
 * What every command gets from the composition root. Commands import heavy modules (ink,
 * react, the AWS SDK, pg, embedded servers) lazily inside their action, so `baton status
 * --json` does not pay for what it does not use.
 */
export interface CliContext {
  /** The resolved config (flags > file); throws a 'config'/'usage' BatonError when invalid. */
  config(): ResolvedConfig;
  readonly stdout: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
  readonly env: NodeJS.ProcessEnv;
  /**
   * The builder of every command this run suggests: the global flags given (and --inventory,
   * when the command took one), `failover` only with a terminal.
   */
  suggester(inventory?: string): Suggester;
  /** The mesh flags the running command was given on its command line (action() notes them). */
  noteMeshFlags?(given: MeshFlagsGiven | undefined): void;
}

export type Register = (program: Command, ctx: CliContext) => void;

export function makeContext(program: Command): CliContext {
  let cached: ResolvedConfig | undefined;
  let meshGiven: MeshFlagsGiven | undefined;
  return {
    noteMeshFlags(given) {
      meshGiven = given;
    },
    config() {
      cached ??= loadConfig(program.opts<GlobalFlags>());
      return cached;
    },
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    suggester(inventory?: string) {
      const flags = program.opts<GlobalFlags>();
      // A malformed --deployment is refused by loadConfig; a Next must not repeat it.
      const refused =
        flags.deployment !== undefined && !DEPLOYMENT_ID.test(flags.deployment)
          ? (['deployment'] as const)
          : [];
      return suggester({ ...flags, inventory, refused, mesh: meshGiven }, hasTerminal(process));
    },
  };
}

/**
 * Wraps a command handler: its resolved number (or undefined = 0) becomes the exit code, and
 * anything thrown is printed as the three-part message — never a stack trace — with the exit
 * code of docs/cli.md.
 */
export function action<A extends unknown[]>(
  ctx: CliContext,
  handler: (...args: A) => Promise<number | void> | number | void,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    ctx.noteMeshFlags?.(meshFlagsOf(args));
    try {
      const code = await handler(...args);
      process.exitCode = code ?? EXIT_OK;
    } catch (thrown) {
      // A file-system failure is said with its code, path and way out, never as a bug.
      const error = fileSystemError(thrown) ?? thrown;
      printError(ctx.stderr, error, ctx.suggester(inventoryOf(args)));
      process.exitCode = exitCodeOf(error);
    }
  };
}

/**
 * The --timeout, --concurrency and --wait the operator typed (commander passes the command
 * last; its value source says typed or default): a default is not carried into a suggestion.
 */
function meshFlagsOf(args: readonly unknown[]): MeshFlagsGiven | undefined {
  const command = args.at(-1) as Partial<Command> | undefined;
  if (typeof command?.getOptionValueSource !== 'function' || typeof command.opts !== 'function')
    return undefined;
  const opts = command.opts();
  const given: Record<string, string> = {};
  for (const name of ['timeout', 'concurrency', 'wait'] as const) {
    const value = opts[name] as unknown;
    // Commander keeps a typed value as the string typed (these options have no parser).
    if (command.getOptionValueSource(name) === 'cli' && typeof value === 'string') given[name] = value;
  }
  return Object.keys(given).length > 0 ? given : undefined;
}

/** The --inventory a command's own options carry (commander passes them as an argument). */
function inventoryOf(args: readonly unknown[]): string | undefined {
  for (const arg of args) {
    const value = (arg as { inventory?: unknown } | null)?.inventory;
    if (typeof arg === 'object' && typeof value === 'string') return value;
  }
  return undefined;
}

/**
 * Prints the three parts. A next step given as structure (`said`) is rendered here, once, with
 * the global flags; a next step given as text is printed as it stands.
 */
export function printError(stream: NodeJS.WritableStream, error: unknown, suggest?: Suggester): void {
  if (isBatonError(error)) {
    const lines = error.lines(suggest);
    stream.write(`baton: ${lines.join('\n  ')}\n`);
    return;
  }
  const text = error instanceof Error ? error.message : String(error);
  stream.write(
    `baton: unexpected error: ${text}\n  Next: this is a bug in baton; the message above says where it happened.\n`,
  );
}

/** A usage error for a command whose arguments do not fit (exit 2). */
export function usageError(what: string, next?: string): BatonError {
  return new BatonError('usage', { what, ...(next ? { next } : {}) });
}
