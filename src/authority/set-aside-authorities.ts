import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Fingerprint } from '../pki/fingerprint-type.js';
import { parseCertificate } from '../pki/inspect-pair.js';
import { readStrict } from './read-strict.js';

/** An authority a `sync --force` moved aside: where it sits and whose certificate it holds. */
export interface SetAsideAuthority {
  readonly dir: string;
  /** The fingerprint of its ca.crt; undefined when that cannot be read as a certificate. */
  readonly fingerprint: Fingerprint | undefined;
}

/** `ca.superseded-<UTC stamp>` or `…-<n>` (set-aside-authority.ts): never the marker copies beside them. */
const SET_ASIDE = /^ca\.superseded-(\d{8}T\d{6}Z)(?:-(\d+))?$/;

/**
 * The authorities earlier forces set aside in `stateDir`, NEWEST FIRST (by stamp, then suffix).
 * A force cut short is told by these (partial-install.ts): what it moved aside is the one thing
 * that names it, and its words name the directory rather than "restore from a backup".
 */
export async function readSetAsideAuthorities(stateDir: string): Promise<readonly SetAsideAuthority[]> {
  const names = (await readdir(stateDir).catch(() => [] as string[]))
    .map((name) => ({ name, m: SET_ASIDE.exec(name) }))
    .filter((e): e is { name: string; m: RegExpExecArray } => e.m !== null)
    .sort((a, b) => b.m[1]!.localeCompare(a.m[1]!) || Number(b.m[2] ?? 1) - Number(a.m[2] ?? 1));
  const found: SetAsideAuthority[] = [];
  for (const { name } of names) {
    const dir = path.join(stateDir, name);
    const cert = await readStrict(path.join(dir, 'ca.crt'), { secret: false });
    found.push({
      dir,
      fingerprint: cert.kind === 'bytes' ? parseCertificate(cert.bytes)?.fingerprint : undefined,
    });
  }
  return found;
}
