/**
 * The `local` transport: `address` is a directory that plays the machine's root (DESIGN.md
 * §6), so a drill or a test runs the same delivery code as production against real files.
 * A machine whose directory is missing, or holds UNREACHABLE_MARKER, does not resolve — the
 * way a drill takes a holder off the network.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { renameDurably, writeExclusive } from '../fs/durable-write.js';
import { secretDigest } from '../mesh/digest.js';
import { STAGED_SUFFIX } from '../mesh/transport.js';
import { TransportError, type FileDigests, type StagedFile, type Transport } from '../mesh/transport.js';

export const UNREACHABLE_MARKER = '.baton-unreachable';

export interface LocalTransportOptions {
  /** Added before every operation: how a benchmark makes a local machine as slow as a remote one. */
  readonly latencyMs?: number;
}

export function localTransport(machine: string, root: string, options: LocalTransportOptions = {}): Transport {
  const at = (p: string) => path.join(root, p);
  const delay = () => (options.latencyMs ? new Promise<void>((r) => setTimeout(r, options.latencyMs)) : Promise.resolve());
  const reachable = async () => {
    await delay();
    let isDir = false;
    try {
      isDir = (await fs.stat(root)).isDirectory();
    } catch {
      throw new TransportError(machine, `its directory ${root} does not exist`);
    }
    if (!isDir) throw new TransportError(machine, `${root} is not a directory`);
    if (await exists(path.join(root, UNREACHABLE_MARKER))) throw new TransportError(machine, `marked unreachable (${path.join(root, UNREACHABLE_MARKER)})`);
    try {
      await fs.access(root, constants.W_OK);
    } catch {
      throw new TransportError(machine, `its directory ${root} is not writable`);
    }
  };
  const wrap = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    await reachable();
    try {
      return await fn();
    } catch (error) {
      if (error instanceof TransportError) throw error;
      const e = error as NodeJS.ErrnoException;
      throw new TransportError(machine, `${what} failed: ${e.code ?? ''} ${e.path ? path.relative(root, e.path) : ''}`.trim());
    }
  };
  return {
    machine,
    resolve: reachable,
    stage: (files) => wrap('staging', async () => {
      const landed = [];
      for (const file of files) {
        await writeAtomic(at(file.path + STAGED_SUFFIX), file);
        landed.push(await digestOf(at(file.path + STAGED_SUFFIX)));
      }
      return landed;
    }),
    commit: (paths) => wrap('commit', async () => {
      for (const p of paths) {
        await renameDurably(at(p + STAGED_SUFFIX), at(p));
      }
    }),
    unstage: (paths) => wrap('unstage', async () => {
      for (const p of paths) {
        const staged = at(p + STAGED_SUFFIX);
        await fs.rm(staged, { force: true });
        const dir = path.dirname(staged);
        const base = path.basename(staged);
        const names = await fs.readdir(dir).catch(() => [] as string[]);
        for (const name of names) if (name.startsWith(`${base}.tmp.`)) await fs.rm(path.join(dir, name), { force: true });
      }
    }),
    digests: (paths) => wrap('reading digests', async () => {
      const out: FileDigests[] = [];
      for (const p of paths) out.push({ live: await digestOf(at(p)), next: await digestOf(at(p + STAGED_SUFFIX)) });
      return out;
    }),
    readTexts: (paths) => wrap('reading', async () => {
      const out: (string | undefined)[] = [];
      for (const p of paths) out.push(await fs.readFile(at(p), 'utf8').catch(() => undefined));
      return out;
    }),
  };
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

async function exists(file: string): Promise<boolean> {
  try {
    await fs.lstat(file);
    return true;
  } catch {
    return false;
  }
}
