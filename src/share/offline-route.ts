/**
 * THE OFFLINE ROUTE (docs/publishing.md "When the store is down"). The store is a channel, not
 * the source of truth: when it cannot be reached, a failover still can. On any host that holds
 * the authority, `ca export --to DIR` writes the document this host would publish (sealed with
 * its key, when it has one; handover signature and all) as a directory store; copied to the
 * promoted host, `sync --store file:///DIR` adopts it there byte-identically, by the same
 * decoder and the same install as from S3. Every "could not reach the store" refusal names it.
 */
import path from 'node:path';
import { readLocalAuthority, withAuthorityLock, layoutOf } from '../authority/index.js';
import { BatonError, isBatonError } from '../errors.js';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { DirectoryStore } from '../store/directory-store.js';
import { encodeLocalAuthority } from './actions.js';
import { refuseUnstatedSeal } from './publish-guards.js';
import type { ShareContext } from './share-context.js';

export { adoptFromExportStep, exportStep, offlineRoute } from '../store/offline-route-steps.js';

export type ExportContext = Pick<
  ShareContext,
  'stateDir' | 'deployment' | 'sealKey' | 'noSeal' | 'clock' | 'host'
>;

export interface Exported {
  readonly fingerprint: Fingerprint;
  readonly location: string;
  readonly sealed: boolean;
}

/**
 * Writes this host's whole authority as a document into `dir` (create-only: an export never
 * overwrites a document already there). Sealing obeys the same rule as publishing: no key
 * material in the clear unless the operator said so.
 */
export async function exportAuthority(ctx: ExportContext, dir: string): Promise<Exported> {
  const target = new DirectoryStore(path.resolve(dir));
  return withAuthorityLock(ctx.stateDir, async () => {
    const local = await readLocalAuthority(ctx.stateDir, ctx.deployment);
    if (local.state !== 'whole') {
      throw new BatonError('refused', {
        what:
          local.state === 'blocked'
            ? `This host's authority cannot be exported: ${local.error.what}`
            : 'This host holds no authority to export.',
        where: layoutOf(ctx.stateDir).caDir,
        changed: 'Nothing was written.',
        next: 'Run the export on a host that holds the authority whole (ca show says so).',
        reason: 'nothing-to-publish',
      });
    }
    const share = { ...ctx, store: target };
    refuseUnstatedSeal(share);
    const { body, fingerprint } = await encodeLocalAuthority(share, local);
    try {
      await target.put(body, { kind: 'create-only' });
    } catch (error) {
      if (isBatonError(error) && error.code === 'store-changed') {
        throw new BatonError('refused', {
          what: 'The directory already holds a document: an export never overwrites one.',
          where: target.location,
          changed: 'Nothing was written.',
          next: 'Export to an empty directory, or move the old document away first.',
          reason: 'not-allowed',
        });
      }
      throw error;
    }
    return { fingerprint, location: target.location, sealed: ctx.sealKey !== undefined };
  });
}
