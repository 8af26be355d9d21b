/**
 * DESIGN.md §5's decision table as a pure function: status shows it, failover walks it, sync
 * does it. Fingerprints are compared EXACTLY here — this answer can authorise setting an
 * authority aside, and a tolerant comparison would let a look-alike through.
 */
import { layoutOf } from '../authority/layout.js';
import type { LocalAuthority } from '../authority/types.js';
import { refuseTamperedHandover } from './handover.js';
import { lineageOf } from './lineage.js';
import type { Action, PublishedAuthority, Verdict } from './types.js';

export { lineageOf };

export function decide(local: LocalAuthority, read: PublishedAuthority): Verdict {
  // A handover signature that fails under this host's own key is tampering: refused like any
  // document that cannot be used, before any lineage is read from it.
  const published = refuseTamperedHandover(local, read);
  // The host is what must be repaired first: a blocked local authority wins over a bad document.
  if (local.state === 'blocked') {
    return {
      kind: 'blocked',
      why: withWhere(local.error.what, local.error.where),
      next: local.error.next ?? 'Repair the local authority by hand, then look again.',
    };
  }
  if (published.state === 'unreadable') {
    return {
      kind: 'blocked',
      why: withWhere(`The published authority cannot be used: ${published.error.what}`, published.error.where ?? published.location),
      next: published.error.next ?? `Check the store at ${published.location}.`,
    };
  }
  switch (local.state) {
    case 'fresh':
      return published.state === 'none'
        ? { kind: 'first-controller' }
        : { kind: 'adopt', published: published.header.fingerprint, lostMarker: false };
    case 'lost':
      // NEVER MINTED OVER A LOSS: a marker without files means this host held the authority
      // once; minting now would give the fleet a second one.
      return published.state === 'none'
        ? {
            kind: 'blocked',
            why: `This host held the authority once (the marker ${layoutOf(local.stateDir).marker} is present) but ca/ is empty, and nothing is published.`,
            next: 'Restore ca/ from a backup, or remove the marker on purpose if this deployment really must start over.',
          }
        : { kind: 'adopt', published: published.header.fingerprint, lostMarker: true };
    case 'whole': {
      const mine = local.current.fingerprint;
      if (published.state === 'none') return { kind: 'publish', local: mine };
      const theirs = published.header.fingerprint;
      if (mine === theirs) return { kind: 'in-sync', fingerprint: mine };
      return {
        kind: 'refuse',
        local: mine,
        published: theirs,
        lineage: lineageOf(local, published),
        caDir: layoutOf(local.stateDir).caDir,
      };
    }
  }
}

/** A verdict carries one sentence for why: it names the file or object, once. */
function withWhere(what: string, where: string | undefined): string {
  return where && !what.includes(where) ? `${what} (${where})` : what;
}

/** Only the actions the table allows; 'leave' (change nothing) is always one of them. */
export function allowedActions(verdict: Verdict): readonly Action[] {
  switch (verdict.kind) {
    case 'first-controller':
      return ['first-controller', 'leave'];
    case 'adopt':
      return ['adopt', 'leave'];
    case 'publish':
      return ['publish', 'leave'];
    case 'in-sync':
      return ['leave'];
    case 'refuse':
      return verdict.lineage.kind === 'ahead' ? ['publish', 'leave', 'force'] : ['leave', 'force'];
    case 'blocked':
      return ['leave'];
  }
}

/** True when the verdict means "nothing to do" (status exit 0). */
export function isInSync(verdict: Verdict): boolean {
  return verdict.kind === 'in-sync';
}
