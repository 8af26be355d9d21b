import type { Command } from 'commander';
import { BatonError, EXIT_OK, exitCodeOf, isBatonError } from '../errors.js';
import { loadConfig, type GlobalFlags, type ResolvedConfig } from '../config/config.js';

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
}

export type Register = (program: Command, ctx: CliContext) => void;

export function makeContext(program: Command): CliContext {
  let cached: ResolvedConfig | undefined;
  return {
    config() {
      cached ??= loadConfig(program.opts<GlobalFlags>());
      return cached;
    },
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  };
}

/**
 * Wraps a command handler: its resolved number (or undefined = 0) becomes the exit code, and
 * anything thrown is printed as the three-part message — never a stack trace — with the exit
 * code of DESIGN.md §8.
 */
export function action<A extends unknown[]>(
  ctx: CliContext,
  handler: (...args: A) => Promise<number | void> | number | void,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const code = await handler(...args);
      process.exitCode = code ?? EXIT_OK;
    } catch (error) {
      printError(ctx.stderr, error);
      process.exitCode = exitCodeOf(error);
    }
  };
}

export function printError(stream: NodeJS.WritableStream, error: unknown): void {
  if (isBatonError(error)) {
    stream.write(`baton: ${error.lines().join('\n  ')}\n`);
    return;
  }
  const text = error instanceof Error ? error.message : String(error);
  stream.write(`baton: unexpected error: ${text}\n  Next: this is a bug in baton; the message above says where it happened.\n`);
}

/** A usage error for a command whose arguments do not fit (exit 2). */
export function usageError(what: string, next?: string): BatonError {
  return new BatonError('usage', { what, ...(next ? { next } : {}) });
}
