/**
 * The provisioner's receipts, `<mesh_dir>/provides/<provider>/.applied/<role>`: the digest of
 * the credential the database accepted (never the secret), which `baton mesh rotate` reads as
 * "applied". Written only AFTER the database accepted the statement, and atomically (temp file
 * → fsync → rename → fsync dir), so a reader sees the previous receipt or the new one — never
 * a torn one that would read as "not applied" and send an operator chasing a healthy provider.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { renameDurably, writeExclusive } from '../fs/durable-write.js';
import { formatReceipt, parseReceipt, RECEIPTS_DIR, type Receipt } from '../mesh/digest.js';

export function receiptsDir(deliveredDir: string): string {
  return path.join(deliveredDir, RECEIPTS_DIR);
}

/** The receipt last written for `role`, or undefined (none, or unreadable: "not applied"). */
export function readReceipt(deliveredDir: string, role: string): Receipt | undefined {
  try {
    const receipt = parseReceipt(readFileSync(path.join(receiptsDir(deliveredDir), role), 'utf8'));
    return receipt?.role === role ? receipt : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A temp (a receipt's, an applied verifier's) older than this was left by a provisioner killed
 * mid-write (a write takes milliseconds, and one provisioner per provider runs): it is removed.
 */
export const STALE_TEMP_MS = 30_000;

/** The name `writeReceipt` gives its temp file: `.<role>.tmp-<12 hex>`. */
export function isTempReceipt(name: string): boolean {
  return /^\..+\.tmp-[0-9a-f]{12}$/.test(name);
}

export async function writeReceipt(deliveredDir: string, receipt: Receipt): Promise<void> {
  const dir = receiptsDir(deliveredDir);
  // mkdir's mode is filtered by the umask; 0700 is set explicitly the first time.
  if ((await mkdir(dir, { recursive: true, mode: 0o700 })) !== undefined) await chmod(dir, 0o700);
  const temp = path.join(dir, `.${receipt.role}.tmp-${randomBytes(6).toString('hex')}`);
  try {
    await writeExclusive(temp, Buffer.from(formatReceipt(receipt)), 0o600);
    await renameDurably(temp, path.join(dir, receipt.role));
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
