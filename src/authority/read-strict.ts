import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { MAX_FILE_BYTES } from './layout.js';
import { errorCode } from '../fs/system-error.js';

export type FileRead =
  | { readonly kind: 'absent' }
  | { readonly kind: 'bytes'; readonly bytes: Uint8Array }
  /** Present but refused before its content was trusted: says why, in words. */
  | { readonly kind: 'unsafe'; readonly reason: string }
  /** Could not be read. NEVER counts as absent. */
  | { readonly kind: 'error'; readonly reason: string };

/**
 * Reads one authority file, checking the descriptor actually read (not the path, which could
 * be swapped between a stat and an open): opened with O_NOFOLLOW (a symlink is refused, not
 * followed) and O_NONBLOCK (a FIFO planted in ca/ cannot hang the reader), then fstat: a
 * regular file, at most 1 MiB, and for a `secret` no group/other permission bits.
 */
export async function readStrict(file: string, options: { readonly secret: boolean }): Promise<FileRead> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'unsafe', reason: 'is a symbolic link' };
    return { kind: 'error', reason: code ?? String(error) };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile()) return { kind: 'unsafe', reason: 'is not a regular file' };
    const mode = stat.mode & 0o777;
    if (options.secret && (mode & 0o077) !== 0) {
      return {
        kind: 'unsafe',
        reason: `is readable or writable by group or others (mode 0${mode.toString(8)})`,
      };
    }
    if (stat.size > MAX_FILE_BYTES) return { kind: 'unsafe', reason: 'is larger than 1 MiB' };
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.alloc(Math.min(Math.max(stat.size, 4096), MAX_FILE_BYTES) + 1);
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      // The size can grow after the fstat: the limit holds for what is read, not what was stat'ed.
      if (total > MAX_FILE_BYTES) return { kind: 'unsafe', reason: 'is larger than 1 MiB' };
    }
    return { kind: 'bytes', bytes: new Uint8Array(Buffer.concat(chunks, total)) };
  } catch (error) {
    return { kind: 'error', reason: errorCode(error) };
  } finally {
    await handle.close();
  }
}
