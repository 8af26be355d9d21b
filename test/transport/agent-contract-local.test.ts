/**
 * The agent contract (agent-contract.ts) on the local transport: the agent run by a perl on this
 * host under a directory that plays the machine's root, as `serve` and as its other modes.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, vi } from 'vitest';
import { localTransport } from '../../src/transport/local-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { agentContract } from './agent-contract.js';

vi.mock('../../src/transport/agent-program.js', () => import('./agent-contract-program.js'));

const tmp = makeTempDir('baton-contract-local-');
afterAll(() => tmp.cleanup());
const root = path.join(tmp.dir, 'db1');
mkdirSync(root);
let dirs = 0;

describe('the agent contract on the local transport', () => {
  agentContract(() => ({
    transport: () => localTransport('db1', root),
    freshDir: () => `/var/lib/baton/mesh-${++dirs}`,
    real: (p) => path.join(root, p),
  }));
});
