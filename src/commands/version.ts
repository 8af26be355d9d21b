/**
 * `baton version [--json]` (docs/cli.md): which baton this is — the package version, the
 * commit the build was made from (dist/build-meta.json, null when it was not built from a git
 * checkout) and the Node running it. `--version` prints the version alone.
 */
import { readFileSync } from 'node:fs';
import { jsonForTerminal } from '../outside-text.js';
import { JSON_FORMATS } from '../app/error-json.js';
import { action, type CliContext } from './context.js';
import { printsJsonOnError } from './json-errors.js';
import type { Command } from 'commander';

export interface BuildInfo {
  readonly version: string;
  /** The commit `npm run build` was made from, or null. */
  readonly commit: string | null;
}

/**
 * Reads package.json and dist/build-meta.json under `root` (the package's folder). A build
 * without a commit, or no build at all (the sources under tsx), gives a null commit.
 */
export function readBuildInfo(root: URL): BuildInfo {
  const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string };
  let commit: string | null = null;
  try {
    const meta = JSON.parse(readFileSync(new URL('dist/build-meta.json', root), 'utf8')) as {
      commit?: unknown;
    };
    if (typeof meta.commit === 'string') commit = meta.commit;
  } catch {
    commit = null; // not built: the sources run under tsx
  }
  return { version, commit };
}

export function registerVersion(program: Command, ctx: CliContext, root: URL): void {
  program
    .command('version')
    .description('the version, the commit it was built from and the Node running it')
    .option('--json', 'print one JSON object: format, version, commit, node')
    .action(
      action(
        ctx,
        printsJsonOnError(ctx, 'version', (options: { readonly json?: boolean }) => {
          const { version, commit } = readBuildInfo(root);
          ctx.stdout.write(
            options.json
              ? `${jsonForTerminal({ format: JSON_FORMATS.version, version, commit, node: process.version }, 2)}\n`
              : `baton ${version}${commit === null ? '' : ` (commit ${commit.slice(0, 12)})`} on Node ${process.version}\n`,
          );
        }),
      ),
    );
}
