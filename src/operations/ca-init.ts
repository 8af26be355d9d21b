/**
 * `baton ca init`'s decision as ONE operation: never over anything (only a fresh host), and with
 * a store the FIRST CONTROLLER path of the decision table (docs/publishing.md) — mint aside,
 * publish create-only, install only after the publish succeeded; when another controller
 * published first (before this look, or by winning the create-only put), adopt theirs. Two hosts
 * running `ca init` at once therefore end with ONE authority; checking the store outside the lock
 * and minting blind would give the fleet two. The mint is the same step `sync --first-controller`
 * and the failover walk run (share-action.ts), behind the same gate. The command only parses
 * flags, supplies the gate (--yes, or the typed deployment id) and says the result.
 */
import {
  checkPair,
  installAuthority,
  layoutOf,
  mintAuthority,
  readLocalAuthority,
  withAuthorityLock,
  type LocalAuthority,
} from '../authority/index.js';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { look } from '../share/actions.js';
import { blockedError, storeFailure } from '../share/refusals.js';
import type { ShareContext } from '../share/share-context.js';
import type { Outcome } from '../share/types.js';
import { runAction, type MintGate } from './share-action.js';

export type CaInitResult =
  /** No store: minted and installed here; no store was asked whether one already exists. */
  | { readonly kind: 'minted-alone'; readonly fingerprint: Fingerprint }
  /** With a store: what the first-controller step did (minted and published, or adopted the winner). */
  | { readonly kind: 'shared'; readonly outcome: Outcome };

export async function caInitOperation(
  options:
    | { readonly stateDir: string; readonly deployment: string; readonly share?: undefined }
    | { readonly share: ShareContext; readonly gate: MintGate },
): Promise<CaInitResult> {
  if (options.share)
    return { kind: 'shared', outcome: await initAsFirstController(options.share, options.gate) };
  const { stateDir, deployment } = options;
  const fingerprint = await withAuthorityLock(stateDir, async () => {
    refuseUnlessFresh(await readLocalAuthority(stateDir, deployment), stateDir);
    const files = await mintAuthority(deployment);
    const { fingerprint } = await checkPair(
      files['ca.key']!,
      files['ca.crt']!,
      deployment,
      'the authority just minted',
    );
    await installAuthority(stateDir, deployment, files, fingerprint);
    return fingerprint;
  });
  return { kind: 'minted-alone', fingerprint };
}

async function initAsFirstController(share: ShareContext, gate: MintGate): Promise<Outcome> {
  const seen = await look(share);
  const failure = storeFailure(seen);
  if (failure) throw failure;
  refuseUnlessFresh(seen.local, share.stateDir);
  const { verdict } = seen;
  if (verdict.kind === 'blocked') throw blockedError(verdict, share.suggester);
  // Minting is said, never inferred: an empty store (a mistyped --store looks the same) gets a
  // new authority only through the gate; a look that says adopt mints nothing and asks nothing.
  return runAction(share, { action: 'first-controller', seen: verdict }, gate);
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
