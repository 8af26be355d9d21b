/**
 * `baton sync [--first-controller | --force | --push | --replace-unreadable] [--unseal]
 * [--confirm VALUE] [--yes]`: the decision table walked without a TUI. The decision is one
 * operation, src/operations/sync.ts; this file parses the flags, supplies the two gates
 * (--confirm or a terminal, --yes or the typed deployment id) and prints the one sentence.
 */
import { nextStep } from '../next-step.js';
import type { Command } from 'commander';
import { EXIT_OK } from '../errors.js';
import type { ShareContext } from '../share/share-context.js';
import type { SyncActionFlags } from '../share/sync-flags.js';
import { action, type CliContext, type Register } from './context.js';

interface SyncFlags extends SyncActionFlags {
  readonly yes?: boolean;
  readonly confirm?: readonly string[];
}

export const registerSync: Register = (program: Command, ctx: CliContext) => {
  program
    .command('sync')
    .description('adopt, publish or refuse without a TUI (the decision table, non-interactively)')
    .option(
      '--first-controller',
      'only when nothing is published and this host holds no authority: mint one, publish it create-only, install it (asks for the deployment id typed; --yes in scripts)',
    )
    .option(
      '--push',
      "publish this host's authority over the published one: plainly when this host is ahead of it (it rotated); bound with --confirm <PUBLISHED 8> when neither is proved newer; never over one proved to have replaced this host's",
    )
    .option(
      '--force',
      'only when sync refuses: set the local authority aside (ca.superseded-<stamp>, never deleted) and adopt the published one (--confirm <LOCAL 8>)',
    )
    .option(
      '--replace-unreadable',
      "only when the published document cannot be used: replace it with this host's authority, if-match on the bad object (--confirm <ETAG 8>)",
    )
    .option(
      '--unseal',
      'with --push or --replace-unreadable: replace a SEALED document in the clear, on purpose (this host has no seal key; --confirm unseal)',
    )
    .option(
      '--confirm <value>',
      'the value an irreversible step is bound to, read from status: LOCAL 8 for --force, PUBLISHED 8 for a push over it, ETAG 8 for --replace-unreadable, the word unseal for --unseal (repeat it for two steps)',
      collect,
      [] as string[],
    )
    .option(
      '--yes',
      'confirm --first-controller without typing (required when stdin is not a terminal); it confirms nothing else',
    )
    .action(action(ctx, (flags: SyncFlags) => runSync(ctx, flags)));
};

function collect(value: string, previous: readonly string[]): string[] {
  return [...previous, value];
}

async function runSync(ctx: CliContext, flags: SyncFlags): Promise<number> {
  const [{ syncOperation }, { openShareContext }, { confirmBound, confirmMint }] = await Promise.all([
    import('../operations/sync.js'),
    import('../share/share-context.js'),
    import('./typed-confirm.js'),
  ]);
  const { conflictingFlags } = await import('../share/sync-flags.js');
  // Two flags asking for different things are refused before anything is read (the store included).
  const conflict = conflictingFlags(flags);
  if (conflict) throw conflict;
  const share: ShareContext = { ...(await openShareContext(ctx.config())), suggester: ctx.suggester() };
  const { sentence } = await syncOperation(share, flags, {
    confirmBound: (bindings, explain) =>
      confirmBound(ctx, bindings, flags.confirm ?? [], share.store.location, explain),
    confirmMint: async (note) =>
      confirmMint(ctx, {
        deployment: share.deployment,
        location: share.store.location,
        yes: Boolean(flags.yes),
        command: nextStep('sync --first-controller'),
        note: await note(),
      }),
  });
  ctx.stdout.write(`${sentence}\n`);
  return EXIT_OK;
}
