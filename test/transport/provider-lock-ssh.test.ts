/**
 * The provider lock over a real sshd (provider-lock-contract.ts): the agent's `lock` mode and
 * the digests read's probe, run by the machine's own perl.
 */
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { sshTransport } from '../../src/transport/ssh-transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';
import { ifSet } from '../helpers/if-set.js';
import { sshdUnavailable, sshTargetOf, startSshd, type Sshd } from '../helpers/sshd.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { goneWithin, lockContract, lockSessionPid, waitingForWords } from './provider-lock-contract.js';

const unavailable = sshdUnavailable();

describeWithPart(unavailable, 'the provider lock over a real sshd on 127.0.0.1', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  let meshes = 0;
  beforeAll(async () => {
    sshd = await startSshd();
    tmp = makeTempDir('baton-ssh-lock-');
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
  });

  lockContract(() => ({
    controller: () => bindTransport(sshTransport('db1', sshTargetOf(sshd)), TEST_BOUNDS),
    real: (p) => p,
    freshMeshDir: () => path.join(tmp.dir, `mesh-${++meshes}`),
    waiting: (dir, asked) => Promise.race([waitingForWords(dir), asked.then(() => undefined)]),
  }));

  it('a controller whose ssh is killed -9 while it holds the lock leaves no words: the agent removes them as its session ends', async () => {
    const dir = path.join(tmp.dir, `mesh-${++meshes}`, 'provides', 'pg-main');
    mkdirSync(dir, { recursive: true });
    const lock = await bindTransport(sshTransport('db1', sshTargetOf(sshd)), TEST_BOUNDS).lock(
      dir,
      '{"command":"killed"}',
    );
    expect(lock.taken).toBe(true);
    const ssh = lockSessionPid(dir);
    expect(ssh).toBeDefined();
    process.kill(ssh!, 'SIGKILL');
    await goneWithin(path.join(dir, '.baton.lock.holder'), 10_000);
    const next = await bindTransport(sshTransport('db1', sshTargetOf(sshd)), TEST_BOUNDS).lock(
      dir,
      '{"command":"next"}',
    );
    expect(next.taken).toBe(true);
    if (next.taken) await next.release();
  });
});
