/**
 * `baton sync [--push] [--force] [--yes]`: the decision table walked without a TUI
 * (DESIGN.md §5, §8). The rules live in src/share/operations; this file only chooses the
 * action the verdict and the flags allow, asks for the force confirmation, and prints.
 */
import type { Command } from 'commander';
import type { GlobalFlags } from '../config/config.js';
import { BatonError, EXIT_OK } from '../errors.js';
import { action, type CliContext, type Register } from './context.js';

interface SyncFlags {
  readonly push?: boolean;
  readonly force?: boolean;
  readonly yes?: boolean;
}

export const registerSync: Register = (program: Command, ctx: CliContext) => {
  program
    .command('sync')
    .description('adopt, publish or refuse without a TUI (the decision table, non-interactively)')
    .option('--push', 'publish over a different published authority — allowed only when this host is ahead of it (it rotated)')
    .option('--force', 'set the local authority aside (ca.superseded-<stamp>, never deleted) and adopt the published one')
    .option('--yes', 'confirm --force without typing (required when stdin is not a terminal)')
    .action(action(ctx, (flags: SyncFlags) => runSync(ctx, flags, program.opts<GlobalFlags>())));
};

async function runSync(ctx: CliContext, flags: SyncFlags, globals: GlobalFlags): Promise<number> {
  if (flags.push && flags.force) {
    throw new BatonError('usage', {
      what: '--push and --force ask for opposite things: publish this host\'s authority, or replace it with the published one.',
      next: 'Choose one.',
      changed: 'Nothing was read or written.',
    });
  }
  const [{ openShareContext }, ops, { batonInvocation }] = await Promise.all([
    import('../share/share-context.js'),
    import('../share/operations.js'),
    import('../app/status-invocation.js'),
  ]);
  // The global flags wherever they were given (before or after `sync`): a next step without
  // them would read another config and act on another state dir.
  const share = { ...(await openShareContext(ctx.config())), command: batonInvocation(globals) };
  const say = (line: string) => ctx.stdout.write(`${line}\n`);

  const seen = await ops.look(share);
  const failure = ops.storeFailure(seen);
  if (failure) throw failure;
  const { verdict } = seen;
  switch (verdict.kind) {
    case 'first-controller':
      say(ops.describeOutcome(share, await ops.firstController(share)));
      return EXIT_OK;
    case 'adopt': {
      const outcome = await ops.adopt(share);
      if (outcome.kind === 'nothing-published') {
        // The document went away between the look and the lock: a first controller must not
        // be decided on a look that is already stale.
        throw new BatonError('store-changed', {
          what: `The published authority ${verdict.published} was there a moment ago and is gone now.`,
          where: share.store.location,
          changed: 'Nothing was written.',
          next: `Find out who removed it, then run \`${share.command} sync\` again.`,
        });
      }
      say(ops.describeOutcome(share, outcome));
      return EXIT_OK;
    }
    case 'publish':
      say(ops.describeOutcome(share, await ops.publish(share)));
      return EXIT_OK;
    case 'in-sync':
      say(ops.describeVerdict(verdict) + (flags.force || flags.push ? ' There is nothing to push or force.' : ' Nothing was changed.'));
      return EXIT_OK;
    case 'blocked':
      throw ops.blockedError(verdict);
    case 'refuse':
      if (flags.push) {
        say(ops.describeOutcome(share, await ops.publish(share, { seen: verdict })));
        return EXIT_OK;
      }
      if (flags.force) {
        await confirmForce(ctx, share, verdict, flags);
        say(ops.describeOutcome(share, await ops.force(share, { seen: verdict })));
        return EXIT_OK;
      }
      throw ops.refusalError(share, verdict);
  }
}

type Refusal = Extract<import('../share/types.js').Verdict, { kind: 'refuse' }>;

/**
 * Force moves the key every node verifies against, so it takes a deliberate act: --yes (the
 * script's), or on a terminal the first 8 characters after `SHA256:` of the LOCAL
 * fingerprint — the one being set aside — typed, which cannot be done without reading it.
 */
async function confirmForce(
  ctx: CliContext,
  share: import('../share/operations.js').ShareContext,
  verdict: Refusal,
  flags: SyncFlags,
): Promise<void> {
  if (flags.yes) return;
  const ops = await import('../share/operations.js');
  const refusal = ops.refusalError(share, verdict);
  if (!process.stdin.isTTY) {
    throw new BatonError('usage', {
      what: `--force replaces this host's authority and needs a confirmation, but stdin is not a terminal. ${refusal.what}`,
      where: refusal.where ?? verdict.caDir,
      changed: 'Nothing was written.',
      next: `Check both fingerprints, then run: ${await rerunWithYes()}`,
    });
  }
  const { confirmationPrefix, sameForHumans } = await import('../pki/fingerprint-type.js');
  const expected = confirmationPrefix(verdict.local);
  const say = (line: string) => ctx.stdout.write(`${line}\n`);
  say(refusal.what);
  say(`--force moves ${verdict.caDir} and its marker aside to ca.superseded-<UTC stamp> (nothing is deleted), then installs ${verdict.published}.`);
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: ctx.stdout, terminal: true });
  // Ctrl-C or end of input is a "no": without these the question would hang, or the process
  // would drain and exit 0 as if the force had been done.
  const typed = await new Promise<string | undefined>((resolve) => {
    rl.once('SIGINT', () => resolve(undefined));
    rl.once('close', () => resolve(undefined));
    rl.question('Type the first 8 characters after "SHA256:" of the LOCAL fingerprint to set it aside: ').then(resolve, () => resolve(undefined));
  });
  rl.close();
  if (typed === undefined) {
    ctx.stdout.write('\n');
    throw new BatonError('aborted', {
      what: 'The confirmation was not given (Ctrl-C or end of input).',
      where: verdict.caDir,
      changed: 'Nothing was written.',
      next: `Run \`${share.command ?? 'baton'} sync --force\` again when you are ready to replace this host's authority.`,
    });
  }
  if (!sameForHumans(typed, expected)) {
    throw new BatonError('aborted', {
      what: 'The typed characters do not match the local fingerprint.',
      where: verdict.caDir,
      changed: 'Nothing was written.',
      next: `Run \`${share.command ?? 'baton'} sync --force\` again and type the 8 characters after "SHA256:" of ${verdict.local}.`,
    });
  }
}

/** The command exactly as it was run, plus --yes, quoted for a POSIX shell. */
async function rerunWithYes(): Promise<string> {
  const { shellWord } = await import('../app/status-invocation.js');
  return ['baton', ...process.argv.slice(2), '--yes'].map(shellWord).join(' ');
}
