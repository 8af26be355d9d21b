/**
 * `baton sync [--force | --push | --replace-unreadable] [--unseal] [--yes]`: the decision
 * table walked without a TUI. The rules live in src/share: the actions in actions.ts, which
 * flag applies to which verdict in sync-flags.ts. This file asks for the typed confirmations,
 * runs the action the verdict and the flags choose, and prints.
 */
import type { Command } from 'commander';
import { BatonError, EXIT_OK } from '../errors.js';
import type { ShareContext } from '../share/share-context.js';
import type { Verdict } from '../share/types.js';
import type { SyncActionFlags } from '../share/sync-flags.js';
import { action, type CliContext, type Register } from './context.js';

interface SyncFlags extends SyncActionFlags {
  readonly yes?: boolean;
}

export const registerSync: Register = (program: Command, ctx: CliContext) => {
  program
    .command('sync')
    .description('adopt, publish or refuse without a TUI (the decision table, non-interactively)')
    .option('--push', 'publish over a different published authority — only when this host is ahead of it (it rotated)')
    .option('--force', 'only when sync refuses: set the local authority aside (ca.superseded-<stamp>, never deleted) and adopt the published one')
    .option('--replace-unreadable', 'only when the published document cannot be used: replace it with this host\'s authority (if-match on the bad object)')
    .option('--unseal', 'with --push or --replace-unreadable: replace a SEALED document in the clear, on purpose (this host has no seal key)')
    .option('--yes', 'confirm --force, --replace-unreadable or --unseal without typing (required when stdin is not a terminal)')
    .action(action(ctx, (flags: SyncFlags) => runSync(ctx, flags)));
};

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
  const { conflictingFlags, checkSyncFlags } = await import('../share/sync-flags.js');
  const conflict = conflictingFlags(flags);
  if (conflict) throw conflict;
  const [{ openShareContext }, ops] = await Promise.all([import('../share/share-context.js'), loadOps()]);
  const suggester = ctx.suggester();
  const share: ShareContext = { ...(await openShareContext(ctx.config())), suggester };
  const say = (line: string) => ctx.stdout.write(`${line}\n`);

  const seen = await ops.look(share);
  const failure = ops.storeFailure(seen);
  if (failure) throw failure;
  const { verdict } = seen;
  checkSyncFlags(share, seen, flags);

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
          next: 'Find out who removed it, then run `baton sync` again.',
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
      if (flags.replaceUnreadable) {
        await confirmTyped(ctx, flags, {
          explain: [
            ops.verdictSentence(verdict),
            `--replace-unreadable replaces the published document with this host's whole authority${flags.unseal ? ', IN THE CLEAR (--unseal)' : ''}, only if the object is still the one read now.`,
          ],
          prompt: `Type "replace"${flags.unseal ? ' then a space and "unseal"' : ''} to replace the published document: `,
          expected: flags.unseal ? 'replace unseal' : 'replace',
          rerun: `sync --replace-unreadable${flags.unseal ? ' --unseal' : ''}`,
          where: share.store.location,
        });
        say(ops.describeOutcome(share, await ops.replaceUnreadable(share, { seen: verdict, unseal: Boolean(flags.unseal) })));
        return EXIT_OK;
      }
      throw ops.blockedError(verdict);
    case 'refuse':
      if (flags.push) {
        if (flags.unseal) {
          await confirmTyped(ctx, flags, {
            explain: [ops.verdictSentence(verdict), '--unseal publishes this host\'s authority over the SEALED document in the clear: ca.key will sit in the bucket as base64.'],
            prompt: 'Type "unseal" to publish without the seal: ',
            expected: 'unseal',
            rerun: 'sync --push --unseal',
            where: share.store.location,
          });
        }
        say(ops.describeOutcome(share, await ops.publish(share, { seen: verdict, unseal: Boolean(flags.unseal) })));
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

interface TypedConfirmation {
  readonly explain: readonly string[];
  readonly prompt: string;
  /** Compared trimmed and case-insensitively. */
  readonly expected: string;
  /** The sync arguments to run again (through the builder). */
  readonly rerun: string;
  readonly where: string;
}

/** --yes, or on a terminal the expected words typed; end of input or Ctrl-C is a "no". */
async function confirmTyped(ctx: CliContext, flags: SyncFlags, c: TypedConfirmation): Promise<void> {
  if (flags.yes) return;
  if (!process.stdin.isTTY) {
    throw new BatonError('usage', {
      what: `This replaces the published document and needs a confirmation, but stdin is not a terminal. ${c.explain[0] ?? ''}`,
      where: c.where,
      changed: 'Nothing was written.',
      next: `Check what is published, then run: ${await rerunWithYes()}`,
    });
  }
  for (const line of c.explain) ctx.stdout.write(`${line}\n`);
  const typed = await ask(ctx, c.prompt);
  if (typed === undefined || typed.trim().toLowerCase() !== c.expected) {
    throw new BatonError('aborted', {
      what: typed === undefined ? 'The confirmation was not given (Ctrl-C or end of input).' : `The typed words are not "${c.expected}".`,
      where: c.where,
      changed: 'Nothing was written.',
      next: `Run \`baton ${c.rerun}\` again when you are ready.`,
    });
  }
}

async function ask(ctx: CliContext, prompt: string): Promise<string | undefined> {
  const { createInterface } = await import('node:readline/promises');
  const rl = createInterface({ input: process.stdin, output: ctx.stdout, terminal: true });
  // Ctrl-C or end of input is a "no": without these the question would hang, or the process
  // would drain and exit 0 as if the action had been confirmed.
  const typed = await new Promise<string | undefined>((resolve) => {
    rl.once('SIGINT', () => resolve(undefined));
    rl.once('close', () => resolve(undefined));
    rl.question(prompt).then(resolve, () => resolve(undefined));
  });
  rl.close();
  if (typed === undefined) ctx.stdout.write('\n');
  return typed;
}

type Refusal = Extract<Verdict, { kind: 'refuse' }>;

/**
 * Force moves the key every node verifies against, so it takes a deliberate act: --yes (the
 * script's), or on a terminal the first 8 characters after `SHA256:` of the LOCAL
 * fingerprint — the one being set aside — typed, which cannot be done without reading it.
 */
async function confirmForce(ctx: CliContext, share: ShareContext, verdict: Refusal, flags: SyncFlags): Promise<void> {
  if (flags.yes) return;
  const { refusalError } = await import('../share/refusals.js');
  const refusal = refusalError(share, verdict);
  if (!process.stdin.isTTY) {
    throw new BatonError('usage', {
      what: `--force replaces this host's authority and needs a confirmation, but stdin is not a terminal. ${refusal.what}`,
      where: refusal.where ?? verdict.caDir,
      changed: 'Nothing was written.',
      next: `Check both fingerprints, then run: ${await rerunWithYes()}`,
    });
  }
  const { confirmationPrefix, typedMatch } = await import('../pki/fingerprint-type.js');
  const expected = confirmationPrefix(verdict.local);
  ctx.stdout.write(`${refusal.what}\n`);
  ctx.stdout.write(`--force moves ${verdict.caDir} and its marker aside to ca.superseded-<UTC stamp> (nothing is deleted), then installs ${verdict.published}.\n`);
  const typed = await ask(ctx, 'Type the first 8 characters after "SHA256:" of the LOCAL fingerprint to set it aside: ');
  if (typed === undefined) {
    throw new BatonError('aborted', {
      what: 'The confirmation was not given (Ctrl-C or end of input).',
      where: verdict.caDir,
      changed: 'Nothing was written.',
      next: "Run `baton sync --force` again when you are ready to replace this host's authority.",
    });
  }
  const match = typedMatch(typed, expected);
  if (match !== 'match') {
    const { wrongCase } = await import('../app/typed-gate.js');
    throw new BatonError('aborted', {
      what: match === 'wrong-case' ? wrongCase(typed, 'the local fingerprint') : 'The typed characters do not match the local fingerprint.',
      where: verdict.caDir,
      changed: 'Nothing was written.',
      next: `Run \`baton sync --force\` again and type the 8 characters after "SHA256:" of ${verdict.local}.`,
    });
  }
}

/** The command exactly as it was run, plus --yes, quoted for a POSIX shell. */
async function rerunWithYes(): Promise<string> {
  const { shellWord } = await import('../suggest-command.js');
  return ['baton', ...process.argv.slice(2), '--yes'].map(shellWord).join(' ');
}
