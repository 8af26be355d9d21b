/**
 * The `local` transport: `address` is a directory that plays the machine's root (docs/mesh-rotation.md),
 * so a drill or a test runs the same delivery code as production against real files.
 * A machine whose directory is missing does not resolve.
 */
import { conninfoLogin } from '../mesh/alternating.js';
import { constants, promises as fs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { renameDurably, writeExclusive } from '../fs/durable-write.js';
import { runLocalCommand } from './machine-command.js';
import { openLocalStream } from './machine-stream.js';
import { RECEIPTS_DIR, secretDigest } from '../mesh/digest.js';
import { flockExclusive, flockHeldElsewhere, flockRelease } from '../fs/flock.js';
import {
  lockHolderPath,
  previousPath,
  recordPath,
  rolledBackPath,
  STAGED_SUFFIX,
} from '../mesh/transport.js';
import {
  abortedError,
  TransportError,
  type FileDigests,
  type MachineLock,
  type StagedFile,
  type Transport,
} from '../mesh/transport.js';

export function localTransport(machine: string, root: string): Transport {
  const at = (p: string) => path.join(root, p);
  const reachable = async () => {
    let isDir: boolean;
    try {
      isDir = (await fs.stat(root)).isDirectory();
    } catch {
      throw new TransportError(machine, `its directory ${root} does not exist`, true);
    }
    if (!isDir) throw new TransportError(machine, `${root} is not a directory`);
    try {
      await fs.access(root, constants.W_OK);
    } catch {
      throw new TransportError(machine, `its directory ${root} is not writable`);
    }
  };
  // Local operations are short file calls: the signal is checked before each and after it,
  // so a cancelled command reports it rather than carrying on with the next step.
  const wrap = async <T>(what: string, signal: AbortSignal, fn: () => Promise<T>): Promise<T> => {
    if (signal.aborted) throw abortedError(machine, what, signal);
    await reachable();
    try {
      const out = await fn();
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- aborted while fn ran
      if (signal.aborted) throw abortedError(machine, what, signal);
      return out;
    } catch (error) {
      if (error instanceof TransportError) throw error;
      const e = error as NodeJS.ErrnoException;
      throw new TransportError(
        machine,
        `${what} failed: ${e.code ?? ''} ${e.path ? path.relative(root, e.path) : ''}`.trim(),
      );
    }
  };
  return {
    machine,
    resolve: (signal) => wrap('resolve', signal, async () => undefined),
    stage: (files, signal) =>
      wrap('staging', signal, async () => {
        const landed = [];
        for (const file of files) {
          await writeAtomic(at(file.path + STAGED_SUFFIX), file);
          landed.push(await digestOf(at(file.path + STAGED_SUFFIX)));
        }
        return landed;
      }),
    commit: (paths, signal) =>
      wrap('commit', signal, async () => {
        for (const p of paths) {
          await renameDurably(at(p + STAGED_SUFFIX), at(p));
        }
      }),
    unstage: (paths, signal) =>
      wrap('unstage', signal, async () => {
        for (const p of paths) {
          const staged = at(p + STAGED_SUFFIX);
          await fs.rm(staged, { force: true });
          const dir = path.dirname(staged);
          const base = path.basename(staged);
          const names = await fs.readdir(dir).catch(() => [] as string[]);
          for (const name of names)
            if (name.startsWith(`${base}.tmp.`)) await fs.rm(path.join(dir, name), { force: true });
        }
      }),
    keepPrevious: (paths, signal) =>
      wrap('keeping the previous file', signal, async () => {
        const kept = [];
        for (const p of paths) {
          const prev = at(previousPath(p));
          const live = await digestOf(at(p));
          if (live === undefined) {
            const empty = `${prev}.tmp.${randomBytes(4).toString('hex')}`;
            await writeExclusive(empty, Buffer.alloc(0), 0o600);
            await renameDurably(empty, prev);
            kept.push(undefined);
            continue;
          }
          // A link under a temp name, then a rename: `.prev` is always whole, never a copy. Kept
          // already (a commit retried): rename() between two links of one file does nothing.
          const [liveStat, prevStat] = await Promise.all([
            fs.stat(at(p)),
            fs.stat(prev).catch(() => undefined),
          ]);
          if (prevStat?.ino !== liveStat.ino || prevStat.dev !== liveStat.dev) {
            const temp = `${prev}.tmp.${randomBytes(4).toString('hex')}`;
            await fs.link(at(p), temp);
            await renameDurably(temp, prev);
          }
          kept.push(live);
        }
        return kept;
      }),
    restorePrevious: (paths, signal) =>
      wrap('restoring the previous file', signal, async () => {
        const restored = [];
        for (const p of paths) {
          const prev = at(previousPath(p));
          const prevStat = await fs.lstat(prev).catch(() => undefined);
          const size = prevStat?.size;
          // The live file's password may already be in the database (set, then the provisioner
          // died before its receipt): linked aside before `.prev` replaces it, never lost.
          const liveStat = prevStat && (await fs.lstat(at(p)).catch(() => undefined));
          if (liveStat && (liveStat.ino !== prevStat.ino || liveStat.dev !== prevStat.dev)) {
            const kept = at(rolledBackPath(p));
            const temp = `${kept}.tmp.${randomBytes(4).toString('hex')}`;
            await fs.link(at(p), temp);
            await fs.chmod(temp, 0o600);
            await renameDurably(temp, kept);
          }
          if (size === 0) {
            await fs.rm(at(p), { force: true });
            await fs.rm(prev, { force: true });
          } else if (size !== undefined) await renameDurably(prev, at(p));
          if (size !== undefined)
            await fs.rm(path.join(path.dirname(at(p)), RECEIPTS_DIR, path.basename(p)), { force: true });
          restored.push(size !== undefined);
        }
        return restored;
      }),
    discardPrevious: (paths, signal) =>
      wrap('removing the previous file', signal, async () => {
        for (const p of paths) {
          await fs.rm(at(previousPath(p)), { force: true });
          await fs.rm(at(rolledBackPath(p)), { force: true });
        }
      }),
    retire: (paths, signal) =>
      wrap('removing the switched file', signal, async () => {
        for (const p of paths) {
          for (const f of [
            p,
            `${p}${STAGED_SUFFIX}`,
            previousPath(p),
            rolledBackPath(p),
            path.posix.join(path.posix.dirname(p), RECEIPTS_DIR, path.posix.basename(p)),
          ])
            await fs.rm(at(f), { force: true });
        }
      }),
    digests: (paths, signal) =>
      wrap('reading digests', signal, async () => {
        const out: FileDigests[] = [];
        for (const p of paths) {
          const modified = await fs.stat(at(p)).then(
            (st) => st.mtimeMs,
            () => undefined,
          );
          const prev = await digestOf(at(previousPath(p)));
          const live = await fs.readFile(at(p)).catch((error: NodeJS.ErrnoException) => {
            if (error.code === 'ENOENT') return undefined;
            throw error;
          });
          const login = live === undefined ? undefined : conninfoLogin(live.toString('utf8'));
          const record = await fs.readFile(at(recordPath(p)), 'utf8').catch(() => undefined);
          const lockedBy = await lockHolderNow(at(path.posix.dirname(p)), root);
          out.push({
            live: live === undefined ? undefined : secretDigest(live),
            next: await digestOf(at(p + STAGED_SUFFIX)),
            ...(prev ? { prev } : {}),
            ...(modified === undefined ? {} : { liveModifiedMs: Math.floor(modified) }),
            ...(login ? { liveLogin: login } : {}),
            ...(record === undefined ? {} : { record: record.split('\n')[0]! }),
            ...(lockedBy === undefined ? {} : { lockedBy }),
          });
        }
        return out;
      }),
    readTexts: (paths, signal) => wrap('reading', signal, async () => readAll(paths)),
    writeRecords: (records, signal) =>
      wrap('writing the rotation record', signal, async () => {
        for (const r of records) await writeTextAtomic(at(r.path), r.text);
      }),
    lock: (dir, holder, signal) =>
      wrap('taking the provider lock', signal, () => takeLock(at(dir), root, holder, signal)),
    // The same reader as over ssh, polling this filesystem: every path first, then changes.
    watchTexts: async (paths, watch, onChange, signal) => {
      const reported = new Map<number, string | undefined>();
      const until = Date.now() + watch.forMs;
      while (!signal.aborted && Date.now() < until) {
        await reachable();
        const texts = await readAll(paths);
        const changes = texts.flatMap((text, index) =>
          reported.has(index) && reported.get(index) === text ? [] : [{ index, text }],
        );
        for (const c of changes) reported.set(c.index, c.text);
        if (changes.length > 0) onChange(changes);
        await sleep(watch.intervalMs, signal);
      }
    },
    // Nothing to open on this machine: a rename is a file call, timed by this clock.
    openChannel: async (signal) => {
      if (signal.aborted) throw abortedError(machine, 'opening', signal);
      await reachable();
      const local = localTransport(machine, root);
      return {
        clock: { offsetMs: 0, withinMs: 0 },
        commit: async (paths, opSignal) => {
          await local.commit(paths, opSignal);
          return performance.timeOrigin + performance.now();
        },
        close: () => undefined,
      };
    },
    // app-truth: this host is the machine; the command runs in the directory that plays its root.
    runCommand: async (request, signal) => {
      await reachable();
      return runLocalCommand(machine, root, request, signal);
    },
    openStream: async (_host, _port, signal) => {
      await reachable();
      return openLocalStream(signal);
    },
  };
  async function readAll(paths: readonly string[]): Promise<(string | undefined)[]> {
    const out: (string | undefined)[] = [];
    for (const p of paths) out.push(await fs.readFile(at(p), 'utf8').catch(() => undefined));
    return out;
  }
}

/** A reader nobody stopped must not keep the process alive: the timer is unref'd. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    timer.unref();
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The provider lock on this machine: a kernel flock on the directory `<dir>` held by this
 * process's descriptor (released by the kernel if baton dies), taken within a short grace (100 ms)
 * so a status's probe of the same lock (an instant) is not mistaken for a holder, and short
 * enough that a second controller is refused, not queued behind the first.
 */
export const LOCK_GRACE_MS = 100;

/**
 * A directory never delivered to is locked on its nearest existing ancestor (taking the lock
 * creates nothing), so once its holder's staging creates it, a second controller finds the
 * directory itself — another inode, free. That second taker therefore also probes every
 * ancestor up to the machine's root that carries a holder's words naming its directory (the
 * words' later lines: the directories below that holder's lock it stands for), and is refused
 * with them while one is held. Probing, not creating the directory under the ancestor's lock:
 * a rotation refused after taking its lock still leaves the machine as it was. The holder of an
 * ancestor, once its words are down, looks again: a directory someone created between its look
 * and its words (a second taker could have flocked it and found no words above) is taken anew.
 */
async function takeLock(
  wanted: string,
  top: string,
  holder: string,
  signal: AbortSignal,
): Promise<MachineLock> {
  for (let attempt = 0; ; attempt++) {
    const dir = await nearestDirectory(wanted, top);
    const got = await flockDir(dir, path.relative(dir, wanted), holder);
    if (got.kind === 'busy') return { taken: false, holder: got.words?.split('\n')[0] };
    if (got.kind === 'ours') return { taken: true, release: () => Promise.resolve() };
    const { handle } = got;
    const above = await heldAbove(dir, wanted, top, holder).catch(async (error: unknown) => {
      await closeLock(handle);
      throw error;
    });
    if (above !== undefined) {
      await closeLock(handle);
      return { taken: false, holder: above.split('\n')[0] };
    }
    const words = lockHolderPath(dir);
    try {
      await writeTextAtomic(words, dir === wanted ? holder : `${holder}\n${path.relative(dir, wanted)}`);
    } catch (error) {
      // Not held unsaid until the descriptor is collected: a second controller would wait on it.
      await closeLock(handle);
      throw error;
    }
    let released: Promise<void> | undefined;
    const release = () =>
      (released ??= (async () => {
        signal.removeEventListener('abort', onAbort);
        // Removed while still held: a later holder's words are never the ones removed.
        await fs.rm(words, { force: true });
        await closeLock(handle);
      })());
    const onAbort = () => void release().catch(() => undefined);
    if (dir !== wanted && attempt < NEARER_TRIES && (await nearestDirectory(wanted, top)) !== dir) {
      await release();
      continue;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    return { taken: true, release };
  }
}
/** A directory that keeps appearing nearer is taken as it stands after this many looks (a taker never loops for ever). */
const NEARER_TRIES = 4;

type Flocked =
  | { readonly kind: 'taken'; readonly handle: FileHandle }
  | { readonly kind: 'busy'; readonly words: string | undefined }
  | { readonly kind: 'ours' };

/**
 * The flock of `dir`, within the grace. Busy: the holder's words, waited for briefly — a holder
 * writes them right after its flock (a durable write: under load it can take longer than the
 * grace), and meanwhile the lock is tried again, so a holder that lets go unsaid (a probe, a
 * holder closing after removing its words) is outlasted rather than named "has not said who".
 * Bounded (HOLDER_WORDS_TRIES × 50 ms). Words that are this taker's own (one operation taking
 * two directories under one ancestor) are its lock already: `below` is added to them.
 */
async function flockDir(dir: string, below: string, holder: string): Promise<Flocked> {
  const handle = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  let words: string | undefined;
  try {
    let taken = await flockExclusive(handle.fd, LOCK_GRACE_MS);
    for (let i = 0; taken === 'busy'; i++) {
      words = await fs.readFile(lockHolderPath(dir), 'utf8').catch(() => undefined);
      if (words !== undefined || i >= HOLDER_WORDS_TRIES) break;
      taken = await flockExclusive(handle.fd, 50);
    }
    if (taken === 'taken') return { kind: 'taken', handle };
  } catch (error) {
    await handle.close();
    throw error;
  }
  await handle.close();
  const lines = words?.trimEnd().split('\n');
  if (lines?.[0] !== holder) return { kind: 'busy', words };
  if (below !== '' && !lines.slice(1).includes(below))
    await writeTextAtomic(lockHolderPath(dir), [...lines, below].join('\n'));
  return { kind: 'ours' };
}
const HOLDER_WORDS_TRIES = 20;

/**
 * The words of a holder of an ancestor of `dir` (up to `top`, the machine's root) that stands
 * for `wanted` — its words' later lines name it, or it has none (an older baton: any) — while
 * that lock is held by another than `self`; undefined when there is none.
 */
async function heldAbove(
  dir: string,
  wanted: string,
  top: string,
  self: string | undefined,
): Promise<string | undefined> {
  for (let a = dir; a !== top && isWithin(path.dirname(a), top);) {
    a = path.dirname(a);
    // Only words this user or root wrote (remote-scripts.ts, HELD_ABOVE, says why).
    const owner = await fs.stat(lockHolderPath(a)).then(
      (st) => (st.isFile() ? st.uid : -1),
      () => -1,
    );
    if (owner !== process.getuid?.() && owner !== 0) continue;
    const said = await fs.readFile(lockHolderPath(a), 'utf8').catch(() => undefined);
    if (said === undefined) continue;
    const [first = '', ...below] = said.trimEnd().split('\n');
    if (first === self || (below.length > 0 && !below.includes(path.relative(a, wanted)))) continue;
    if ((await heldNow(a)) !== undefined) return said;
  }
  return undefined;
}

const isWithin = (p: string, top: string) => p === top || p.startsWith(`${top}${path.sep}`);

/** Lets the flock go at once (see flockHeldElsewhere), then closes. */
async function closeLock(handle: FileHandle): Promise<void> {
  try {
    await flockRelease(handle.fd);
  } finally {
    await handle.close();
  }
}

/**
 * The provider's directory, or (never delivered to yet) its nearest ancestor that exists, no
 * higher than the machine's root: taking the lock creates nothing, so a refused rotation leaves
 * the machine exactly as it was.
 */
async function nearestDirectory(dir: string, top: string): Promise<string> {
  for (let d = dir; ; d = path.dirname(d)) {
    const st = await fs.stat(d).catch(() => undefined);
    if (st?.isDirectory() || d === top || !isWithin(path.dirname(d), top)) return d;
  }
}

/** '' when the flock of `dir` is held by another description now (its words are read by the caller), undefined when free or no such directory. */
async function heldNow(dir: string): Promise<'' | undefined> {
  const handle = await fs
    .open(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW)
    .catch(() => undefined);
  if (!handle) return undefined;
  try {
    return (await flockHeldElsewhere(handle.fd)) ? '' : undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Who holds the lock of `dir` now ('' unsaid), or undefined when it is free: its own flock, or
 * an ancestor's held for it (a holder that took the lock before `dir` existed; see takeLock).
 */
async function lockHolderNow(dir: string, top: string): Promise<string | undefined> {
  if ((await heldNow(dir)) !== undefined) {
    const said = await fs.readFile(lockHolderPath(dir), 'utf8').catch(() => '');
    return said.split('\n')[0]!;
  }
  return (await heldAbove(dir, dir, top, undefined))?.split('\n')[0];
}

/** A record's text, whole or not at all: temp (0600) → fsync → rename → fsync dir. */
async function writeTextAtomic(target: string, text: string): Promise<void> {
  await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  const temp = `${target}.tmp.${randomBytes(4).toString('hex')}`;
  await writeExclusive(temp, Buffer.from(`${text}\n`), 0o600);
  try {
    await renameDurably(temp, target);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
}

/** temp (O_EXCL, 0600) → write → fsync → rename → fsync dir; parents created 0700. */
async function writeAtomic(target: string, file: StagedFile): Promise<void> {
  await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  // The temp name is `<role>.next.tmp.<random>`: unstage and the provisioner know that shape.
  const temp = `${target}.tmp.${randomBytes(4).toString('hex')}`;
  await writeExclusive(temp, Buffer.from(file.secret.reveal()), 0o600);
  try {
    await renameDurably(temp, target);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
}

async function digestOf(file: string) {
  try {
    return secretDigest(await fs.readFile(file));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
