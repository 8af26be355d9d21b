import { chmodSync, copyFileSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import {
  installAuthority,
  mintAuthority,
  readAuthorityFiles,
  retireAuthority,
  rotateAuthority,
  withAuthorityLock,
  type LocalAuthority,
} from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import {
  authorityTempDir,
  fingerprintOfFiles,
  makeAuthority,
  TEST_DEPLOYMENT,
} from '../helpers/authority.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';

export const DEP = TEST_DEPLOYMENT;

const cleanups: Array<() => void> = [];
export function cleanupAll(): void {
  while (cleanups.length) cleanups.pop()!();
}

/** A state dir holding a real authority (optionally mid-overlap), removed after the test. */
export async function authorityDir(options: { rotated?: boolean; deployment?: string } = {}) {
  const made = await makeAuthority(options);
  cleanups.push(made.cleanup);
  return made;
}

/** A state dir with only ca.lock in it (what any locked operation leaves), removed after the test. */
export async function emptyStateDir(): Promise<string> {
  const temp = authorityTempDir();
  cleanups.push(temp.cleanup);
  const stateDir = path.join(temp.dir, 'state');
  await withAuthorityLock(stateDir, async () => {});
  return stateDir;
}

export function ca(stateDir: string, name: string): string {
  return path.join(stateDir, 'ca', name);
}

export function copy(from: string, to: string, mode?: number): void {
  copyFileSync(from, to);
  if (mode !== undefined) chmodSync(to, mode);
}

/**
 * Every operation that writes, run against `stateDir`: each must refuse with BatonError
 * ('refused'), say `mentions` in its message, and leave the state dir byte-for-byte as it was.
 */
export async function expectEveryWriterRefuses(
  stateDir: string,
  mentions: Array<string | RegExp>,
): Promise<void> {
  const files = await mintAuthority(DEP);
  const fingerprint = await fingerprintOfFiles(files);
  const writers: Record<string, () => Promise<unknown>> = {
    rotate: () => rotateAuthority(stateDir, DEP),
    retire: () => retireAuthority(stateDir, DEP),
    publish: () => withAuthorityLock(stateDir, () => readAuthorityFiles(stateDir, DEP)),
    install: () => withAuthorityLock(stateDir, () => installAuthority(stateDir, DEP, files, fingerprint)),
  };
  for (const [name, run] of Object.entries(writers)) {
    const before = snapshotDir(stateDir);
    const error = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error, `${name} must refuse`).toBeInstanceOf(BatonError);
    expect((error as BatonError).code, `${name}: ${(error as Error).message}`).toBe('refused');
    for (const m of mentions) {
      if (typeof m === 'string') expect((error as BatonError).message, name).toContain(m);
      else expect((error as BatonError).message, name).toMatch(m);
    }
    expect((error as BatonError).message, name).toContain('Nothing was written.');
    expect(snapshotDir(stateDir), `${name} changed the state dir`).toEqual(before);
  }
}

export function expectBlocked(
  local: LocalAuthority,
  problem: string,
): Extract<LocalAuthority, { state: 'blocked' }> {
  expect(local.state, local.state === 'blocked' ? local.error.message : '').toBe('blocked');
  const b = local as Extract<LocalAuthority, { state: 'blocked' }>;
  expect(b.problem, b.error.message).toBe(problem);
  expect(b.error.code).toBe('refused');
  expect(b.error.next).toBeTruthy();
  return b;
}

export function expectWhole(local: LocalAuthority): Extract<LocalAuthority, { state: 'whole' }> {
  expect(local.state, local.state === 'blocked' ? local.error.message : '').toBe('whole');
  return local as Extract<LocalAuthority, { state: 'whole' }>;
}

/** Every private key's bytes anywhere below `dir` (by content, PEM "EC PRIVATE KEY" or "PRIVATE KEY"). */
export function privateKeysBelow(dir: string): Set<string> {
  const keys = new Set<string>();
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.isFile()) {
        const text = readFileSync(p, 'latin1');
        if (/-----BEGIN (EC )?PRIVATE KEY-----/.test(text)) keys.add(text);
      }
    }
  };
  walk(dir);
  return keys;
}
