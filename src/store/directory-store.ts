/**
 * The directory store (`file:///dir`, the embedded default and the drills' store). Its
 * preconditions are real, not emulated: create-only is a link(2) that fails if the name
 * exists, and if-match compares the content digest under an flock on `<dir>/.authority.lock`
 * — so two controllers sharing a directory cannot overwrite each other blind, exactly as
 * against S3 with conditional writes.
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { fsyncDir, randomHex, writeExclusive } from '../fs/durable-write.js';
import { BatonError, type StoreFailureReason } from '../errors.js';
import { MAX_DOCUMENT_BYTES, OversizeError, oversizeError } from './body-limit.js';
import { contentEtag } from './etag.js';
import { probeConditionalWrites } from './probe.js';
import { storeChangedError } from './store-changed.js';
import {
  NEIGHBOUR_LIMIT,
  NEIGHBOUR_MAX_BYTES,
  type ConditionalWriteCheck,
  type NeighbourDocument,
  type Precondition,
  type Store,
  type StoredDocument,
} from './store.js';
import { DOCUMENT_FILE } from './store-url.js';

const LOCK_FILE = '.authority.lock';
/** How long a put waits for another writer's lock before giving up (it is held for one write). */
const LOCK_WAIT_MS = 5_000;

export class DirectoryStore implements Store {
  readonly location: string;

  constructor(readonly dir: string) {
    this.location = path.join(dir, DOCUMENT_FILE);
  }

  async get(): Promise<StoredDocument | undefined> {
    return this.#read(DOCUMENT_FILE);
  }

  /** The documents of sibling directories of this one; an unreadable parent is []. */
  async neighbours(): Promise<readonly NeighbourDocument[]> {
    const parent = path.dirname(this.dir);
    const found: NeighbourDocument[] = [];
    try {
      for (const entry of (await fs.readdir(parent, { withFileTypes: true })).sort((a, b) =>
        a.name.localeCompare(b.name),
      )) {
        if (found.length >= NEIGHBOUR_LIMIT) break;
        const dir = path.join(parent, entry.name);
        if (!entry.isDirectory() || dir === this.dir) continue;
        const file = path.join(dir, DOCUMENT_FILE);
        const st = await fs.lstat(file).catch(() => undefined);
        if (!st?.isFile() || st.size > NEIGHBOUR_MAX_BYTES) continue;
        found.push({ location: file, body: new Uint8Array(await fs.readFile(file)) });
      }
    } catch {
      return found;
    }
    return found;
  }

  async put(body: Uint8Array, precondition?: Precondition): Promise<{ readonly etag: string }> {
    await this.#write(DOCUMENT_FILE, body, precondition);
    return { etag: contentEtag(body) };
  }

  async checkConditionalWrites(): Promise<ConditionalWriteCheck> {
    return probeConditionalWrites({
      location: this.dir,
      write: async (name, body, precondition) => {
        await this.#write(name, body, precondition);
        return { etag: contentEtag(body) };
      },
      remove: async (name) => {
        await fs.rm(path.join(this.dir, name), { force: true });
        await fsyncDir(this.dir);
      },
    });
  }

