/**
 * The remote scripts as a holder runs them: a real `sh` on real files, with a PATH that holds
 * only the tools a holder has, over the sequence of operations a rotation makes. One agent
 * process (its `files` mode) does any number of paths, with one sha256sum per operation however
 * many paths it is given; a machine without perl is told so by name, having changed nothing.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentBootstrap } from '../../src/transport/remote-scripts.js';

/** Each operation as ssh hands it to the holder's shell: the bootstrap, the mode and the op. */
const op = (name: string) => ({ op: name });
const COMMIT = op('commit');
const DIGESTS = op('digests');
const DISCARD_PREVIOUS = op('discard');
const KEEP_PREVIOUS = op('keep');
const READ_TEXTS = op('texts');
const STAGE = op('stage');
const WRITE_RECORDS = op('records');
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

const TOOLS = ['sh', 'cut', 'mkdir', 'mv', 'sync', 'stat', 'sed', 'head', 'tr', 'flock', 'ln', 'rm', 'true'];
const tmp = makeTempDir('baton-scripts-');
afterAll(() => tmp.cleanup());

/** A bin directory with the tools the scripts use (perl only if asked) and a counting sha256sum. */
function binDir(name: string, withPerl: boolean): { path: string; sha256sumCalls: () => number } {
  const bin = path.join(tmp.dir, name);
  mkdirSync(bin);
  const which = (tool: string) =>
    execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
  for (const tool of [...TOOLS, ...(withPerl ? ['perl'] : [])])
    symlinkSync(tool === 'true' ? '/bin/true' : which(tool), path.join(bin, tool));
  const log = path.join(bin, 'sha256sum.calls');
  writeFileSync(log, '');
  writeFileSync(
    path.join(bin, 'sha256sum'),
    `#!/bin/sh\necho x >> '${log}'\nexec ${which('sha256sum')} "$@"\n`,
  );
  chmodSync(path.join(bin, 'sha256sum'), 0o755);
  return { path: bin, sha256sumCalls: () => readFileSync(log, 'utf8').split('\n').length - 1 };
}

