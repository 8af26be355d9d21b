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

/**
 * `baton ca init | show [--json] | rotate | retire` (docs/authority-on-disk.md, docs/cli.md): the local authority on
 * its own, no store. Every writing subcommand takes ca.lock (exit 5 when busy); `show` takes
 * none and changes nothing (exit 0 whole, 1 could not read, 3 otherwise — as `status`).
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
        if (config.store) {
          ctx.stdout.write(`${await initAsFirstController(ctx, config, Boolean(options.yes))}\n`);
          return;
        }
        const authority = await import('../authority/index.js');
        const fingerprint = await authority.withAuthorityLock(stateDir, async () => {
          const local = await authority.readLocalAuthority(stateDir, deployment);
          refuseUnlessFresh(local, stateDir);
          const files = await authority.mintAuthority(deployment);
          const { fingerprint } = await authority.checkPair(
            files['ca.key']!,
            files['ca.crt']!,
            deployment,
            'the authority just minted',
          );
          await authority.installAuthority(stateDir, deployment, files, fingerprint);
          return fingerprint;
        });
        ctx.stdout.write(
          `Minted a new authority for deployment ${deployment} in ${layoutOf(stateDir).caDir}.\n` +
            `Fingerprint: ${fingerprint}\n` +
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
        const { rotateAuthority } = await import('../authority/index.js');
        const result = await rotateAuthority(stateDir, deployment);
        ctx.stdout.write(
          `${result.resumed ? 'Finished an interrupted rotation' : 'Rotated the authority'} of deployment ${deployment} in ${layoutOf(stateDir).caDir}.\n` +
            `Current:  ${result.current}\n` +
            `Previous: ${result.previous} (kept as ca-previous.* during the overlap)\n` +
            `Publish it with ${run('sync --push')} (this host is now ahead of the store), and run \`${renderStep(ctx.suggester(), retireStep())}\` once every node trusts the current authority (<PREVIOUS 8>: the 8 characters after "SHA256:" of the previous fingerprint above).\n`,
        );
        const config = ctx.config();
        ctx.stdout.write(`${config.store ? await storeAfterRotate(ctx, config) : NO_STORE_AFTER_ROTATE}\n`);
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

/**
 * WHAT THE OTHER SIDE NEEDS after a rotation, read from the store, never
 * written: billet's control plane refuses to start while its identity store publishes another
 * authority than the one on disk, and the other controller keeps adopting the old one. The
 * rotation here is done and stands whatever the store says; a store that cannot be read is
 * said, not fatal.
 */
async function storeAfterRotate(ctx: CliContext, config: ResolvedConfig): Promise<string> {
  const [{ openShareContext }, { look }, { verdictSentence }] = await Promise.all([
    import('../share/share-context.js'),
    import('../share/actions.js'),
    import('../share/verdict-words.js'),
  ]);
  const s = ctx.suggester();
  const push = renderStep(s, nextStep('sync --push'));
  let seen;
  try {
    seen = await look(await openShareContext(config));
  } catch (error) {
    if (!(error instanceof BatonError)) throw error;
    return `The store could not be asked (${error.what}): once it answers, publish this rotation with \`${push}\`; until then billet will not start on this state dir.`;
  }
  const { published, verdict } = seen;
  const where = published.location;
  if (verdict.kind === 'refuse' && verdict.lineage.kind === 'ahead')
    return `The store at ${where} still publishes ${verdict.published}: it is BEHIND this host. The other side needs this rotation: until it is published, billet will not start on this state dir (its identity store publishes another authority) and the other controller adopts ${verdict.published}. Publish it now: \`${push}\` (what \`billet ca sync --push\` does).`;
  if (verdict.kind === 'publish')
    return `Nothing is published at ${where}: publish this authority with \`${renderStep(s, nextStep('sync'))}\` so the other controller adopts it.`;
  return `The store at ${where}: ${verdictSentence(verdict)} Look with \`${renderStep(s, nextStep('status'))}\` before publishing.`;
}

async function shareFor(ctx: CliContext, config: ResolvedConfig) {
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

/**
 * `ca init` with a store is the FIRST CONTROLLER path of the decision table (docs/publishing.md):
 * mint aside, publish create-only, install only after the publish succeeded — and when another
 * controller published first (before this look, or by winning the create-only put), adopt
 * theirs. Two hosts running `ca init` at once therefore end with ONE authority; checking the
 * store outside the lock and minting blind would give the fleet two.
 */
async function initAsFirstController(ctx: CliContext, config: ResolvedConfig, yes: boolean): Promise<string> {
  const [
    { openShareContext },
    { firstController, look },
    { describeOutcome },
    { blockedError, storeFailure },
  ] = await Promise.all([
    import('../share/share-context.js'),
    import('../share/actions.js'),
    import('../share/action-words.js'),
    import('../share/refusals.js'),
  ]);
  const share = { ...(await openShareContext(config)), suggester: ctx.suggester() };
  const seen = await look(share);
  const failure = storeFailure(seen);
  if (failure) throw failure;
  refuseUnlessFresh(seen.local, share.stateDir);
  const { verdict } = seen;
  if (verdict.kind === 'blocked') throw blockedError(verdict, ctx.suggester());
  // Minting is said, never inferred: an empty store (a mistyped --store looks the same) gets
  // a new authority only on the typed deployment id, or --yes without a terminal.
  if (verdict.kind === 'first-controller') {
    const [{ confirmMint }, { neighbourWords }] = await Promise.all([
      import('./typed-confirm.js'),
      import('../share/neighbours.js'),
    ]);
    const neighbours = await neighbourWords(share.store, share.deployment);
    await confirmMint(ctx, {
      deployment: share.deployment,
      location: share.store.location,
      yes,
      command: nextStep('ca init'),
      note: neighbours,
    });
  }
  const outcome = await firstController(share, { seen: verdict });
  if (outcome.kind !== 'first-controller') return describeOutcome(share, outcome);
  const { caDir } = layoutOf(share.stateDir);
  return outcome.wonRace
    ? `Minted a new authority for deployment ${share.deployment}, published it create-only to ${share.store.location}, then installed it in ${caDir}.\nFingerprint: ${outcome.fingerprint}`
    : `This deployment's authority was already published by another controller: this host adopted ${outcome.fingerprint} from ${share.store.location} into ${caDir}. Any authority minted here was discarded before it touched disk; the fleet has one authority.\nFingerprint: ${outcome.fingerprint}`;
}

/** NEVER MINTED OVER A LOSS, never over anything: `ca init` writes only on a fresh host. */
function refuseUnlessFresh(local: LocalAuthority, stateDir: string): void {
  switch (local.state) {
    case 'fresh':
      return;
    case 'lost':
      throw new BatonError('refused', {
        what: `This host held the authority once — the marker ${layoutOf(stateDir).marker} is present — but ca/ holds no key and no certificate. Minting now would give the fleet a second authority.`,
        where: layoutOf(stateDir).caDir,
        next: [
          'Adopt the published authority with ',
          nextStep('sync'),
          ', or restore ca/ from a backup. Remove the marker only if this deployment really must start over.',
        ],
        changed: 'Nothing was written.',
      });
    case 'whole':
      throw new BatonError('refused', {
        what: `This host already holds the authority ${local.current.fingerprint}.`,
        where: layoutOf(stateDir).caDir,
        next: [
          'Nothing to do: ',
          nextStep('ca show'),
          ' shows it, ',
          nextStep('ca rotate'),
          ' replaces it on purpose.',
        ],
        changed: 'Nothing was written.',
      });
    case 'blocked':
      throw local.error;
  }
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
