import { constants } from 'node:fs';
import { link, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Random hex for a temp name. node:crypto is loaded on the first write, not with this module:
 * `status --json` imports the stores and writes nothing.
 */
export function randomHex(bytes: number): string {
  return process.getBuiltinModule('node:crypto').randomBytes(bytes).toString('hex');
}

/** Called after each durable step; crash tests stop an operation here. */
export type StepHook = (step: string) => void | Promise<void>;

/** Makes the directory entries below `dir` (creations, renames, removals) durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Creates `dir/name` holding exactly `bytes`, or fails if the name exists: temp file (O_EXCL)
 * → write → fsync → link to the final name (EEXIST instead of clobbering) → unlink the temp →
 * fsync the directory. A crash leaves either no file or the whole file under the final name,
 * never a short one — a short key would read as "unparsable" and block the fleet's authority.
 */
export async function createFileDurably(
  dir: string,
  name: string,
  bytes: Uint8Array,
  mode: number,
): Promise<void> {
  const temp = path.join(dir, `.${name}.tmp-${randomHex(6)}`);
  try {
    await writeExclusive(temp, bytes, mode);
  } catch (error) {
    // A full disk (ENOSPC) fails the write after the create: the short temp is this call's own
    // litter, and a secret's, so it goes; the error is the caller's to report.
    await unlink(temp).catch(() => undefined);
    throw error;
  }
  try {
    await link(temp, path.join(dir, name));
  } finally {
    await unlink(temp);
  }
  await fsyncDir(dir);
}

/** O_EXCL create → write → fsync, with `mode` exactly (umask does not get a say). */
export async function writeExclusive(file: string, bytes: Uint8Array, mode: number): Promise<void> {
  const handle = await open(
    file,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
    mode,
  );
  try {
    await handle.chmod(mode);
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** rename → fsync dir: the new name is durable before the caller takes its next step. */
export async function renameDurably(from: string, to: string): Promise<void> {
  await rename(from, to);
  await fsyncDir(path.dirname(to));
}

/** unlink → fsync dir. */
export async function removeDurably(file: string): Promise<void> {
  await unlink(file);
  await fsyncDir(path.dirname(file));
}
