/**
 * The agent contract (agent-contract.ts) over ssh to ONE real sshd on 127.0.0.1 for the whole
 * file, every operation on one shared connection as a command's are (ssh-connection-share.ts);
 * the machine's paths are this host's. Also what only ssh has: the holder's ssh client killed.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { sshTransport } from '../../src/transport/ssh-transport.js';
import { sshConnectionShare, type SshConnectionShare } from '../../src/transport/ssh-connection-share.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';
import { ifSet } from '../helpers/if-set.js';
import { sshdUnavailable, sshTargetOf, startSshd, type Sshd } from '../helpers/sshd.js';
import { agentContract } from './agent-contract.js';

vi.mock('../../src/transport/agent-program.js', () => import('./agent-contract-program.js'));

const unavailable = sshdUnavailable();

/** The pid of this process's child (an ssh client) whose argv runs the agent's `lock` on `dir`. */
function lockSessionPid(dir: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const ppid = Number(
        readFileSync(`/proc/${pid}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[1],
      );
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (ppid === process.pid && argv.includes('lock') && argv.includes(dir)) return Number(pid);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

describeWithPart(unavailable, 'the agent contract over a real sshd on 127.0.0.1', () => {
  let sshd: Sshd;
  let share: SshConnectionShare;
  let tmp: { dir: string; cleanup: () => void };
  let dirs = 0;
  beforeAll(async () => {
    sshd = await startSshd();
    share = sshConnectionShare();
    tmp = makeTempDir('baton-contract-ssh-');
  });
  afterAll(async () => {
    await ifSet(share)?.close();
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  agentContract(() => ({
    transport: () => sshTransport('db1', sshTargetOf(sshd), { share }),
    freshDir: () => path.join(tmp.dir, `mesh-${++dirs}`),
    real: (p) => p,
  }));

  it("a holder whose ssh client is killed -9 leaves no words: the agent's stdin ends and it removes them", async () => {
    const dir = path.join(tmp.dir, `mesh-${++dirs}`, 'provides', 'pg-main');
    mkdirSync(dir, { recursive: true });
    const held = await sshTransport('db1', sshTargetOf(sshd), { share }).lock(
      dir,
      '{"command":"killed"}',
      AbortSignal.timeout(30_000),
    );
    expect(held.taken).toBe(true);
    const ssh = lockSessionPid(dir);
    expect(ssh).toBeDefined();
    process.kill(ssh!, 'SIGKILL');
    await vi.waitFor(() => expect(readdirSync(dir)).toEqual([]), { timeout: 10_000, interval: 20 });
    const next = await sshTransport('db1', sshTargetOf(sshd), { share }).lock(
      dir,
      '{"command":"next"}',
      AbortSignal.timeout(30_000),
    );
    expect(next.taken).toBe(true);
    if (next.taken) await next.release();
  });
});
