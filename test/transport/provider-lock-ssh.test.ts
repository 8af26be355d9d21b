/**
 * The provider lock over a real sshd (provider-lock-contract.ts): the LOCK script and the
 * digests read's probe, run by the machine's own shell, flock and perl.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { sshTransport } from '../../src/transport/ssh-transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';
import { ifSet } from '../helpers/if-set.js';
import { sshdUnavailable, sshTargetOf, startSshd, type Sshd } from '../helpers/sshd.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';
import { lockContract } from './provider-lock-contract.js';

const unavailable = sshdUnavailable();

/**
 * Once the machine's LOCK script, refused its 0.1 s grace on `dir`, waits for the holder's words:
 * its shell has the directory open (fd 9) — the session's start over ssh can take longer than
 * any fixed sleep on a loaded machine, so the test watches for that — and 0.3 s more have passed
 * (well inside the second the script waits, however slowly its processes start).
 */
async function waitingForWords(dir: string): Promise<void> {
  for (;;) {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && p !== String(process.pid))) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/9`) === dir) return await new Promise((r) => setTimeout(r, 300));
      } catch {
        // gone, or no fd 9
      }
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

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
});
