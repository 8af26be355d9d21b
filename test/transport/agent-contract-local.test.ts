/**
 * The agent contract (agent-contract.ts) on the local transport: the agent run by a perl on this
 * host under a directory that plays the machine's root, as `serve` and as its other modes. Also
 * what only the local transport lets a test do: signal the agent holding a lock, its own child.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { localTransport } from '../../src/transport/local-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { agentContract } from './agent-contract.js';

vi.mock('../../src/transport/agent-program.js', () => import('./agent-contract-program.js'));

const tmp = makeTempDir('baton-contract-local-');
afterAll(() => tmp.cleanup());
const root = path.join(tmp.dir, 'db1');
mkdirSync(root);
let dirs = 0;

/** The pid of this process's child (the agent's perl) that holds the lock on `dir`. */
function lockAgentPid(dir: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const ppid = Number(
        readFileSync(`/proc/${pid}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[1],
      );
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (ppid === process.pid && argv.includes('lock') && argv.includes(dir)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

describe('the agent contract on the local transport', () => {
  agentContract(() => ({
    transport: () => localTransport('db1', root),
    freshDir: () => `/var/lib/baton/mesh-${++dirs}`,
    real: (p) => path.join(root, p),
  }));

  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'an agent holding the lock that is sent %s removes its words before it lets go',
    async (signal) => {
      const dir = `/var/lib/baton/mesh-${++dirs}/provides/pg-main`;
      mkdirSync(path.join(root, dir), { recursive: true });
      const lock = await localTransport('db1', root).lock(
        dir,
        '{"command":"signalled"}',
        AbortSignal.timeout(30_000),
      );
      expect(lock.taken).toBe(true);
      const agent = lockAgentPid(dir);
      expect(agent).toBeDefined();
      process.kill(agent!, signal);
      await vi.waitFor(() => expect(existsSync(path.join(root, dir, '.baton.lock.holder'))).toBe(false), {
        timeout: 5_000,
        interval: 20,
      });
      const next = await localTransport('db1', root).lock(
        dir,
        '{"command":"next"}',
        AbortSignal.timeout(30_000),
      );
      expect(next.taken).toBe(true);
      if (next.taken) await next.release();
      if (lock.taken) await lock.release();
    },
  );
});
