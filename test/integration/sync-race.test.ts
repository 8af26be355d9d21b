/**
 * Two controllers racing on a fresh deployment, on the directory store — whose create-only
 * and if-match are real (link(2), digest compare under flock), unlike s3rver's. The promise:
 * however they interleave, they end with ONE authority, and both hosts hold it.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readLocalAuthority, rotateAuthority, systemClock, withAuthorityLock } from '../../src/authority/index.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { decodeDocument } from '../../src/share/document.js';
import { firstController, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import type { Precondition, Store } from '../../src/store/store.js';
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

async function fingerprintOf(stateDir: string, deployment: string): Promise<Fingerprint> {
  const local = await readLocalAuthority(stateDir, deployment);
  if (local.state !== 'whole') throw new Error(`expected a whole authority in ${stateDir}, got ${local.state}`);
  return local.current.fingerprint;
}

async function publishedFingerprint(storeDir: string, deployment: string): Promise<Fingerprint> {
  const body = new Uint8Array(readFileSync(path.join(storeDir, 'authority.json')));
  return (await decodeDocument(body, { deployment, where: storeDir })).header.fingerprint;
}

/**
 * Holds every put until `parties` puts have arrived, then lets them all through: both
 * controllers have minted and both write create-only at once — the race, made certain.
 */
function barrierStore(inner: Store, parties: number): Store {
  let arrived = 0;
  let release!: () => void;
  const allArrived = new Promise<void>((resolve) => (release = resolve));
  return {
    location: inner.location,
    get: () => inner.get(),
    checkConditionalWrites: () => inner.checkConditionalWrites(),
    async put(body: Uint8Array, precondition?: Precondition) {
      if (++arrived === parties) release();
      await allArrived;
      return inner.put(body, precondition);
    },
  };
}

describe('the first-controller race on the directory store', () => {
  it('two controllers that both minted and both publish create-only at once end with one document, held by both', async () => {
    const root = tempDir();
    const deployment = 'race-in-process';
    const store = barrierStore(new DirectoryStore(path.join(root, 'store')), 2);
    const hosts: ShareContext[] = ['ctl-a', 'ctl-b'].map((name) => ({
      stateDir: path.join(root, name),
      deployment,
      store,
      clock: systemClock,
      host: name,
    }));
    const outcomes = await Promise.all(hosts.map((ctx) => firstController(ctx)));
    expect(outcomes.map((o) => o.kind)).toEqual(['first-controller', 'first-controller']);
    const winners = outcomes.filter((o) => o.kind === 'first-controller' && o.wonRace);
    expect(winners).toHaveLength(1);
    const published = await publishedFingerprint(path.join(root, 'store'), deployment);
    expect(winners[0]).toMatchObject({ fingerprint: published });
    for (const ctx of hosts) expect(await fingerprintOf(ctx.stateDir, deployment)).toBe(published);
  });

  it('two `baton sync` processes started together on a fresh deployment end with one authority, held by both', async () => {
    assertBuilt();
    for (const round of [1, 2]) {
      const root = tempDir();
      const deployment = `race-cli-${round}`;
      const store = `file://${path.join(root, 'store')}`;
      const sync = (name: string) => runBaton(['--deployment', deployment, '--state-dir', path.join(root, name), '--store', store, 'sync', '--first-controller', '--yes']);
      const [a, b] = await Promise.all([sync('ctl-a'), sync('ctl-b')]);
      expect(a.exitCode, a.all).toBe(0);
      expect(b.exitCode, b.all).toBe(0);
      const said = [a.stdout, b.stdout];
      expect(said.filter((text) => text.includes('is the first controller'))).toHaveLength(1);
      const published = await publishedFingerprint(path.join(root, 'store'), deployment);
      expect(await fingerprintOf(path.join(root, 'ctl-a'), deployment)).toBe(published);
      expect(await fingerprintOf(path.join(root, 'ctl-b'), deployment)).toBe(published);
    }
  });
});

describe('a replace on the directory store', () => {
  it('a publish whose ETag went stale (another controller published after this one read) is store-changed and overwrites nothing', async () => {
    const root = tempDir();
    const deployment = 'stale-etag';
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
    const ctx: ShareContext = { stateDir: path.join(root, 'ctl-a'), deployment, store, clock: systemClock, host: 'ctl-a' };
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
      const result = await runBaton(['--deployment', 'busy', '--state-dir', stateDir, '--store', store, 'sync', '--first-controller', '--yes']);
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
    const deployment = 'next-step';
    const store = `file://${path.join(root, 'store')}`;
    const stateDir = path.join(root, 'ctl-b');
    const first = await runBaton(['--deployment', deployment, '--state-dir', path.join(root, 'ctl-a'), '--store', store, 'sync', '--first-controller', '--yes']);
    expect(first.exitCode, first.all).toBe(0);
    const init = await runBaton(['--deployment', deployment, '--state-dir', stateDir, 'ca', 'init']);
    expect(init.exitCode, init.all).toBe(0);
    const before = snapshotDir(stateDir);
    const run = await runBaton(['sync', '--deployment', deployment, '--state-dir', stateDir, '--store', store]);
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stderr).toContain(`baton --deployment ${deployment} --state-dir ${stateDir} --store ${store} sync --force --confirm <LOCAL 8>`);
    expect(snapshotDir(stateDir)).toEqual(before);
  });
});
