/**
 * What `baton status` and the failover walk read, in one value: the local authority, the
 * published one, the store's last conditional-write check, and the verdict of the decision
 * table over them. Reading it changes nothing and takes no lock (docs/authority-on-disk.md: readers that
 * change nothing read twice instead).
 */
import { nextStep } from '../next-step.js';
import { EXIT_CODES, EXIT_OK, asBatonError } from '../errors.js';
import { refuseTamperedHandover } from '../share/handover.js';
import { decide, isInSync } from '../share/decide.js';
import type { AuthorityLockProbe } from '../authority/authority-lock.js';
import type { LocalAuthority } from '../authority/types.js';
import type { PublishedAuthority, Verdict } from '../share/types.js';

/** The last `baton store check` for this store, as `store-check.json` records it. */
export interface StoreCheckRecord {
  readonly store: string;
  readonly enforced: boolean;
  readonly detail: string;
  readonly checkedAt: string;
}

/** Whether another process holds ca.lock right now (failover probes it; status never does). */
export type LockProbe = AuthorityLockProbe;

export interface StatusReport {
  readonly deployment: string;
  readonly stateDir: string;
  readonly storeUrl: string;
  readonly local: LocalAuthority;
  readonly published: PublishedAuthority;
  /** Undefined when `baton store check` never ran against THIS store from this state dir. */
  readonly storeCheck: StoreCheckRecord | undefined;
  readonly lock: LockProbe;
  readonly verdict: Verdict;
  readonly readAt: Date;
}

/** The adapters a read goes through; the real ones are in status-sources.ts. */
export interface StatusSources {
  readonly deployment: string;
  readonly stateDir: string;
  readonly storeUrl: string;
  readLocal(): Promise<LocalAuthority>;
  readPublished(): Promise<PublishedAuthority>;
  readStoreCheck(): Promise<StoreCheckRecord | undefined>;
  probeLock?(): Promise<LockProbe>;
  now(): Date;
}

/**
 * Reads both sides. A side that throws becomes that side's "could not read" state rather than
 * an exception: the other side is still worth showing, and "could not read" must never be
 * mistaken for "absent" (a host that cannot read its ca/ is not a fresh host).
 */
export async function readStatus(sources: StatusSources): Promise<StatusReport> {
  const [local, published, storeCheck, lock] = await Promise.all([
    sources.readLocal().catch((error: unknown): LocalAuthority => ({
      state: 'blocked',
      stateDir: sources.stateDir,
      problem: 'unreadable',
      error: asBatonError(error, {
        what: 'The local authority could not be read',
        where: sources.stateDir,
        next: [
          'Check the state dir exists and is readable by this user, then run ',
          nextStep('status'),
          ' again.',
        ],
      }),
      unexpected: [],
    })),
    sources.readPublished().catch((error: unknown): PublishedAuthority => ({
      state: 'unreadable',
      location: sources.storeUrl,
      error: asBatonError(error, {
        what: 'The published authority could not be read',
        where: sources.storeUrl,
        next: ['Check the store URL, credentials and network, then run ', nextStep('status'), ' again.'],
      }),
    })),
    sources.readStoreCheck().catch(() => undefined),
    sources.probeLock
      ? sources.probeLock().catch((): LockProbe => ({ state: 'not-probed' }))
      : Promise.resolve<LockProbe>({ state: 'not-probed' }),
  ]);
  return {
    deployment: sources.deployment,
    stateDir: sources.stateDir,
    storeUrl: sources.storeUrl,
    local,
    // A handover signature that fails under this host's own key: shown as the refusal it is.
    published: refuseTamperedHandover(local, published),
    storeCheck,
    lock,
    verdict: decide(local, published),
    readAt: sources.now(),
  };
}

/**
 * docs/cli.md: 0 in sync, 3 action needed, 1 could not read. "Could not read" is a side we
 * know nothing about (I/O, unreachable store, a local dir changing under every read) — a
 * document that was read and REFUSED is known and blocks, so it is "action needed".
 */
export function statusExitCode(report: StatusReport): number {
  if (couldNotRead(report)) return EXIT_CODES.failed;
  return isInSync(report.verdict) ? EXIT_OK : EXIT_CODES['action-needed'];
}

export function couldNotRead(report: StatusReport): boolean {
  const localUnknown =
    report.local.state === 'blocked' &&
    (report.local.problem === 'unreadable' || report.local.problem === 'changing');
  const publishedUnknown =
    report.published.state === 'unreadable' && report.published.error.code !== 'refused';
  return localUnknown || publishedUnknown;
}
