/**
 * `npm start` builds before the drill: the build says what it is doing before the seconds it
 * takes (one line, on stderr), and says nothing when dist/ was built from the same inputs. Run
 * in a scratch copy of the checkout's layout (sources copied, node_modules linked) so the
 * real dist/ is never rewritten under the other tests.
 */
import { spawn } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  utimesSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/bundle-script.js';

/** The build's stderr, with the moment its first line came relative to the run's end. */
function build(root: string): Promise<{ code: number | null; stderr: string; firstLineBeforeExit: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(root, 'scripts/build.mjs')], {
      cwd: root,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    let firstLineBeforeExit = false;
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
      if (child.exitCode === null && stderr.includes('\n')) firstLineBeforeExit = true;
    });
    child.once('close', (code) => resolve({ code, stderr, firstLineBeforeExit }));
  });
}

describe('the build before the drill', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'baton-build-says-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('says what it does before building, then nothing while dist/ is up to date', async () => {
    // Copied: the build checks its entry is src/program.ts as esbuild names it (not through a link).
    for (const entry of ['src', 'components', 'bin', 'package.json'])
      cpSync(path.join(REPO, entry), path.join(root, entry), { recursive: true });
    symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
    mkdirSync(path.join(root, 'scripts'));
    copyFileSync(path.join(REPO, 'scripts/build.mjs'), path.join(root, 'scripts/build.mjs'));

    const first = await build(root);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/^baton: building dist\/ \(esbuild, then a code cache; about 10–30 s\)…\n$/);
    expect(first.firstLineBeforeExit).toBe(true);
    expect(existsSync(path.join(root, 'dist/app.cjs'))).toBe(true);

    const again = await build(root);
    expect(again).toEqual({ code: 0, stderr: '', firstLineBeforeExit: false });

    // An edited input is built again (and said again).
    const edited = path.join(root, 'scripts/build.mjs');
    utimesSync(edited, new Date(), new Date(Date.now() + 5_000));
    const rebuilt = await build(root);
    expect(rebuilt.code, rebuilt.stderr).toBe(0);
    expect(rebuilt.stderr).toContain('baton: building dist/');
  }, 240_000);
});
