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

/** A verifier record written and fsynced under a temp name, not yet in place. */
export interface PendingVerifier {
  /** Renames it into place, durably (the database took the verifier); the temp is removed if that fails. */
  commit(): Promise<void>;
  /** Removes the temp (the database did not take it, or the apply ended another way); after commit, nothing. */
  abandon(): Promise<void>;
}

/**
 * Records `applied` as `login`'s current verifier (the one before it kept), 0600, in two steps:
 * the text written and fsynced under a temp name now, BEFORE the database is asked, and renamed
 * into place by `commit` once it took the verifier. So what a rotation's window pays between
 * the database taking a password and its receipt is a rename and a directory's fsync, not the
 * record's whole write (2.4 ms on ext4, docs/benchmarks.md, "Round 15: a record and its step in
 * one request"). A temp left by a provisioner killed in between is removed once stale.
 */
export async function prepareAppliedVerifier(
  providerDir: string,
  login: string,
  applied: AppliedVerifier,
): Promise<PendingVerifier> {
  const file = appliedVerifierPath(providerDir, login);
  const dir = path.dirname(file);
  // 0700 each, set explicitly: mkdir's mode is umasked.
  for (const d of [path.dirname(dir), dir]) {
    await mkdir(d, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    await chmod(d, 0o700);
  }
  await removeStaleTemps(dir, login);
  const text = formatAppliedVerifiers(applied, await kept(file));
  const temp = path.join(dir, `.${login}.tmp-${randomBytes(6).toString('hex')}`);
  const abandon = () => rm(temp, { force: true }).catch(() => undefined);
  try {
    await writeExclusive(temp, Buffer.from(text), 0o600);
  } catch (error) {
    await abandon();
    throw error;
  }
  return {
    commit: async () => {
      try {
        await renameDurably(temp, file);
      } catch (error) {
        await abandon();
        throw error;
      }
    },
    abandon,
  };
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
