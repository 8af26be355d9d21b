/**
 * The provider lock on the local transport (provider-lock-contract.ts), and the two ways a
 * lock was held past the moment its holder meant to let go: `mesh status`'s probe and a
 * release, each letting go only by a close that sat in libuv's queue (seen as "it has not said
 * who" in the seeded rotation sequences on a quiet machine).
 */
import { spawnSync } from 'node:child_process';
import { constants, mkdirSync, promises as fsPromises } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { localTransport } from '../../src/transport/local-transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { lockContract } from './provider-lock-contract.js';

let tmp: { dir: string; cleanup: () => void };
let meshes = 0;
beforeEach(() => {
  tmp = makeTempDir('baton-lock-');
});
afterEach(() => {
  vi.restoreAllMocks();
  tmp.cleanup();
});

const root = () => path.join(tmp.dir, 'db1');
const controller = () => {
  mkdirSync(root(), { recursive: true });
  return bindTransport(localTransport('db1', root()), TEST_BOUNDS);
};

describe('the provider lock on the local transport', () => {
  lockContract(() => ({
    controller,
    real: (p) => path.join(root(), p),
    freshMeshDir: () => `/var/lib/baton/mesh-${++meshes}`,
    // In this process the taker tries at once: past its 0.1 s grace it is waiting for words.
    waiting: () => new Promise((r) => setTimeout(r, 300)),
  }));

  /** Every close of a descriptor of `dir` waits `ms` first, as one queued behind other file work; `closing` resolves at the first. */
  function slowCloses(dir: string, ms: number): Promise<void> {
    let started!: () => void;
    const closing = new Promise<void>((r) => (started = r));
    const open = fsPromises.open.bind(fsPromises);
    vi.spyOn(fsPromises, 'open').mockImplementation(async (file, flags, mode) => {
      const handle = await open(file, flags, mode);
      if (file === dir && typeof flags === 'number' && (flags & constants.O_DIRECTORY) !== 0) {
        const close = handle.close.bind(handle);
        handle.close = async () => {
          started();
          await new Promise((r) => setTimeout(r, ms));
          return close();
        };
      }
      return handle;
    });
    return closing;
  }
  const freeNow = (dir: string) => spawnSync('flock', ['-n', dir, 'true']).status === 0;

  it("mesh status's probe lets the lock go before its close runs: a taker at that moment is not refused by it", async () => {
    const dir = '/var/lib/baton/mesh/provides/pg-main';
    const transport = controller();
    mkdirSync(path.join(root(), dir), { recursive: true });
    const closing = slowCloses(path.join(root(), dir), 600);
    const read = transport.digests([`${dir}/web1_app`]);
    await closing;
    expect(freeNow(path.join(root(), dir))).toBe(true);
    expect((await read)[0]?.lockedBy).toBeUndefined();
  });

  it('a holder lets the lock go when it releases, not when its queued close runs', async () => {
    const dir = '/var/lib/baton/mesh/provides/pg-main';
    const transport = controller();
    mkdirSync(path.join(root(), dir), { recursive: true });
    const closing = slowCloses(path.join(root(), dir), 600);
    const held = await transport.lock(dir, '{"command":"first"}');
    expect(held.taken).toBe(true);
    expect(freeNow(path.join(root(), dir))).toBe(false);
    const released = held.taken ? held.release() : Promise.resolve();
    await closing;
    expect(freeNow(path.join(root(), dir))).toBe(true);
    await released;
  });
});
