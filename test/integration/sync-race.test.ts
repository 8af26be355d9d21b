/**
 * Two controllers on the directory store, whose create-only and if-match are real (link(2),
 * digest compare under flock), unlike s3rver's: a replace on a stale ETag, the authority lock,
 * and the next step `baton sync` prints. The first-controller race itself is proven once per
 * real part: test/share/operations.test.ts (in memory), test/reliability/races.test.ts (the
 * directory store, two processes), test/integration/s3-preconditions-moto.test.ts (S3).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rotateAuthority, systemClock, withAuthorityLock } from '../../src/authority/index.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { firstController, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import type { Store } from '../../src/store/store.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function tempDir(): string {
  const { dir, cleanup } = makeTempDir('baton-race-');
  cleanups.push(cleanup);
  return dir;
}

describe('a replace on the directory store', () => {
  it('a publish whose ETag went stale (another controller published after this one read) is store-changed and overwrites nothing', async () => {
    const root = tempDir();
    const deployment = '57a1e07a57a1e07a57a1e07a57a1e07a';
    const inner = new DirectoryStore(path.join(root, 'store'));
    const theirs = new TextEncoder().encode('{"published":"by another controller"}\n');
    let interleave = false;
    const store: Store = {
      location: inner.location,
      get: () => inner.get(),
      checkConditionalWrites: () => inner.checkConditionalWrites(),
      async put(body, precondition) {
        if (interleave) {
          interleave = false;
          await inner.put(theirs);
        }
        return inner.put(body, precondition);
      },
    };
    const ctx: ShareContext = {
      stateDir: path.join(root, 'ctl-a'),
      deployment,
      store,
      clock: systemClock,
      host: 'ctl-a',
      noSeal: true,
    };
    await firstController(ctx);
    await rotateAuthority(ctx.stateDir, deployment);
    interleave = true;
    const before = snapshotDir(ctx.stateDir);
    const error = await batonErrorOf(publish(ctx));
    expect(error).toMatchObject({ code: 'store-changed', reason: 'replaced', where: store.location });
    expect(readFileSync(path.join(root, 'store', 'authority.json'))).toEqual(Buffer.from(theirs));
    expect(snapshotDir(ctx.stateDir)).toEqual(before);
  });
});

describe('the authority lock', () => {
  it('`baton sync` on a host whose lock another process holds exits 5 naming the lock, and nothing changes', async () => {
    assertBuilt();
    const root = tempDir();
    const stateDir = path.join(root, 'ctl-a');
    const store = `file://${path.join(root, 'store')}`;
    const run = await withAuthorityLock(stateDir, async () => {
      const before = snapshotDir(stateDir);
      const result = await runBaton([
        '--deployment',
        'b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0',
        '--no-seal',
        '--state-dir',
        stateDir,
        '--store',
        store,
        'sync',
        '--first-controller',
        '--yes',
      ]);
      expect(snapshotDir(stateDir)).toEqual(before);
      return result;
    });
    expect(run.exitCode).toBe(5);
    expect(run.stderr).toContain(path.join(stateDir, 'ca.lock'));
    expect(existsSync(path.join(root, 'store', 'authority.json'))).toBe(false);
  });
});

describe('the next step `baton sync` prints', () => {
  it('carries the global flags given AFTER `sync`, so the pasted `sync --force` acts on the same host and store, and shows its bound value as a placeholder', async () => {
    assertBuilt();
    const root = tempDir();
    const deployment = '4e475e4e475e4e475e4e475e4e475e4e';
    const store = `file://${path.join(root, 'store')}`;
    const stateDir = path.join(root, 'ctl-b');
    const first = await runBaton([
      '--deployment',
      deployment,
      '--no-seal',
      '--state-dir',
      path.join(root, 'ctl-a'),
      '--store',
      store,
      'sync',
      '--first-controller',
      '--yes',
    ]);
    expect(first.exitCode, first.all).toBe(0);
    const init = await runBaton(['--deployment', deployment, '--state-dir', stateDir, 'ca', 'init']);
    expect(init.exitCode, init.all).toBe(0);
    const before = snapshotDir(stateDir);
    const run = await runBaton([
      'sync',
      '--deployment',
      deployment,
      '--state-dir',
      stateDir,
      '--store',
      store,
    ]);
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stderr).toContain(
      `baton --deployment ${deployment} --state-dir ${stateDir} --store ${store} sync --force --confirm <LOCAL 8>`,
    );
    expect(snapshotDir(stateDir)).toEqual(before);
  });
});
