import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * path → "<type> <mode> <sha256>" for every entry below `dir` (links not followed). A refusal
 * test takes one before and one after and asserts they are equal: "nothing changed on disk".
 */
export function snapshotDir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string, rel: string) => {
    let st;
    try {
      st = lstatSync(abs);
    } catch {
      return;
    }
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) out[rel || '.'] = `link ${mode} ${readlinkSync(abs)}`;
    else if (st.isDirectory()) {
      out[rel || '.'] = `dir ${mode}`;
      for (const name of readdirSync(abs).sort()) walk(path.join(abs, name), rel ? `${rel}/${name}` : name);
    } else if (st.isFile()) {
      out[rel || '.'] = `file ${mode} ${createHash('sha256').update(readFileSync(abs)).digest('hex')}`;
    } else out[rel || '.'] = `other ${mode}`;
  };
  walk(dir, '');
  return out;
}

/** A fresh temp dir, and a function that removes it. */
export function makeTempDir(prefix = 'baton-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * A snapshot without the `.<role>.rolled-back` files a mesh roll-back keeps beside a provider
 * end (the password it took away, which the database may hold): "as before" apart from those.
 */
export function withoutRolledBack(snapshot: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot).filter(([rel]) => !rel.endsWith('.rolled-back')));
}

/**
 * A snapshot without the `.<name>.rotation` records a rotation leaves on the machines (its
 * intent and ownership, src/mesh/intent.ts): "as before" apart from the rotation's own word on
 * what became of it, which the caller checks with `rotationRecords`.
 */
export function withoutRotationRecords(snapshot: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot).filter(([rel]) => !rel.endsWith('.rotation')));
}

/** Every rotation record below `dir`, parsed: relative path → its JSON. */
export function rotationRecords(dir: string): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const rel of Object.keys(snapshotDir(dir)))
    if (rel.endsWith('.rotation'))
      out[rel] = JSON.parse(readFileSync(path.join(dir, rel), 'utf8')) as Record<string, unknown>;
  return out;
}

/** The phase of each provider intent below `dir` (consumer records have none): pair → phase. */
export function intentPhases(dir: string): Record<string, unknown> {
  return Object.fromEntries(
    Object.values(rotationRecords(dir))
      .filter((r) => r.end === 'provides')
      .map((r) => [r.pair, r.phase]),
  );
}

/** A snapshot without the provider lock's holder words (`.baton.lock.holder`), there while a rotation holds the lock. */
export function withoutLockHolder(snapshot: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(snapshot).filter(([rel]) => !rel.endsWith('.baton.lock.holder')));
}
