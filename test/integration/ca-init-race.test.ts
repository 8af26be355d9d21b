/**
 * Two controllers running `baton ca init` at the same moment against one directory store (its
 * create-only is a real link(2)): every one of 20 races ends with ONE authority, held by both
 * hosts and published — never one each.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { TEST_DEPLOYMENT } from '../helpers/authority.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, startBaton } from '../helpers/run-baton.js';

const DEP = TEST_DEPLOYMENT;
const temp = makeTempDir('baton-init-race-');
afterAll(() => temp.cleanup());
beforeAll(() => assertBuilt());

describe('ca init racing on a fresh deployment', () => {
  it('20 races of two `ca init --yes`s on a directory store each end with one authority on both hosts', async () => {
    for (let race = 0; race < 20; race++) {
      const work = path.join(temp.dir, `race-${race}`);
      const store = `file://${path.join(work, 'store')}`;
      const hosts = ['ctl-a', 'ctl-b'].map((name) => path.join(work, name));
      const runs = await Promise.all(
        hosts.map((stateDir) =>
          startBaton(
            [
              '--deployment',
              DEP,
              '--no-seal',
              '--state-dir',
              stateDir,
              '--store',
              store,
              'ca',
              'init',
              '--yes',
            ],
            { env: { NO_COLOR: '1' } },
          ),
        ),
      );
      for (const run of runs)
        expect({ race, code: run.exitCode, stderr: run.stderr }).toEqual({ race, code: 0, stderr: '' });
      const held = await Promise.all(hosts.map((stateDir) => readLocalAuthority(stateDir, DEP)));
      const fingerprints = held.map((local) =>
        local.state === 'whole' ? local.current.fingerprint : local.state,
      );
      const published = (
        JSON.parse(readFileSync(path.join(work, 'store', 'authority.json'), 'utf8')) as {
          fingerprint: string;
        }
      ).fingerprint;
      expect({ race, fingerprints }).toEqual({ race, fingerprints: [published, published] });
      // Exactly one of the two minted and published; the other adopted (its own mint never touched disk).
      const said = runs.map((run) => String(run.stdout));
      expect(said.filter((text) => text.includes('published it create-only')).length).toBe(1);
      expect(said.filter((text) => text.includes('already published by another controller')).length).toBe(1);
      for (const stateDir of hosts) expect(existsSync(path.join(stateDir, 'ca', 'ca.key.new'))).toBe(false);
    }
  }, 240_000);
});
