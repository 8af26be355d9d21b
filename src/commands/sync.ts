/**
 * `baton sync [--first-controller | --force | --push | --replace-unreadable] [--unseal]
 * [--confirm VALUE] [--yes]`: the decision table walked without a TUI. The rules live in
 * src/share: the actions in actions.ts, which flag applies to which verdict in sync-flags.ts,
 * what each irreversible step is bound to in confirm-binding.ts. This file checks the
 * confirmations, runs the action the verdict and the flags choose, and prints.
 */
import { nextStep } from '../next-step.js';
import type { Command } from 'commander';
import { BatonError, EXIT_OK } from '../errors.js';
import type { ShareContext } from '../share/share-context.js';
import type { SyncActionFlags } from '../share/sync-flags.js';
import type { Verdict } from '../share/types.js';
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

/**
 * The share layer's actions, their words and their refusals, loaded only when sync runs: a
 * command that never syncs must not pay for the authority and store modules at start-up.
 */
async function loadOps() {
  const [actions, words, refusals, verdictWords] = await Promise.all([
    import('../share/actions.js'),
    import('../share/action-words.js'),
    import('../share/refusals.js'),
    import('../share/verdict-words.js'),
  ]);
  return { ...actions, ...words, ...refusals, verdictSentence: verdictWords.verdictSentence };
}

async function runSync(ctx: CliContext, flags: SyncFlags): Promise<number> {
  const { conflictingFlags, checkSyncFlags, syncBindings } = await import('../share/sync-flags.js');
  const conflict = conflictingFlags(flags);
  if (conflict) throw conflict;
  const [{ openShareContext }, ops, { confirmBound, confirmMint }] = await Promise.all([
    import('../share/share-context.js'),
    loadOps(),
    import('./typed-confirm.js'),
  ]);
  const suggester = ctx.suggester();
  const share: ShareContext = { ...(await openShareContext(ctx.config())), suggester };
  const say = (line: string) => ctx.stdout.write(`${line}\n`);

  const seen = await ops.look(share);
  const failure = ops.storeFailure(seen);
  if (failure) throw failure;
  const { verdict } = seen;
  checkSyncFlags(share, seen, flags);
  // Every irreversible step is bound to a value read from the two sides, checked before the
  // lock: a wrong or missing value changes nothing.
  await confirmBound(
    ctx,
    syncBindings(seen, flags),
    flags.confirm ?? [],
    share.store.location,
    explainBound(ops, share, verdict, flags),
  );

  switch (verdict.kind) {
    case 'first-controller': {
      if (!flags.firstController) throw await nothingPublished(share);
      const { neighbourWords } = await import('../share/neighbours.js');
      const note = await neighbourWords(share.store, share.deployment);
      await confirmMint(ctx, {
        deployment: share.deployment,
        location: share.store.location,
        yes: Boolean(flags.yes),
        command: nextStep('sync --first-controller'),
        note,
      });
      say(ops.describeOutcome(share, await ops.firstController(share, { seen: verdict })));
      return EXIT_OK;
    }
    case 'adopt': {
      const outcome = await ops.adopt(share);
      if (outcome.kind === 'nothing-published') {
        // The document went away between the look and the lock: a first controller must not
        // be decided on a look that is already stale.
        throw new BatonError('store-changed', {
          what: `The published authority ${verdict.published} was there a moment ago and is gone now.`,
          where: share.store.location,
          changed: 'Nothing was written.',
          next: ['Find out who removed it, then run ', nextStep('sync'), ' again.'],
          reason: 'removed',
        });
      }
      say(ops.describeOutcome(share, outcome));
      return EXIT_OK;
    }
    case 'publish':
      say(ops.describeOutcome(share, await ops.publish(share)));
      return EXIT_OK;
    case 'in-sync':
      say(`${ops.verdictSentence(verdict)} Nothing was changed.`);
      return EXIT_OK;
    case 'blocked':
      // An adopt or a force cut short part-way through its install: the same sync finishes it
      // (adopt proves ca/ is the document's prefix, byte for byte, or refuses).
      if (
        !flags.replaceUnreadable &&
        (await import('../share/partial-install.js')).isStoppedInstall(seen.local, seen.published)
      ) {
        say(ops.describeOutcome(share, await ops.adopt(share)));
        return EXIT_OK;
      }
      if (flags.replaceUnreadable) {
        say(
          ops.describeOutcome(
            share,
            await ops.replaceUnreadable(share, { seen: verdict, unseal: Boolean(flags.unseal) }),
          ),
        );
        return EXIT_OK;
      }
      throw ops.blockedError(verdict, suggester);
    case 'refuse':
      if (flags.push) {
        say(
          ops.describeOutcome(share, await ops.push(share, { seen: verdict, unseal: Boolean(flags.unseal) })),
        );
        return EXIT_OK;
      }
      if (flags.force) {
        say(ops.describeOutcome(share, await ops.force(share, { seen: verdict })));
        return EXIT_OK;
      }
      throw ops.refusalError(share, verdict);
  }
}

/** What the terminal gate shows before it asks: both sides, and what the step moves or replaces. */
function explainBound(
  ops: Awaited<ReturnType<typeof loadOps>>,
  share: ShareContext,
  verdict: Verdict,
  flags: SyncFlags,
): string[] {
  if (verdict.kind !== 'refuse') return [ops.verdictSentence(verdict)];
  const lines = [ops.refusalError(share, verdict).what];
  if (flags.force)
    lines.push(
      `--force moves ${verdict.caDir} and its marker aside to ca.superseded-<UTC stamp> (nothing is deleted), then installs ${verdict.published}.`,
    );
  if (flags.push)
    lines.push(
      `--push publishes this host's ${verdict.local} over the published ${verdict.published}${flags.unseal ? ', IN THE CLEAR (--unseal)' : ''}.`,
    );
  return lines;
}

/**
 * Nothing is published and this host holds nothing: said, never taken as a reason to mint. A
 * mistyped --store lands here, so documents found at neighbouring prefixes are named.
 */
async function nothingPublished(share: ShareContext): Promise<BatonError> {
  const { neighbourWords } = await import('../share/neighbours.js');
  const neighbours = await neighbourWords(share.store, share.deployment);
  return new BatonError('refused', {
    what: `Nothing is published at ${share.store.location}, and this host holds no authority.${neighbours}`,
    where: share.store.location,
    changed: 'Nothing was minted or written.',
    next: [
      "If --store and --deployment are right and this host is the deployment's first controller, mint on purpose: ",
      nextStep('sync --first-controller'),
      ' (it asks for the deployment id typed; --yes in scripts).',
    ],
    reason: 'nothing-to-publish',
  });
}
