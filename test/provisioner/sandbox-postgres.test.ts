/**
 * The sandbox's answer to the pitfall in docs/testing.md ("PostgreSQL"): as root PostgreSQL runs as `postgres`, which
 * must be able to traverse every directory above its binaries. A project cloned under a 0700
 * directory (e.g. /root) must still get a runnable server: the binaries are copied once.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { itWithPart } from '../helpers/real-part.js';
import { postgresBinaries } from '../../src/sandbox/postgres.js';

const isRoot = process.getuid?.() === 0;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) =>
    Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

describe('postgresBinaries', () => {
  itWithPart(
    isRoot ? undefined : 'root (the postgres user only exists to switch to as root)',
    'copies binaries that sit below a directory the postgres user cannot traverse, once, and reuses the copy',
    async () => {
      const packaged = path.dirname(await postgresBinaries());
      const hidden = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-hidden-'));
      dirs.push(hidden);
      chmodSync(hidden, 0o700);
      // A hard-linked tree where the filesystem allows (cheap); a copy where it does not.
      if (spawnSync('cp', ['-al', packaged, path.join(hidden, 'native')]).status !== 0) {
        cpSync(packaged, path.join(hidden, 'native'), { recursive: true, verbatimSymlinks: true });
      }
      const source = path.join(hidden, 'native', 'bin');
      const cacheRoot = mkdtempSync(path.join(os.tmpdir(), 'baton-pg-cache-'));
      dirs.push(cacheRoot);
      chmodSync(cacheRoot, 0o755);
      const asPostgres = (bin: string) =>
        spawnSync(path.join(bin, 'postgres'), ['--version'], { ...postgresUser(), encoding: 'utf8' });
      // The precondition: from where it is, the server user cannot run it.
      expect(asPostgres(source).status).not.toBe(0);

      const bin = await postgresBinaries({ source, cacheRoot });

      expect(path.dirname(bin).startsWith(`${cacheRoot}${path.sep}baton-pg-bin-`)).toBe(true);
      const version = asPostgres(bin);
      expect(version.status).toBe(0);
      expect(version.stdout).toContain('PostgreSQL');
      expect(await postgresBinaries({ source, cacheRoot })).toBe(bin);
    },
  );
});
