/**
 * A login shell's start-up noise is never quoted as why a command failed (issue 45: root's rc
 * printed a pyenv error on stderr, and baton quoted it as the failure reason). A real sshd whose
 * logins read an rc file that prints to stderr: when baton's program fails it is quoted by its
 * own `@baton err` line, and when the command fails with no line of baton's (the rc itself
 * exits), only the exit status is said.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TransportError } from '../../src/mesh/transport.js';
import { bindTransport } from '../../src/transport/bound-transport.js';
import { sshTransport } from '../../src/transport/ssh-transport.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { describeWithPart } from '../helpers/real-part.js';
import { sshdUnavailable, sshTargetOf, startSshd, type Sshd } from '../helpers/sshd.js';
import { TEST_BOUNDS } from '../helpers/transport-bounds.js';

const NOISE = "pyenv: cannot rehash: /root/.pyenv/shims isn't writable";

describeWithPart(
  sshdUnavailable(),
  "the reason a machine gives is baton's own line, never the login shell's rc noise",
  () => {
    let sshd: Sshd;
    let tmp: { dir: string; cleanup: () => void };
    const failing = () => path.join(tmp.dir, 'rc-fails');
    beforeAll(async () => {
      tmp = makeTempDir('baton-rc-noise-');
      const home = path.join(tmp.dir, 'home');
      mkdirSync(home, { recursive: true });
      // bash run by sshd for a command reads ~/.bashrc; this one prints noise, and exits when told to.
      writeFileSync(
        path.join(home, '.bashrc'),
        `echo "${NOISE}" >&2\nif [ -e ${failing()} ]; then echo "${NOISE} (again)" >&2; exit 7; fi\n`,
      );
      // Without the helper's SHLVL=1 (test/helpers/sshd.ts), so the login reads the rc as an operator's does.
      sshd = await startSshd({ settings: { SetEnv: `HOME=${home}` } });
    });
    afterAll(async () => {
      await ifSet(sshd)?.stop();
      ifSet(tmp)?.cleanup();
    });

    const failure = async (run: () => Promise<unknown>): Promise<TransportError> => {
      const error = await run().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      return error as TransportError;
    };

    it("a failing command is quoted by baton's @baton line; the rc's stderr line before it is not", async () => {
      const transport = bindTransport(sshTransport('web1', sshTargetOf(sshd)), TEST_BOUNDS);
      const live = path.join(tmp.dir, 'nothing', 'y');
      const error = await failure(() => transport.commit([live]));
      expect(error.message).toBe(`web1: commit failed on the machine: no staged file ${live}.next`);
      expect(error.message).not.toContain('pyenv');
      console.log(`rc noise: a failed commit reads "${error.message}"`);
    });

    it("a command that fails with no line of baton's (the rc exits 7) says its exit status, and quotes nothing of the rc", async () => {
      writeFileSync(failing(), '');
      try {
        const transport = bindTransport(sshTransport('web1', sshTargetOf(sshd)), TEST_BOUNDS);
        const live = path.join(tmp.dir, 'still-nothing', 'y');
        const error = await failure(() => transport.commit([live]));
        expect(error.message).toBe(
          "web1: commit failed on the machine (exit 7, with no answer line of baton's)",
        );
        expect(error.message).not.toContain('pyenv');
        // Nothing ran on the machine: the rc ended the login before baton's program started.
        expect(existsSync(path.dirname(live))).toBe(false);
        console.log(`rc noise: a login whose rc exits reads "${error.message}"`);
      } finally {
        rmSync(failing(), { force: true });
      }
    });
  },
);
