/**
 * One lock per provider, for every controller: rotate, resume, rollback and seed hold the lock
 * of each provider directory they touch ON its machine (Transport.lock: a flock the machine's
 * kernel releases when the holder or its connection dies) for their whole run. Two state dirs,
 * two config files or two inventories rotating one pair meet here, where the pair's files are;
 * the journal directory's lock (src/mesh/mesh-lock.ts) only keeps one controller's own runs apart.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { BatonError } from '../errors.js';
import { nextStep } from '../next-step.js';
import { providerDir } from '../mesh/intent.js';
import { holderWords } from '../mesh/leftovers.js';
import type { PlannedPair } from '../mesh/rotation-plan.js';
import { reasonOf, type TransportFor } from '../mesh/transport.js';

/**
 * What a holder writes beside the lock, for a second controller to read (never a secret). The
 * token tells this operation's own lock from another's when it reads the machines under it.
 */
export function lockHolderText(command: string): string {
  return JSON.stringify({
    command,
    pid: process.pid,
    host: os.hostname(),
    since: new Date().toISOString(),
    token: randomBytes(6).toString('hex'),
  });
}

export interface HeldLocks {
  /** Lets every lock go; safe to call twice. */
  release(): Promise<void>;
  /** Provider machines whose lock could not be taken (unreachable, no flock), with why: the gate must close on them. */
  readonly unlocked: ReadonlyMap<string, string>;
  /** The words this operation holds its locks under: a read of the machines under them knows its own. */
  readonly holder: string;
}

/**
 * The machines to open while the provider locks are taken (`ahead` of holdProviderLocks): the
 * first the command's read reaches (`holders`, in its order), as many as its places but the
 * lock's, none a lock is taken on (the lock is opening that connection).
 */
export function machinesToOpenAhead(
  pairs: readonly PlannedPair[],
  holders: readonly { readonly machine: string }[],
  concurrency: number,
): string[] {
  const locked = new Set(pairs.map((p) => p.providerMachine));
  return holders
    .map((h) => h.machine)
    .filter((m) => !locked.has(m))
    .slice(0, Math.max(0, concurrency - 1));
}

/**
 * Opens `machines`' connections (Transport.open: no file read) until `signal` aborts, each
 * failure left to the read that follows: it meets the machine again and says why.
 */
function openAhead(
  machines: readonly string[],
  transportFor: TransportFor,
  signal: AbortSignal,
): Promise<unknown> {
  const opening = machines.map((m) => transportFor(m)).filter((t) => t.open !== undefined);
  return Promise.all(opening.map((t) => t.open!(signal).catch(() => undefined)));
}

/**
 * Takes the lock of every provider directory of `pairs`, in one order for every controller.
 * A lock held by another: exit 5 naming the holder, after letting go of those taken. A
 * machine that cannot be reached to lock is named in `unlocked`: nothing may be sent to it.
 * Nothing is read before the locks are held; meanwhile, from the first lock's start, the
 * connections to the machines `ahead` are opened (machinesToOpenAhead): their handshakes
 * overlap the lock's instead of following it.
 */
export async function holdProviderLocks(
  pairs: readonly PlannedPair[],
  transportFor: TransportFor,
  command: string,
  ahead: readonly string[] = [],
): Promise<HeldLocks> {
  const dirs = new Map<string, { machine: string; dir: string; provider: string }>();
  for (const p of pairs)
    dirs.set(`${p.providerMachine}\0${providerDir(p)}`, {
      machine: p.providerMachine,
      dir: providerDir(p),
      provider: p.provider,
    });
  const held: { release(): Promise<void> }[] = [];
  // Once the command is past its read (or refused), an opening still under way is not needed.
  const openings = new AbortController();
  let opened: Promise<unknown> | undefined;
  const release = async () => {
    openings.abort();
    await opened;
    await Promise.all(held.splice(0).map((l) => l.release().catch(() => undefined)));
  };
  const holder = lockHolderText(command);
  const unlocked = new Map<string, string>();
  for (const key of [...dirs.keys()].sort()) {
    const { machine, dir, provider } = dirs.get(key)!;
    let lock;
    try {
      const asked = transportFor(machine).lock(dir, holder);
      // The first lock's session (and its connection) is under way: the others' openings start beside it.
      opened ??= openAhead(ahead, transportFor, openings.signal);
      lock = await asked;
    } catch (error) {
      // Not taken: the machine is left to the all-or-nothing gate, which closes on it.
      unlocked.set(machine, `its provider lock could not be taken: ${reasonOf(error)}`);
      continue;
    }
    if (!lock.taken) {
      await release();
      throw new BatonError('lock-busy', {
        what: `${command} refused: ${provider} is being worked on by ${holderWords(lock.holder ?? '')}.`,
        where: `${machine}:${dir}`,
        next: ['Wait for it to finish, then run ', nextStep('mesh status'), ' to see where the pairs stand.'],
        changed: 'Nothing was generated and nothing was sent.',
      });
    }
    held.push(lock);
  }
  return { release, unlocked, holder };
}

/** Runs `fn` holding the provider locks of `pairs`, and lets them go however it ends. */
export async function withProviderLocks<T>(
  pairs: readonly PlannedPair[],
  transportFor: TransportFor,
  command: string,
  fn: (locks: HeldLocks) => Promise<T>,
  ahead: readonly string[] = [],
): Promise<T> {
  const locks = await holdProviderLocks(pairs, transportFor, command, ahead);
  try {
    return await fn(locks);
  } finally {
    await locks.release();
  }
}
