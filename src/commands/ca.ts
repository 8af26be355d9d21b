import { BatonError, EXIT_CODES, EXIT_OK } from '../errors.js';
import { requireDeployment, stateDirFor } from '../config/config.js';
import { layoutOf } from '../authority/layout.js';
import type { LocalAuthority } from '../authority/types.js';
import { action, type Register } from './context.js';

/**
 * `baton ca init | show [--json] | rotate | retire` (DESIGN.md §4, §8): the local authority on
 * its own, no store. Every writing subcommand takes ca.lock (exit 5 when busy); `show` takes
 * none and changes nothing (exit 0 whole, 1 could not read, 3 otherwise — as `status`).
 */
export const registerCa: Register = (program, ctx) => {
  const ca = program.command('ca').description('the local authority: init | show | rotate | retire');
  const where = () => {
    const config = ctx.config();
    return { deployment: requireDeployment(config), stateDir: stateDirFor(config) };
  };

  ca.command('init')
    .description('mint this deployment\'s authority on a fresh host (never over a loss)')
    .action(
      action(ctx, async () => {
        const { deployment, stateDir } = where();
        const storeUrl = ctx.config().store;
        if (storeUrl) await refuseIfPublished(storeUrl, deployment);
        const authority = await import('../authority/index.js');
        const fingerprint = await authority.withAuthorityLock(stateDir, async () => {
          const local = await authority.readLocalAuthority(stateDir, deployment);
          refuseUnlessFresh(local, stateDir);
          const files = await authority.mintAuthority(deployment);
          const { fingerprint } = await authority.checkPair(files['ca.key']!, files['ca.crt']!, deployment, 'the authority just minted');
          await authority.installAuthority(stateDir, deployment, files, fingerprint);
          return fingerprint;
        });
        ctx.stdout.write(
          `Minted a new authority for deployment ${deployment} in ${layoutOf(stateDir).caDir}.\n` +
            `Fingerprint: ${fingerprint}\n` +
            (storeUrl
              ? `Nothing was published at ${storeUrl} when this began. `
              : 'No store is configured, so nobody was asked whether this deployment already has an authority. ') +
            'Publish it with `baton sync` so the other controller adopts it rather than minting its own.\n',
        );
      }),
    );

  ca.command('show')
    .description('the local authority: fingerprint, previous fingerprint, not-after, state (exit 0 whole, 1 could not read, 3 otherwise)')
    .option('--json', 'print one JSON object')
    .action(
      action(ctx, async (options: { readonly json?: boolean }) => {
        const { deployment, stateDir } = where();
        const { snapshotLocalAuthority } = await import('../authority/index.js');
        const local = await snapshotLocalAuthority(stateDir, deployment);
        ctx.stdout.write(options.json ? `${JSON.stringify(authorityJson(local, deployment), null, 2)}\n` : authorityText(local, deployment));
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
            'Publish it with `baton sync --push` (this host is now ahead of the store), and run `baton ca retire` once every node trusts the current authority.\n',
        );
      }),
    );

  ca.command('retire')
    .description('end a rotation overlap: remove ca-previous.* once provably the predecessor')
    .action(
      action(ctx, async () => {
        const { deployment, stateDir } = where();
        const { retireAuthority } = await import('../authority/index.js');
        const result = await retireAuthority(stateDir, deployment);
        const { caDir } = layoutOf(stateDir);
        switch (result.kind) {
          case 'retired':
            ctx.stdout.write(
              `Retired the previous authority ${result.previous} from ${caDir}.\n` +
                `The current authority ${result.current} is the only one now on this host. The published document may still carry the previous pair until the next rotation is published; a host that adopts it retires it the same way.\n`,
            );
            break;
          case 'finished':
            ctx.stdout.write(`Finished an interrupted retire in ${caDir}: ca-previous.crt is removed. The current authority is ${result.current}.\n`);
            break;
          case 'nothing-to-retire':
            ctx.stdout.write(`There is no previous authority to retire in ${caDir}. The current authority is ${result.current}. Nothing was changed.\n`);
            break;
        }
      }),
    );
};

