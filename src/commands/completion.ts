/**
 * `baton completion bash|zsh|fish` (docs/cli.md): prints the shell's completion script, made
 * from the whole command tree (`buildTree`: a run naming `completion` registers only this
 * command, src/program.ts). The deployment id of the config, when one resolves, is offered after
 * `--deployment`; a run without a config still gets the commands and flags.
 */
import type { Command } from 'commander';
import { action, usageError, type CliContext } from './context.js';
import { cliTree, type CliCommand } from './cli-tree.js';
import { completionScript, SHELLS, type Shell } from './completion-scripts.js';

export function registerCompletion(program: Command, ctx: CliContext, buildTree: () => Command): void {
  program
    .command('completion')
    .description(
      `print a shell completion script (${SHELLS.join(', ')}): e.g. source <(baton completion bash)`,
    )
    .argument('<shell>', SHELLS.join(' | '))
    .action(
      action(ctx, (shell: string) => {
        if (!(SHELLS as readonly string[]).includes(shell))
          throw usageError(
            `"${shell}" is not a shell baton completes.`,
            `Pass one of ${SHELLS.join(', ')}: e.g. baton completion bash.`,
          );
        const tree: CliCommand = cliTree(buildTree());
        ctx.stdout.write(completionScript(shell as Shell, tree, configuredDeployments(ctx)));
      }),
    );
}

/** The deployment the config names, if it resolves; completion never fails for want of one. */
function configuredDeployments(ctx: CliContext): string[] {
  try {
    const { deployment } = ctx.config();
    return deployment === undefined ? [] : [deployment];
  } catch {
    return []; // no usable config: the commands and flags still complete
  }
}
