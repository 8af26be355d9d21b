import path from 'node:path';
import { jsonForTerminal, shown } from '../outside-text.js';
import { BatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import { requireDeployment, stateDirFor, type ResolvedConfig } from '../config/config.js';
import { layoutOf } from '../authority/layout.js';
import type { LocalAuthority } from '../authority/types.js';
import { Option } from 'commander';
import { action, type CliContext, type Register } from './context.js';
import { printsJsonOnError } from './json-errors.js';
import { nextStep, renderSaid, renderStep, retireStep, saidSteps, type NextStep } from '../next-step.js';
import { interruptedOf } from '../authority/interrupted.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';
import type { RetirePublishedOutcome } from '../share/actions.js';
import type { ShareContext } from '../share/share-context.js';
import type { Outcome } from '../share/types.js';
import type { StoreAfterRotate } from '../operations/ca-rotate.js';

/**
 * `baton ca init | export | show [--json] | rotate | retire` (docs/authority-on-disk.md, docs/cli.md):
 * the local authority, and with a store what it needs there. The writing subcommands decide in
 * src/operations/ (`ca-init.ts`, `ca-rotate.ts`, `ca-retire.ts`); this file parses the flags,
 * supplies the gates (the typed deployment id or --yes, the PREVIOUS 8) and says the result.
 * Every writing subcommand takes ca.lock (exit 5 when busy); `show` takes none and changes
 * nothing (exit 0 whole, 1 could not read, 3 otherwise — as `status`).
 */
export const registerCa: Register = (program, ctx) => {
  // Every command this group prints, built once with the global flags given.
  const run = (words: string) => `\`${renderStep(ctx.suggester(), nextStep(words))}\``;
  const ca = program.command('ca').description('the local authority: init | show | rotate | retire');
  const where = () => {
    const config = ctx.config();
    return { deployment: requireDeployment(config), stateDir: stateDirFor(config) };
  };

  ca.command('init')
    .description(
      "mint this deployment's authority on a fresh host (never over a loss); with a store, as the first controller: publish create-only, then install (asks for the deployment id typed; --yes in scripts)",
    )
    .option(
      '--yes',
      'with a store and no terminal: mint and publish a first authority without typing the deployment id',
    )
    .action(
      action(ctx, async (options: { readonly yes?: boolean }) => {
        const { deployment, stateDir } = where();
        const config = ctx.config();
        const [{ caInitOperation }, share] = await Promise.all([
          import('../operations/ca-init.js'),
          config.store ? shareFor(ctx, config) : undefined,
        ]);
        if (share) {
          const { confirmMint } = await import('./typed-confirm.js');
          const result = await caInitOperation({
            share,
            gate: {
              confirmMint: async (note) =>
                confirmMint(ctx, {
                  deployment: share.deployment,
                  location: share.store.location,
                  yes: Boolean(options.yes),
                  command: nextStep('ca init'),
                  note: await note(),
                }),
            },
          });
          if (result.kind === 'shared')
            ctx.stdout.write(`${await firstControllerWords(share, result.outcome)}\n`);
          return;
        }
        const result = await caInitOperation({ stateDir, deployment });
        if (result.kind !== 'minted-alone') return;
        ctx.stdout.write(
          `Minted a new authority for deployment ${deployment} in ${layoutOf(stateDir).caDir}.\n` +
            `Fingerprint: ${result.fingerprint}\n` +
            'No store is configured, so no store was asked whether this deployment already has an authority. ' +
            `Publish it (configure the store, then ${run('sync')}) so the other controller adopts it rather than minting its own.\n`,
        );
      }),
    );

  ca.command('export')
    .description(
      "the offline route when the store is down: write this host's authority as the document it would publish (sealed with its key, if it has one) into an empty directory; copy that to the promoted host and run sync --store file:///DIR there",
    )
    .requiredOption('--to <dir>', 'an empty directory (created if missing) that becomes a file:// store')
    .action(
      action(ctx, async (options: { readonly to: string }) => {
        const { deployment, stateDir } = where();
        const config = ctx.config();
        const [{ exportAuthority, adoptFromExportStep }, { readSealKey }, os, { systemClock }] =
          await Promise.all([
            import('../share/offline-route.js'),
            import('../share/seal.js'),
            import('node:os'),
            import('../authority/index.js'),
          ]);
        const sealKey = config.sealKeyFile ? await readSealKey(config.sealKeyFile) : undefined;
        const dir = options.to.startsWith('file://') ? new URL(options.to).pathname : options.to;
        const exported = await exportAuthority(
          {
            stateDir,
            deployment,
            ...(sealKey ? { sealKey } : {}),
            noSeal: config.seal === 'none',
            clock: systemClock,
            host: os.hostname(),
          },
          dir,
        );
        const url = `file://${path.dirname(exported.location)}`;
        ctx.stdout.write(
          `Exported this host's authority ${exported.fingerprint} (${exported.sealed ? "sealed with this host's seal key" : 'in the clear, as stated'}) to ${exported.location}.\n` +
            `On the promoted host: copy ${path.dirname(exported.location)} there (e.g. scp -r), then run ${renderStep(ctx.suggester(), adoptFromExportStep())} with <file:///DIR> = ${url} (if copied to the same path).\n`,
        );
      }),
    );

  ca.command('show')
    .description(
      'the local authority: fingerprint, previous fingerprint, not-after, state (exit 0 whole, 1 could not read, 3 otherwise)',
    )
    .option('--json', 'print one JSON object')
    .action(
      action(
        ctx,
        printsJsonOnError(ctx, 'ca show', async (options: { readonly json?: boolean }) => {
          const { deployment, stateDir } = where();
          const { snapshotLocalAuthority } = await import('../authority/index.js');
          const local = await snapshotLocalAuthority(stateDir, deployment);
          ctx.stdout.write(
            options.json
              ? `${jsonForTerminal(authorityJson(local, deployment, ctx.suggester()), 2)}\n`
              : authorityText(local, deployment, ctx.suggester()),
          );
          return showExitCode(local);
        }),
      ),
    );

  ca.command('rotate')
    .description('mint a successor; the current authority stays as ca-previous.* until retired')
    .action(
      action(ctx, async () => {
        const { deployment, stateDir } = where();
        const config = ctx.config();
        const { caRotateOperation } = await import('../operations/ca-rotate.js');
        const { store } = await caRotateOperation({
          stateDir,
          deployment,
          ...(config.store ? { openShare: () => shareFor(ctx, config) } : {}),
          rotated: (result) =>
            ctx.stdout.write(
              `${result.resumed ? 'Finished an interrupted rotation' : 'Rotated the authority'} of deployment ${deployment} in ${layoutOf(stateDir).caDir}.\n` +
                `Current:  ${result.current}\n` +
                `Previous: ${result.previous} (kept as ca-previous.* during the overlap)\n` +
                `Publish it with ${run('sync --push')} (this host is now ahead of the store), and run \`${renderStep(ctx.suggester(), retireStep())}\` once every node trusts the current authority (<PREVIOUS 8>: the 8 characters after "SHA256:" of the previous fingerprint above).\n`,
            ),
        });
        ctx.stdout.write(`${store ? await storeAfterRotateWords(ctx, store) : NO_STORE_AFTER_ROTATE}\n`);
      }),
    );

  ca.command('retire')
    .description(
      'end a rotation overlap: delete ca-previous.* (bound: --confirm with the 8 characters after "SHA256:" of the PREVIOUS fingerprint, or typed on a terminal); with a store, the published document drops it too',
    )
    .option(
      '--confirm <PREVIOUS 8>',
      'the 8 characters after "SHA256:" of the previous fingerprint `ca show` prints (the key deleted)',
    )
    .addOption(new Option('--yes').hideHelp())
    .action(
      action(ctx, async (options: { readonly confirm?: string; readonly yes?: boolean }) => {
        const { deployment, stateDir } = where();
        if (options.yes && options.confirm === undefined) throw yesIsNotAConfirmation(stateDir);
        const config = ctx.config();
        const [{ retireOperation }, share] = await Promise.all([
          import('../operations/ca-retire.js'),
          config.store ? shareFor(ctx, config) : undefined,
        ]);
        const { local: result, store } = await retireOperation({
          stateDir,
          deployment,
          ...(share ? { share } : {}),
          confirm: async () => options.confirm ?? (await confirmRetireOnTerminal(ctx, stateDir, deployment)),
          localDone: (result) => {
            const { caDir } = layoutOf(stateDir);
            switch (result.kind) {
              case 'retired':
                ctx.stdout.write(
                  `Retired the previous authority ${result.previous} from ${caDir}${result.unproved ? ' on your word (the current certificate names no predecessor)' : ''}.\n` +
                    `The current authority ${result.current} is the only one now on this host.\n`,
                );
                break;
              case 'finished':
                ctx.stdout.write(
                  `Finished an interrupted retire in ${caDir}: ${result.removed} is removed. The current authority is ${result.current}.\n`,
                );
                break;
              case 'nothing-to-retire':
                ctx.stdout.write(
                  `There is no previous authority to retire in ${caDir}. The current authority is ${result.current}.\n`,
                );
                break;
            }
          },
        });
        if (share && store) ctx.stdout.write(`${storeWords(ctx, share.store.location, store)}\n`);
        else if (result.kind !== 'nothing-to-retire')
          ctx.stdout.write(
            'No store is configured: a published document that still carries the previous pair keeps it until this host publishes (configure the store, then retire again).\n',
          );
      }),
    );
};

const NO_STORE_AFTER_ROTATE =
  'No store is configured, so none was asked. If this deployment keeps its authority in a store (billet: its identity store, e.g. SSM), the other side needs this rotation there: until it is published, billet will not start on this state dir and the other controller adopts the previous authority. Configure store: in baton.yaml and push, or run `billet ca sync --push` on this host.';

/** The store's answer after a rotation (src/operations/ca-rotate.ts), in one line. */
async function storeAfterRotateWords(ctx: CliContext, store: StoreAfterRotate): Promise<string> {
  const s = ctx.suggester();
  const push = renderStep(s, nextStep('sync --push'));
  switch (store.kind) {
    case 'unasked':
      return `The store could not be asked (${store.what}): once it answers, publish this rotation with \`${push}\`; until then billet will not start on this state dir.`;
    case 'behind':
      return `The store at ${store.location} still publishes ${store.published}: it is BEHIND this host. The other side needs this rotation: until it is published, billet will not start on this state dir (its identity store publishes another authority) and the other controller adopts ${store.published}. Publish it now: \`${push}\` (what \`billet ca sync --push\` does).`;
    case 'nothing-published':
      return `Nothing is published at ${store.location}: publish this authority with \`${renderStep(s, nextStep('sync'))}\` so the other controller adopts it.`;
    case 'other': {
      const { verdictSentence } = await import('../share/verdict-words.js');
      return `The store at ${store.location}: ${verdictSentence(store.verdict)} Look with \`${renderStep(s, nextStep('status'))}\` before publishing.`;
    }
  }
}

async function shareFor(ctx: CliContext, config: ResolvedConfig): Promise<ShareContext> {
  const { openShareContext } = await import('../share/share-context.js');
  return { ...(await openShareContext(config)), suggester: ctx.suggester() };
}

/** The store's copy after a retire, in one line. */
function storeWords(ctx: CliContext, location: string, outcome: RetirePublishedOutcome): string {
  switch (outcome.kind) {
    case 'dropped':
      return `The published document at ${location} no longer carries the previous authority ${outcome.previous}: re-published with this host's one pair.`;
    case 'clean':
      return `The published document at ${location} carries no previous pair.`;
    case 'left':
      return `The published document at ${location} was left as it is: ${outcome.why}${outcome.storeBehind ? ` The other side needs this host's authority: publish it with \`${renderStep(ctx.suggester(), nextStep('sync --push'))}\`.` : ''}`;
  }
}

/** `--yes` once retired on the operator's word; now the word is bound to the data. */
function yesIsNotAConfirmation(stateDir: string): BatonError {
  return new BatonError('usage', {
    what: 'ca retire takes no --yes: deleting the previous key is bound to the data, --confirm with the 8 characters after "SHA256:" of the previous fingerprint.',
    where: layoutOf(stateDir).previousKey,
    next: ['Read the previous fingerprint (', nextStep('ca show'), '), then run ', retireStep(), '.'],
    changed: 'Nothing was written.',
  });
}

/**
 * THE TYPED SCREEN of a retire: on a terminal without --confirm, the operator reads the
 * fingerprint whose key is deleted and types its first 8 characters after `SHA256:`. Returns
 * what was typed (retire compares it under the lock with what is on disk then), or undefined
 * without a terminal or with nothing to delete (retire then refuses, exit 2, or has nothing to do).
 */
async function confirmRetireOnTerminal(ctx: CliContext, stateDir: string, deployment: string) {
  if (!process.stdin.isTTY) return undefined;
  const { snapshotLocalAuthority, unprovedRefusal } = await import('../authority/index.js');
  const local = await snapshotLocalAuthority(stateDir, deployment);
  if (local.state !== 'whole' || local.repairedTear || local.pending === 'rotate') return undefined;
  const previous =
    local.previous?.fingerprint ??
    (local.leftover?.file === 'ca-previous.key' ? local.leftover.fingerprint : undefined);
  if (previous === undefined) return undefined;
  if (local.previous && (local.current.claim ?? local.current.replaces) === undefined)
    ctx.stdout.write(
      `${unprovedRefusal(layoutOf(stateDir).previousKey, previous, local.current.fingerprint).what}\n`,
    );
  ctx.stdout.write(
    `Retiring deletes the previous key ${previous} (ca-previous.*) for good; nodes that trust only it stop verifying this controller.\n`,
  );
  const { askTyped } = await import('./typed-confirm.js');
  const typed = await askTyped(
    ctx.stdout,
    'Type the first 8 characters after "SHA256:" of the PREVIOUS fingerprint to delete it: ',
  );
  const { confirmationPrefix, typedMatch } = await import('../pki/fingerprint-type.js');
  const match = typed === undefined ? undefined : typedMatch(typed, confirmationPrefix(previous));
  if (typed === undefined || match !== 'match') {
    if (typed === undefined) ctx.stdout.write('\n');
    const { wrongCase } = await import('../app/typed-gate.js');
    throw new BatonError('aborted', {
      what:
        typed === undefined
          ? 'The confirmation was not given (Ctrl-C or end of input).'
          : match === 'wrong-case'
            ? wrongCase(typed, 'the previous fingerprint')
            : 'The typed characters do not match the previous fingerprint.',
      where: layoutOf(stateDir).previousKey,
      changed: 'Nothing was written.',
      next: ['Run ', retireStep(), ' when every node trusts the current authority.'],
    });
  }
  // Compared again under the lock with what is on disk then.
  return typed;
}

/** What `ca init` with a store did (src/operations/ca-init.ts), in the words of a first controller. */
async function firstControllerWords(share: ShareContext, outcome: Outcome): Promise<string> {
  if (outcome.kind !== 'first-controller') {
    const { describeOutcome } = await import('../share/action-words.js');
    return describeOutcome(share, outcome);
  }
  const { caDir } = layoutOf(share.stateDir);
  return outcome.wonRace
    ? `Minted a new authority for deployment ${share.deployment}, published it create-only to ${share.store.location}, then installed it in ${caDir}.\nFingerprint: ${outcome.fingerprint}`
    : `This deployment's authority was already published by another controller: this host adopted ${outcome.fingerprint} from ${share.store.location} into ${caDir}. Any authority minted here was discarded before it touched disk; the fleet has one authority.\nFingerprint: ${outcome.fingerprint}`;
}

export function authorityJson(
  local: LocalAuthority,
  deployment: string,
  s: Suggester = PLAIN_SUGGESTER,
): Record<string, unknown> {
  const base = { deployment, state: local.state, state_dir: local.stateDir, unexpected: local.unexpected };
  switch (local.state) {
    case 'fresh':
    case 'lost':
      return { ...base, fingerprint: null, previous_fingerprint: null, not_after: null };
    case 'whole':
      return {
        ...base,
        fingerprint: local.current.fingerprint,
        previous_fingerprint: local.previous?.fingerprint ?? null,
        not_after: local.current.notAfter.toISOString(),
        previous_not_after: local.previous?.notAfter.toISOString() ?? null,
        replaces: local.current.replaces ?? null,
        // The claim as written (billet-replaces:/baton-replaces:), well-formed or not; null: names none.
        replaces_claim: local.current.claim ?? null,
        marker_missing: local.markerMissing,
        repaired_tear: local.repairedTear,
        pending: local.pending ?? null,
      };
    case 'blocked':
      return {
        ...base,
        fingerprint: null,
        previous_fingerprint: null,
        not_after: null,
        problem: local.problem,
        error: {
          what: local.error.what,
          where: local.error.where ?? null,
          next: local.error.said ? renderSaid(s, local.error.said) : (local.error.next ?? null),
          next_steps: local.error.said ? saidSteps(s, local.error.said) : [],
        },
      };
  }
}

/** Every command this text names, its own or a lower layer's, is rendered with `s` (the global flags given). */
export function authorityText(
  local: LocalAuthority,
  deployment: string,
  s: Suggester = PLAIN_SUGGESTER,
): string {
  const run = (words: string) => `\`${renderStep(s, nextStep(words))}\``;
  const step = (next: NextStep) => `\`${renderStep(s, next)}\``;
  const { caDir, marker } = layoutOf(local.stateDir);
  const lines: string[] = [];
  switch (local.state) {
    case 'fresh':
      lines.push(
        `This host holds no authority for deployment ${deployment} (fresh: no files, no marker in ${local.stateDir}).`,
      );
      lines.push(
        `Next: adopt the published one with ${run('sync')}, or on the first controller ${run('ca init')}.`,
      );
      break;
    case 'lost':
      lines.push(
        `The authority of deployment ${deployment} is LOST on this host: the marker ${marker} is present but ${caDir} holds no key and no certificate.`,
      );
      lines.push(
        `Next: adopt the published one with ${run('sync')}, or restore ca/ from a backup. baton will not mint over a loss.`,
      );
      break;
    case 'whole': {
      const interrupted = interruptedOf(local);
      lines.push(
        interrupted
          ? `The authority of deployment ${deployment} in ${caDir} is INTERRUPTED (the current pair below is intact): ${interrupted.what}${interrupted.billetStops ? " billet's control plane will not start on it until it is finished." : ''}`
          : `The authority of deployment ${deployment} in ${caDir} is whole.`,
      );
      lines.push(`Fingerprint: ${local.current.fingerprint}`);
      lines.push(`Not after:   ${local.current.notAfter.toISOString()}`);
      lines.push(
        local.previous
          ? `Previous:    ${local.previous.fingerprint} (rotation overlap; not after ${local.previous.notAfter.toISOString()}). Run ${step(retireStep())} once every node trusts the current one (<PREVIOUS 8>: the 8 characters after "SHA256:" above).`
          : 'Previous:    none (no rotation overlap).',
      );
      if (local.previous && (local.current.claim ?? local.current.replaces) === undefined) {
        lines.push(
          `The current certificate names no predecessor (an older billet minted it), so the previous one cannot be proved its predecessor: ${step(retireStep())} retires it on your word.`,
        );
      }
      if (local.leftover?.file === 'ca-previous.key')
        lines.push(`Previous:    ${local.leftover.fingerprint} (its key only, left by the retire).`);
      if (interrupted) lines.push(`Next: finish it with ${step(interrupted.step)}.`);
      if (local.markerMissing)
        lines.push(
          `The marker ${layoutOf(local.stateDir).marker} is missing; the next writing command (rotate, retire, sync) writes it back.`,
        );
      break;
    }
    case 'blocked':
      lines.push(`The authority of deployment ${deployment} cannot be used (${local.problem}).`);
      lines.push(...local.error.lines(s));
      break;
  }
  if (local.unexpected.length > 0)
    lines.push(
      `Unexpected files (never read, never published): ${local.unexpected.map((name) => shown(name)).join(', ')}`,
    );
  return `${lines.join('\n')}\n`;
}

/** As `status`: a side that could not be read is exit 1 (unknown), never 3 (known to need action). */
function showExitCode(local: LocalAuthority): number {
  if (local.state === 'whole') return interruptedOf(local) ? EXIT_CODES['action-needed'] : EXIT_OK;
  if (local.state === 'blocked' && (local.problem === 'unreadable' || local.problem === 'changing'))
    return EXIT_CODES.failed;
  return EXIT_CODES['action-needed'];
}
