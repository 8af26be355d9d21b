/**
 * Pairs this user has already proved an authority of a deployment (inspectPair's whole check
 * passed), remembered by a SHA-256 of exactly the bytes checked, so `status --json` — run by a
 * monitor every minute — does not load OpenSSL to prove again what the same bytes proved last
 * time. The check is a pure function of (deployment, key, certificate): the same bytes cannot
 * give another answer. Only a pass is remembered; any other byte, or another deployment, is
 * checked in full. Store content cannot plant an entry: that takes writing this user's cache.
 *
 * Each entry is an empty file named by the digest, in `$XDG_CACHE_HOME/baton/checked-pairs/`
 * (default `~/.cache`), 0700/0600. A cache that cannot be read or written only costs the check.
 * The name is a one-way digest of the key among the rest, never the key.
 */
import { existsSync, mkdirSync, openSync, closeSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sha256Hex } from '../sha256.js';

/** Changes when what inspectPair checks changes: entries of another version are never read. */
const CHECK_VERSION = 'baton.checked-pair/1';

/** Past this many entries the directory is emptied when the next is written: a cache, not a log. */
const MAX_ENTRIES = 256;

function cacheDir(): string | undefined {
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg !== undefined && path.isAbsolute(xdg)) return path.join(xdg, 'baton', 'checked-pairs');
  let home: string;
  try {
    home = os.homedir();
  } catch {
    return undefined;
  }
  return home ? path.join(home, '.cache', 'baton', 'checked-pairs') : undefined;
}

/** Length-prefixed, so no two inputs share an encoding. */
function entryName(key: Uint8Array, cert: Uint8Array, deployment: string): string {
  const parts = [new TextEncoder().encode(CHECK_VERSION), new TextEncoder().encode(deployment), key, cert];
  const total = parts.reduce((n, p) => n + 4 + p.length, 0);
  const bytes = new Uint8Array(total);
  const view = new DataView(bytes.buffer);
  let at = 0;
  for (const part of parts) {
    view.setUint32(at, part.length);
    bytes.set(part, at + 4);
    at += 4 + part.length;
  }
  return sha256Hex(bytes);
}

/** Whether exactly these bytes passed the whole check for `deployment` before. */
export function wasChecked(key: Uint8Array, cert: Uint8Array, deployment: string): boolean {
  const dir = cacheDir();
  if (dir === undefined) return false;
  try {
    return existsSync(path.join(dir, entryName(key, cert, deployment)));
  } catch {
    return false;
  }
}

/** Records that these bytes passed the whole check; never fails (a cache). */
export function rememberChecked(key: Uint8Array, cert: Uint8Array, deployment: string): void {
  const dir = cacheDir();
  if (dir === undefined) return;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (readdirSync(dir).length >= MAX_ENTRIES)
      for (const name of readdirSync(dir)) rmSync(path.join(dir, name), { force: true });
    closeSync(openSync(path.join(dir, entryName(key, cert, deployment)), 'a', 0o600));
  } catch {
    // Not writable (a read-only home, a full disk): the next run checks in full again.
  }
}