  async #read(name: string): Promise<StoredDocument | undefined> {
    const file = path.join(this.dir, name);
    let handle: fs.FileHandle;
    try {
      // O_NOFOLLOW: the document is a regular file this store wrote, never a link elsewhere.
      handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw this.#failed(`The published document could not be opened (${errnoOf(error)})`, file, error);
    }
    try {
      const st = await handle.stat();
      if (!st.isFile())
        throw this.#failed('The published document is not a regular file', file, undefined, 'not-a-file');
      if (st.size > MAX_DOCUMENT_BYTES) throw oversizeError(file, st.size, await streamedEtag(handle));
      const body = new Uint8Array(await handle.readFile());
      if (body.length > MAX_DOCUMENT_BYTES) throw oversizeError(file, body.length, contentEtag(body));
      return { body, etag: contentEtag(body) };
    } catch (error) {
      if (error instanceof BatonError) throw error;
      throw this.#failed(`The published document could not be read (${errnoOf(error)})`, file, error);
    } finally {
      await handle.close();
    }
  }

  async #write(name: string, body: Uint8Array, precondition: Precondition | undefined): Promise<void> {
    const target = path.join(this.dir, name);
    try {
      await fs.mkdir(this.dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      throw this.#failed(`The store directory could not be created (${errnoOf(error)})`, this.dir, error);
    }
    await this.#withLock(async () => {
      if (precondition?.kind === 'if-match') {
        // An oversize object is replaced only if-match on its own ETag (the way out of it).
        const current = await this.#read(name).catch((error: unknown) => {
          if (error instanceof OversizeError && error.etag !== undefined) return { etag: error.etag };
          throw error;
        });
        if (current?.etag !== precondition.etag) {
          throw storeChangedError(target, current ? 'replaced' : 'removed');
        }
      }
      const temp = path.join(this.dir, `.${name}.tmp-${randomHex(6)}`);
      try {
        await writeExclusive(temp, body, 0o600);
        if (precondition?.kind === 'create-only') {
          // link(2) fails with EEXIST if anything holds the name: an atomic create-only even
          // against a writer that does not take the lock.
          try {
            await fs.link(temp, target);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
              throw storeChangedError(target, 'published-meanwhile');
            }
            throw error;
          }
        } else {
          await fs.rename(temp, target);
        }
        await fsyncDir(this.dir);
      } catch (error) {
        if (error instanceof BatonError) throw error;
        throw this.#failed(`The published document could not be written (${errnoOf(error)})`, target, error);
      } finally {
        await fs.rm(temp, { force: true }).catch(() => undefined);
      }
    });
  }

  async #withLock<T>(fn: () => Promise<T>): Promise<T> {
    const { flock } = await import('fs-ext');
    const lockFile = path.join(this.dir, LOCK_FILE);
    let handle: fs.FileHandle;
    try {
      handle = await fs.open(lockFile, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    } catch (error) {
      throw this.#failed(`The store's lock file could not be opened (${errnoOf(error)})`, lockFile, error);
    }
    try {
      const tryLock = () =>
        new Promise<boolean>((resolve, reject) =>
          flock(handle.fd, 'exnb', (error) =>
            error
              ? error.code === 'EWOULDBLOCK' || error.code === 'EAGAIN'
                ? resolve(false)
                : reject(error)
              : resolve(true),
          ),
        );
      const deadline = Date.now() + LOCK_WAIT_MS;
      while (!(await tryLock())) {
        if (Date.now() > deadline) {
          throw new BatonError('failed', {
            what: `Another writer has held the store's lock for more than ${LOCK_WAIT_MS / 1000} seconds.`,
            where: lockFile,
            next: 'Find the process holding it (fuser/lsof on the lock file) and try again.',
            changed: 'Nothing was written.',
            reason: 'lock-busy',
          });
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return await fn();
    } finally {
      // Closing the descriptor releases the flock.
      await handle.close();
    }
  }

  #failed(what: string, where: string, cause?: unknown, reason: StoreFailureReason = 'io'): BatonError {
    return new BatonError('failed', {
      what: `${what}.`,
      where,
      next: 'Check that the directory exists, is on a local file system and is writable by this user.',
      changed: 'Nothing was written.',
      reason,
      ...(cause === undefined ? {} : { cause }),
    });
  }
}

function errnoOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
}

/** The content ETag of a file too large to buffer, hashed in chunks: the way out writes if-match on it. */
async function streamedEtag(handle: fs.FileHandle): Promise<string> {
  const hash = process.getBuiltinModule('node:crypto').createHash('sha256');
  const chunk = Buffer.alloc(64 * 1024);
  let position = 0;
  for (;;) {
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) break;
    hash.update(chunk.subarray(0, bytesRead));
    position += bytesRead;
  }
  return `"${hash.digest('hex')}"`;
}
