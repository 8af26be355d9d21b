/**
 * The provisioner's side of the applied verifiers (src/mesh/applied-verifier.ts says what they
 * are for and who reads them): written after the database took a login's verifier and BEFORE
 * its receipt, so a controller that saw the receipt finds the verifier; and read back when a
 * credential is applied again (a roll-back), so the database gets the very verifier it had —
 * the line a pooler kept for it (or had put back) then matches the database again.
 */
import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { renameDurably, writeExclusive } from '../fs/durable-write.js';
import {
  appliedVerifierPath,
  formatAppliedVerifiers,
  parseAppliedVerifiers,
  type AppliedVerifier,
} from '../mesh/applied-verifier.js';
import type { SecretDigest } from '../mesh/digest.js';
import { isTempReceipt, STALE_TEMP_MS } from './receipts.js';

async function kept(file: string): Promise<AppliedVerifier[]> {
  try {
    return parseAppliedVerifiers(await readFile(file, 'utf8'));
  } catch {
    return []; // none kept yet (or unreadable): a new verifier is computed, as before
  }
}

/** The verifier kept for exactly this credential of `login`, if any. */
export async function keptVerifier(
  providerDir: string,
  login: string,
  digest: SecretDigest,
): Promise<string | undefined> {
  return (await kept(appliedVerifierPath(providerDir, login))).find((k) => k.digest === digest)?.verifier;
}

/** Records `applied` as `login`'s current verifier (the one before it kept): temp, fsync, rename, 0600. */
export async function recordAppliedVerifier(
  providerDir: string,
  login: string,
  applied: AppliedVerifier,
): Promise<void> {
  const file = appliedVerifierPath(providerDir, login);
  const dir = path.dirname(file);
  // 0700 each, set explicitly: mkdir's mode is umasked.
  for (const d of [path.dirname(dir), dir]) {
    await mkdir(d, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    await chmod(d, 0o700);
  }
  const text = formatAppliedVerifiers(applied, await kept(file));
  const temp = path.join(dir, `.${login}.tmp-${randomBytes(6).toString('hex')}`);
  try {
    await writeExclusive(temp, Buffer.from(text), 0o600);
    await renameDurably(temp, file);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined);
    throw error;
  }
  await removeStaleTemps(dir, login);
}

/** `login`'s temps a provisioner killed mid-write left (a verifier each): nothing else removes them. */
async function removeStaleTemps(dir: string, login: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(dir).catch(() => [])) {
    if (!name.startsWith(`.${login}.tmp-`) || !isTempReceipt(name)) continue;
    const file = path.join(dir, name);
    const st = await lstat(file).catch(() => undefined);
    if (st && now - st.mtimeMs >= STALE_TEMP_MS) await rm(file, { force: true }).catch(() => undefined);
  }
}