/**
 * A deployment that already published an authority gets it ADOPTED, never a second one minted
 * beside it: two authorities in one fleet is the outage this tool exists to prevent. An
 * unreadable store blocks too (the decision table's BLOCKED), since "could not read" is not
 * "nothing there".
 */
async function refuseIfPublished(storeUrl: string, deployment: string): Promise<void> {
  const [{ openStore }, { readPublished }] = await Promise.all([import('../store/open-store.js'), import('../share/published.js')]);
  const published = await readPublished(await openStore(storeUrl), deployment);
  if (published.state === 'none') return;
  throw new BatonError('refused', {
    what:
      published.state === 'present'
        ? `This deployment already published an authority (${published.header.fingerprint}); minting another would give the fleet two.`
        : `The store cannot be read, so baton cannot tell whether this deployment already has an authority: ${published.error.what}`,
    where: published.location,
    next: published.state === 'present' ? 'Adopt it with `baton sync`.' : (published.error.next ?? 'Check the store, then try again.'),
    changed: 'Nothing was written.',
  });
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
        next: 'Adopt the published authority with `baton sync`, or restore ca/ from a backup. Remove the marker only if this deployment really must start over.',
        changed: 'Nothing was written.',
      });
    case 'whole':
      throw new BatonError('refused', {
        what: `This host already holds the authority ${local.current.fingerprint}.`,
        where: layoutOf(stateDir).caDir,
        next: 'Nothing to do: `baton ca show` shows it, `baton ca rotate` replaces it on purpose.',
        changed: 'Nothing was written.',
      });
    case 'blocked':
      throw local.error;
  }
}

export function authorityJson(local: LocalAuthority, deployment: string): Record<string, unknown> {
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
        error: { what: local.error.what, where: local.error.where ?? null, next: local.error.next ?? null },
      };
  }
}

export function authorityText(local: LocalAuthority, deployment: string): string {
  const { caDir, marker } = layoutOf(local.stateDir);
  const lines: string[] = [];
  switch (local.state) {
    case 'fresh':
      lines.push(`This host holds no authority for deployment ${deployment} (fresh: no files, no marker in ${local.stateDir}).`);
      lines.push('Next: adopt the published one with `baton sync`, or on the first controller `baton ca init`.');
      break;
    case 'lost':
      lines.push(`The authority of deployment ${deployment} is LOST on this host: the marker ${marker} is present but ${caDir} holds no key and no certificate.`);
      lines.push('Next: adopt the published one with `baton sync`, or restore ca/ from a backup. baton will not mint over a loss.');
      break;
    case 'whole':
      lines.push(`The authority of deployment ${deployment} in ${caDir} is whole.`);
      lines.push(`Fingerprint: ${local.current.fingerprint}`);
      lines.push(`Not after:   ${local.current.notAfter.toISOString()}`);
      lines.push(
        local.previous
          ? `Previous:    ${local.previous.fingerprint} (rotation overlap; not after ${local.previous.notAfter.toISOString()}). Run \`baton ca retire\` once every node trusts the current one.`
          : 'Previous:    none (no rotation overlap).',
      );
      if (local.repairedTear || local.pending === 'rotate') lines.push('A rotation was interrupted part-way; the authority above is still the one in use. Finish it with `baton ca rotate`.');
      if (local.pending === 'retire') lines.push('A retire was interrupted: ca-previous.crt remains without its key. Finish it with `baton ca retire`.');
      if (local.markerMissing) lines.push(`The marker ${layoutOf(local.stateDir).marker} is missing; the next writing command (rotate, retire, sync) writes it back.`);
      break;
    case 'blocked':
      lines.push(`The authority of deployment ${deployment} cannot be used (${local.problem}).`);
      lines.push(...local.error.lines());
      break;
  }
  if (local.unexpected.length > 0) lines.push(`Unexpected files (never read, never published): ${local.unexpected.join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/** As `status`: a side that could not be read is exit 1 (unknown), never 3 (known to need action). */
function showExitCode(local: LocalAuthority): number {
  if (local.state === 'whole') return EXIT_OK;
  if (local.state === 'blocked' && (local.problem === 'unreadable' || local.problem === 'changing')) return EXIT_CODES.failed;
  return EXIT_CODES['action-needed'];
}
