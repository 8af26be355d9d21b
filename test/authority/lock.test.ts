import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { probeAuthorityLock, withAuthorityLock } from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function stateDir(): string {
  const temp = makeTempDir('baton-lock-');
  cleanups.push(temp.cleanup);
  return path.join(temp.dir, 'state');
}

async function refusal(dir: string): Promise<BatonError> {
  const error = await withAuthorityLock(dir, async () => 'taken').then(
    (v) => new Error(`the lock was taken (${v})`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BatonError);
  return error as BatonError;
}

describe('ca.lock', () => {
  it('a probe finds a missing lock free without creating it, and names a holder as busy', async () => {
    const dir = stateDir();
    expect(await probeAuthorityLock(dir)).toEqual({ state: 'free' });
    expect(existsSync(dir)).toBe(false);
    await withAuthorityLock(dir, async () => {
      const probe = await probeAuthorityLock(dir);
      expect(probe.state).toBe('busy');
      expect(probe.state === 'busy' && probe.error.code).toBe('lock-busy');
    });
    expect(await probeAuthorityLock(dir)).toEqual({ state: 'free' });
  });

  it('a second holder in the same process is refused at once with lock-busy (exit 5), naming the lock file', async () => {
    const dir = stateDir();
    const lockFile = path.join(dir, 'ca.lock');
    await withAuthorityLock(dir, async () => {
      const error = await refusal(dir);
      expect(error.code).toBe('lock-busy');
      expect(error.exitCode).toBe(5);
      expect(error.where).toBe(lockFile);
      expect(error.what).toContain('held by another baton');
      expect(error.changed).toBe('Nothing was written.');
    });
    expect(await withAuthorityLock(dir, async () => 'free again')).toBe('free again');
  });

  it('is created 0600 in a state dir created 0700, and released when the function throws', async () => {
    const dir = stateDir();
    await expect(
      withAuthorityLock(dir, async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    const snap = snapshotDir(dir);
    expect(snap['.']).toBe('dir 700');
    expect(snap['ca.lock']).toMatch(/^file 600 /);
    expect(await withAuthorityLock(dir, async () => 'free')).toBe('free');
  });

  it('an error under a lock it had to create says so, whatever it said changed, and keeps its code and reason', async () => {
    const fresh = stateDir();
    const refused = await withAuthorityLock(fresh, async () => {
      throw new BatonError('refused', { what: 'no', changed: 'Nothing was written.', reason: 'diverged' });
    }).catch((e: unknown) => e as BatonError);
    expect(refused).toMatchObject({ code: 'refused', reason: 'diverged', what: 'no' });
    expect(refused.changed).toBe(
      `Nothing was written. (Taking the lock created the state dir ${fresh} and its lock file ca.lock; they hold nothing.)`,
    );
    // A second error on the same host: the lock file exists now, so nothing is added.
    const again = await withAuthorityLock(fresh, async () => {
      throw new BatonError('failed', { what: 'disk', changed: 'ca/ was set aside.' });
    }).catch((e: unknown) => e as BatonError);
    expect(again.changed).toBe('ca/ was set aside.');
    // An error that said nothing of what changed still learns about the lock file.
    const other = stateDir();
    const silent = await withAuthorityLock(other, async () => {
      throw new BatonError('failed', { what: 'disk' });
    }).catch((e: unknown) => e as BatonError);
    expect(silent.changed).toBe(
      `Taking the lock created the state dir ${other} and its lock file ca.lock; they hold nothing.`,
    );
  });

  it('a bounded wait gets the lock once the holder lets go', async () => {
    const dir = stateDir();
    let release!: () => void;
    const held = withAuthorityLock(
      dir,
      () =>
        new Promise<void>((resolve) => {
          release = resolve;
        }),
    );
    await expect
      .poll(() => (release as (() => void) | undefined) !== undefined, { timeout: 30_000 })
      .toBe(true);
    const waiting = withAuthorityLock(dir, async () => 'got it', { waitMs: 60_000 });
    release();
    await held;
    expect(await waiting).toBe('got it');
  });

  it('a holder in another process refuses this one, and its SIGKILL frees the lock at once', async () => {
    const dir = stateDir();
    const child: ChildProcess = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(here, 'fixtures/hold-lock.ts'), dir],
      {
        cwd: repo,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    cleanups.push(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    await expect.poll(() => out || err, { timeout: 30_000, interval: 50 }).toBe('held\n');

    const error = await refusal(dir);
    expect(error.code).toBe('lock-busy');
    expect(error.where).toBe(path.join(dir, 'ca.lock'));

    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    expect(await withAuthorityLock(dir, async () => 'free after SIGKILL')).toBe('free after SIGKILL');
  });
});