function runScript(bin: string, script: { op: string }, args: readonly string[], input = ''): string {
  try {
    return execFileSync('sh', ['-c', agentBootstrap(), 'baton-agent', 'files', script.op, ...args], {
      input,
      env: { PATH: bin, LC_ALL: 'C' },
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    const failed = error as { status: number; stderr: string };
    return `exit ${failed.status}: ${failed.stderr.trim()}`;
  }
}

const ROLES = 6;

/** The same sequence a rotation (and its readers) makes, then the refusals: every answer, and the files. */
async function sequence() {
  const bin = binDir('bin', true);
  const root = path.join(tmp.dir, 'mesh');
  const dir = path.join(root, 'provides', 'pg-main');
  const paths = Array.from({ length: ROLES }, (_, i) => path.join(dir, `app_${i}`));
  const records = paths.map((p) => path.join(dir, `.${path.basename(p)}.rotation`));
  const answers: Record<string, string> = {};
  const calls: Record<string, number> = {};
  const step = (name: string, script: { op: string }, args: readonly string[], input = '') => {
    const before = bin.sha256sumCalls();
    // The live file's mtime (seconds) differs from run to run.
    answers[name] = runScript(bin.path, script, args, input)
      .replaceAll(root, 'ROOT')
      .replace(/^(@baton \S+ \S+ )\d+ /gm, '$1MTIME ');
    calls[name] = bin.sha256sumCalls() - before;
  };
  step('digests, nothing there', DIGESTS, paths);
  step('stage', STAGE, paths, paths.map((_, i) => `secret ${i} with a \\ and a 'quote'\n`).join(''));
  step('records', WRITE_RECORDS, records, records.map((_, i) => `{"phase":"prepared","i":${i}}\n`).join(''));
  step('digests, staged', DIGESTS, paths);
  step('keep, nothing live', KEEP_PREVIOUS, paths);
  step('commit', COMMIT, paths);
  step('stage again, logins', STAGE, paths, paths.map((_, i) => `user=app_${i} password='p${i}'\n`).join(''));
  step('commit two', COMMIT, paths.slice(0, 2));
  step('keep, some live', KEEP_PREVIOUS, paths);
  step('keep again', KEEP_PREVIOUS, paths);
  step('texts', READ_TEXTS, [...records, path.join(dir, 'none')]);
  // The provider lock held by another process (as LOCK holds it): the probe names its holder.
  writeFileSync(path.join(dir, '.baton.lock.holder'), 'mesh rotate by ops@ctl\n');
  const holder = spawn('flock', [dir, 'sleep', '30'], { stdio: 'ignore', detached: true });
  await new Promise((r) => setTimeout(r, 300));
  step('digests, locked', DIGESTS, paths);
  // The sleep holds the lock too (it inherited the descriptor): the whole group goes.
  process.kill(-holder.pid!, 'SIGKILL');
  await new Promise((r) => holder.once('exit', r));
  step('discard', DISCARD_PREVIOUS, paths);
  step('digests, unlocked', DIGESTS, paths);
  // app_2 is still staged and goes live; app_0 is not: the answer names it.
  step('commit, nothing staged', COMMIT, paths.slice(2, 3).concat(paths.slice(0, 1)));
  step('stage, input short', STAGE, paths, 'only one\n');
  return { answers, calls, files: snapshotDir(root) };
}

describe('the remote scripts on a holder', () => {
  it('answer each step of a rotation and leave its files; one sha256sum per operation for any number of paths', async () => {
    const perl = await sequence();
    expect(perl.answers['digests, nothing there']).toBe(
      '@baton - - - - -\n@baton -\n@baton -\n'.repeat(ROLES),
    );
    expect(perl.answers['digests, locked']).toContain('@baton +mesh rotate by ops@ctl');
    expect(perl.answers['digests, unlocked']).not.toContain('@baton +mesh rotate');
    expect(perl.answers['digests, staged']!.split('\n')[0]).toMatch(/^@baton - [0-9a-f]{64} - - -$/);
    expect(perl.answers['stage']!.split('\n').filter((l) => /^@baton [0-9a-f]{64}$/.test(l))).toHaveLength(
      ROLES,
    );
    expect(perl.answers['keep, nothing live']).toBe('@baton -\n'.repeat(ROLES));
    expect(
      perl.answers['keep, some live']!.split('\n').filter((l) => /^@baton [0-9a-f]{64}$/.test(l)),
    ).toHaveLength(ROLES);
    expect(perl.answers['texts']).toBe(
      `${Array.from({ length: ROLES }, (_, i) => `@baton +{"phase":"prepared","i":${i}}\n`).join('')}@baton -\n`,
    );
    expect(perl.answers['digests, unlocked']).toMatch(/ MTIME - app_0\n/);
    expect(perl.answers['commit, nothing staged']).toMatch(
      /^exit 3: @baton err no staged file ROOT\/provides\/pg-main\/app_0\.next/,
    );
    expect(perl.answers['stage, input short']).toMatch(
      /^exit 3: @baton err stdin ended before ROOT\/provides\/pg-main\/app_1/,
    );
    expect(perl.files['provides/pg-main/app_0']).toMatch(/^file 600 /);
    expect(perl.files['provides/pg-main']).toBe('dir 700');
    for (const name of ['digests, staged', 'digests, unlocked', 'stage', 'keep, some live'])
      expect(perl.calls[name], name).toBe(1);
  });

  it('a machine without perl is told so by name, exit 3, and nothing is written', () => {
    const bin = binDir('bin-no-perl', false);
    const root = path.join(tmp.dir, 'mesh-no-perl');
    mkdirSync(root);
    const paths = [path.join(root, 'provides', 'pg-main', 'app_0')];
    const scripts = { STAGE, WRITE_RECORDS, DIGESTS, KEEP_PREVIOUS, COMMIT, READ_TEXTS, DISCARD_PREVIOUS };
    for (const [name, script] of Object.entries(scripts))
      expect(runScript(bin.path, script, paths, 'secret\n'), name).toBe(
        'exit 3: no perl 5 — baton needs it on every holder',
      );
    expect(Object.keys(snapshotDir(root))).toEqual(['.']);
  });
});
