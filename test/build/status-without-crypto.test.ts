/**
 * `status --json` is what a monitor runs every minute: it must not load node:crypto (OpenSSL's
 * bindings and ~15 internal modules) to say what it said a minute ago. Fingerprints, ETags and
 * the store check record's name are SHA-256 in JavaScript (src/sha256.ts); the pair check —
 * ECDSA and X.509 signatures, OpenSSL's — is proved once per exact bytes and remembered
 * (src/pki/checked-pairs.ts). Read from `process.moduleLoadList` at exit, in the built CLI.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const temp = makeTempDir('baton-status-crypto-');
afterAll(() => temp.cleanup());
const DEPLOYMENT = 'c0ffee00c0ffee00c0ffee00c0ffee00';
const dirs = () => ({
  state: path.join(temp.dir, 'state'),
  store: `file://${path.join(temp.dir, 'store')}`,
  cache: path.join(temp.dir, 'cache'),
});
const flags = () => [
  '--deployment',
  DEPLOYMENT,
  '--no-seal',
  '--state-dir',
  dirs().state,
  '--store',
  dirs().store,
];
const hook = () => path.join(temp.dir, 'crypto-at-exit.cjs');

/** status --json with a preload that prints, at exit, every loaded module whose name says crypto. */
async function status(cache: string) {
  const run = await runBaton([...flags(), 'status', '--json'], {
    nodeArgs: ['--require', hook()],
    env: { XDG_CACHE_HOME: cache },
  });
  const loaded = /BATON_TEST_CRYPTO (\[.*\])/.exec(run.stderr)?.[1];
  expect(loaded, run.stderr).toBeDefined();
  return {
    run,
    crypto: JSON.parse(loaded!) as string[],
    json: JSON.parse(run.stdout) as Record<string, unknown>,
  };
}

beforeAll(async () => {
  assertBuilt();
  writeFileSync(
    hook(),
    "process.on('exit', () => process.stderr.write(`\\nBATON_TEST_CRYPTO ${JSON.stringify(process.moduleLoadList.filter((m) => /crypto/i.test(m)))}\\n`));\n",
  );
  const sync = await runBaton([...flags(), 'sync', '--first-controller', '--yes'], {
    env: { XDG_CACHE_HOME: dirs().cache },
  });
  expect(sync.exitCode, sync.all).toBe(0);
}, 60_000);

describe('status --json without node:crypto', () => {
  it('after the host proved its pair once (sync did), status --json loads no crypto module at all and exits 0 in sync', async () => {
    const { run, crypto, json } = await status(dirs().cache);
    expect(run.exitCode, run.stderr).toBe(0);
    expect(json).toMatchObject({ exit_code: 0, verdict: { kind: 'in-sync' } });
    expect(crypto).toEqual([]);
  });

  it('with no memory of the pair (a fresh cache) the same status proves it with OpenSSL, says the same, and the next run needs no crypto', async () => {
    const fresh = path.join(temp.dir, 'fresh-cache');
    const first = await status(fresh);
    const again = await status(fresh);
    expect(first.crypto).toContain('NativeModule crypto');
    expect(again.crypto).toEqual([]);
    const withoutTime = (json: Record<string, unknown>) => ({ ...json, read_at: undefined });
    expect(withoutTime(again.json)).toEqual(withoutTime(first.json));
    expect(readdirSync(path.join(fresh, 'baton', 'checked-pairs'))).toHaveLength(1);
  });
});
