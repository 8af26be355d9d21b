/**
 * The provider lock on the local transport (provider-lock-contract.ts): the agent's `lock` mode
 * run by a perl on this host under the machine's root, as over ssh.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { localTransport } from '../../src/transport/local-transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { goneWithin, lockContract, lockSessionPid, waitingForWords } from './provider-lock-contract.js';

let tmp: { dir: string; cleanup: () => void };
let meshes = 0;
beforeEach(() => {
  tmp = makeTempDir('baton-lock-');
});
afterEach(() => {
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
    waiting: (dir, asked) => Promise.race([waitingForWords(dir), asked.then(() => undefined)]),
  }));

  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'an agent holding the lock that is sent %s removes its words before it lets go',
    async (signal) => {
      const dir = `/var/lib/baton/mesh-${++meshes}/provides/pg-main`;
      mkdirSync(path.join(root(), dir), { recursive: true });
      const lock = await controller().lock(dir, '{"command":"signalled"}');
      expect(lock.taken).toBe(true);
      const agent = lockSessionPid(dir);
      expect(agent).toBeDefined();
      process.kill(agent!, signal);
      await goneWithin(path.join(root(), dir, '.baton.lock.holder'), 5_000);
      const next = await controller().lock(dir, '{"command":"next"}');
      expect(next.taken).toBe(true);
      if (next.taken) await next.release();
      if (lock.taken) await lock.release();
    },
  );
});
