import type { Fingerprint } from '../pki/fingerprint-type.js';
import { systemClock, type Clock } from './clock.js';
import type { AuthorityFiles } from './types.js';

/**
 * Mints a new authority IN MEMORY (nothing written): `ca.crt` + `ca.key`. `replaces` sets the
 * OU claim `baton-replaces:<fingerprint>` the retire guard later proves the predecessor by.
 */
export async function mintAuthority(
  deployment: string,
  opts?: { readonly clock?: Clock; readonly replaces?: Fingerprint },
): Promise<AuthorityFiles> {
  // pkijs (~400 KB) is loaded only to mint: readers such as `status --json` import this
  // module through the authority index and must not pay for it at every start.
  const { mintCa } = await import('../pki/mint-ca.js');
  const minted = await mintCa({
    deployment,
    now: (opts?.clock ?? systemClock).now(),
    replaces: opts?.replaces,
  });
  return { 'ca.crt': minted.certPem, 'ca.key': minted.keyPem };
}
