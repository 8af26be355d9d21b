import path from 'node:path';
import { BatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import { requireDeployment, stateDirFor, type ResolvedConfig } from '../config/config.js';
import { layoutOf } from '../authority/layout.js';
import type { LocalAuthority } from '../authority/types.js';
import { action, type CliContext, type Register } from './context.js';
import { nextStep, renderSaid, renderStep, saidSteps } from '../next-step.js';
import { PLAIN_SUGGESTER, type Suggester } from '../suggest-command.js';

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
      action(ctx, async (options: { readonly json?: boolean }) => {
        const { deployment, stateDir } = where();
        const { snapshotLocalAuthority } = await import('../authority/index.js');
        const local = await snapshotLocalAuthority(stateDir, deployment);
        ctx.stdout.write(
          options.json
            ? `${JSON.stringify(authorityJson(local, deployment, ctx.suggester()), null, 2)}\n`
            : authorityText(local, deployment, ctx.suggester()),
        );
        return showExitCode(local);
      }),
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
            `Publish it with ${run('sync --push')} (this host is now ahead of the store), and run ${run('ca retire')} once every node trusts the current authority.\n`,
        );
      }),
    );

  ca.command('retire')
    .description(
      'end a rotation overlap: remove ca-previous.* once provably the predecessor (--yes: on your word, when the current certificate names none)',
    )
    .option(
      '--yes',
      'delete ca-previous.* even though the current certificate names no predecessor (an older billet minted it); a claim naming another authority is refused regardless',
    )
    .action(
      action(ctx, async (options: { readonly yes?: boolean }) => {
        const { deployment, stateDir } = where();
        const { retireAuthority } = await import('../authority/index.js');
        const acceptUnproved = options.yes
          ? ('any' as const)
          : await confirmUnprovedOnTerminal(ctx, stateDir, deployment);
        const result = await retireAuthority(
          stateDir,
          deployment,
          acceptUnproved ? { acceptUnproved } : undefined,
        );
        const { caDir } = layoutOf(stateDir);
        switch (result.kind) {
          case 'retired':
            ctx.stdout.write(
              `Retired the previous authority ${result.previous} from ${caDir}${result.unproved ? ' on your word (the current certificate names no predecessor)' : ''}.\n` +
                `The current authority ${result.current} is the only one now on this host. The published document may still carry the previous pair until the next rotation is published; a host that adopts it retires it the same way.\n`,
            );
            break;
          case 'finished':
            ctx.stdout.write(
              `Finished an interrupted retire in ${caDir}: ca-previous.crt is removed. The current authority is ${result.current}.\n`,
            );
            break;
          case 'nothing-to-retire':
            ctx.stdout.write(
              `There is no previous authority to retire in ${caDir}. The current authority is ${result.current}. Nothing was changed.\n`,
            );
            break;
        }
      }),
    );
};

/**
 * THE TYPED SCREEN of an unproved retire: on a terminal, when the current certificate names no
 * predecessor, the operator types the first 8 characters after `SHA256:` of the PREVIOUS
 * fingerprint — the key being deleted. Returns that fingerprint (retire re-checks it under the
 * lock), or undefined when there is nothing to confirm or no terminal (retire then refuses,
 * naming --yes).
 */
async function confirmUnprovedOnTerminal(ctx: CliContext, stateDir: string, deployment: string) {
  if (!process.stdin.isTTY) return undefined;
  const { snapshotLocalAuthority } = await import('../authority/index.js');
  const local = await snapshotLocalAuthority(stateDir, deployment);
  if (local.state !== 'whole' || !local.previous || local.pending || local.repairedTear) return undefined;
  if ((local.current.claim ?? local.current.replaces) !== undefined) return undefined;
  const { confirmationPrefix, typedMatch } = await import('../pki/fingerprint-type.js');
  const { askTyped } = await import('./typed-confirm.js');
  const { unprovedRefusal } = await import('../authority/index.js');
  const previous = local.previous.fingerprint;
  ctx.stdout.write(
    `${unprovedRefusal(layoutOf(stateDir).previousKey, previous, local.current.fingerprint).what}\n`,
  );
  ctx.stdout.write(`Retiring deletes ca-previous.key and ca-previous.crt (${previous}) on your word.\n`);
  const typed = await askTyped(
    ctx.stdout,
    'Type the first 8 characters after "SHA256:" of the PREVIOUS fingerprint to delete it: ',
  );
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
      next: [
        'Run ',
        nextStep('ca retire'),
        ` again and type the 8 characters after "SHA256:" of ${previous}, or `,
        nextStep('ca retire --yes'),
        '.',
      ],
    });
  }
  return previous;
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
    case 'whole':
      lines.push(`The authority of deployment ${deployment} in ${caDir} is whole.`);
      lines.push(`Fingerprint: ${local.current.fingerprint}`);
      lines.push(`Not after:   ${local.current.notAfter.toISOString()}`);
      lines.push(
        local.previous
          ? `Previous:    ${local.previous.fingerprint} (rotation overlap; not after ${local.previous.notAfter.toISOString()}). Run ${run('ca retire')} once every node trusts the current one.`
          : 'Previous:    none (no rotation overlap).',
      );
      if (local.previous && (local.current.claim ?? local.current.replaces) === undefined) {
        lines.push(
          `The current certificate names no predecessor (an older billet minted it), so the previous one cannot be proved its predecessor: ${run('ca retire --yes')} retires it on your word.`,
        );
      }
      if (local.repairedTear || local.pending === 'rotate')
        lines.push(
          `A rotation was interrupted part-way; the authority above is still the one in use. Finish it with ${run('ca rotate')}.`,
        );
      if (local.pending === 'retire')
        lines.push(
          `A retire was interrupted: ca-previous.crt remains without its key. Finish it with ${run('ca retire')}.`,
        );
      if (local.markerMissing)
        lines.push(
          `The marker ${layoutOf(local.stateDir).marker} is missing; the next writing command (rotate, retire, sync) writes it back.`,
        );
      break;
    case 'blocked':
      lines.push(`The authority of deployment ${deployment} cannot be used (${local.problem}).`);
      lines.push(...local.error.lines(s));
      break;
  }
  if (local.unexpected.length > 0)
    lines.push(`Unexpected files (never read, never published): ${local.unexpected.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** As `status`: a side that could not be read is exit 1 (unknown), never 3 (known to need action). */
function showExitCode(local: LocalAuthority): number {
  if (local.state === 'whole') return EXIT_OK;
  if (local.state === 'blocked' && (local.problem === 'unreadable' || local.problem === 'changing'))
    return EXIT_CODES.failed;
  return EXIT_CODES['action-needed'];
}
