import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { layoutOf } from './layout.js';
import { readAuthority } from './read-local-authority.js';
import type { AuthorityFiles } from './types.js';
import { markerBytes, writeMarker } from './write-marker.js';

/**
 * The allowlisted files of a WHOLE local authority, for publishing — the very bytes the reader
 * judged whole, from one pass. Refuses anything else: a half, torn or mid-operation authority
 * published would be adopted by the next host as if it were the fleet's. Backfills a missing
 * marker (this is a locked operation). Caller holds the lock.
 */
export async function readAuthorityFiles(stateDir: string, deployment: string): Promise<AuthorityFiles> {
  const l = layoutOf(stateDir);
  const read = await readAuthority(stateDir, deployment);
  const local = read.local;
  if (local.state !== 'whole') {
    throw new BatonError('refused', {
      what:
        local.state === 'blocked'
          ? `Cannot publish: ${local.error.what}`
          : `Cannot publish: this host holds no authority (${local.state}).`,
      where: local.state === 'blocked' ? (local.error.where ?? l.caDir) : l.caDir,
      next:
        local.state === 'blocked'
          ? (local.error.said ?? local.error.next ?? 'Repair the local authority first.')
          : ['Adopt the published authority with ', nextStep('sync'), '.'],
      changed: 'Nothing was written.',
    });
  }
  if (local.repairedTear || local.pending) {
    const op = local.pending === 'retire' ? 'retire' : 'rotate';
    throw new BatonError('refused', {
      what: `Cannot publish: an interrupted ${op === 'retire' ? 'retire' : 'rotation'} left ca/ part-way.`,
      where: l.caDir,
      next: ['Finish it with ', nextStep(`ca ${op}`), ', then publish.'],
      changed: 'Nothing was written.',
    });
  }
  if (local.markerMissing) await writeMarker(stateDir, deployment);
  const bytes = (f: { kind: string; bytes?: Uint8Array }) => (f.kind === 'bytes' ? f.bytes : undefined);
  const files: AuthorityFiles = {
    'ca.crt': bytes(read.raw.cert)!,
    'ca.key': read.currentKey!,
    'authority-created': bytes(read.raw.marker) ?? markerBytes(deployment),
  };
  if (local.previous) {
    files['ca-previous.crt'] = bytes(read.raw.previousCert)!;
    files['ca-previous.key'] = bytes(read.raw.previousKey)!;
  }
  return files;
}
