/**
 * The provider lock on the local transport (provider-lock-contract.ts): the agent's `lock` mode
 * run by a perl on this host under the machine's root, as over ssh.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe } from 'vitest';
import { localTransport } from '../../src/transport/local-transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { lockContract, waitingForWords } from './provider-lock-contract.js';

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
});
