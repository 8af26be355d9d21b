/**
 * The built CLI on an ssm:/// store served by moto_server: `store check` says what SSM enforces
 * and scans the parameter's history, a first controller publishes a SecureString that status
 * says KMS seals, the endpoint comes from the SDK chain (AWS_ENDPOINT_URL_SSM), baton's own seal
 * is refused there with nothing written, and only the SSM SDK is loaded.
 *
 * Under CI=true a missing moto_server fails this file (startMoto throws); it never skips.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packagesLoaded, REGISTER, traceFromLog } from '../bench/lib/load-trace.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { MOTO_ENV } from '../helpers/moto-s3.js';
import { startMotoSsm, type MotoSsm } from '../helpers/moto-ssm.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const DEPLOYMENT = '0123456789abcdef0123456789abcdef';
const LEAF = 'node-wire-authority';

let ssm: MotoSsm;
let tmp: { dir: string; cleanup: () => void };
let seq = 0;

beforeAll(async () => {
  assertBuilt();
  ssm = await startMotoSsm();
  tmp = makeTempDir('baton-ssm-cli-');
}, 200_000);

afterAll(async () => {
  await ifSet(ssm)?.close();
  ifSet(tmp)?.cleanup();
});

function baton(
  store: string,
  args: readonly string[],
  options: { env?: Record<string, string>; nodeArgs?: string[] } = {},
) {
  return runBaton(
    [
      '--store',
      store,
      '--state-dir',
      path.join(tmp.dir, `state-${++seq}`),
      '--deployment',
      DEPLOYMENT,
      ...args,
    ],
    {
      env: { ...MOTO_ENV, ...options.env },
      ...(options.nodeArgs ? { nodeArgs: options.nodeArgs } : {}),
      timeoutMs: 150_000,
    },
  );
}

describe('baton on an ssm:/// store (the built CLI against moto)', () => {
  it('store check: create-only enforced, replace detected after the fact, exit 0; a String version holding ca.key is listed; only the SSM SDK loads', async () => {
    const prefix = ssm.prefix();
    const name = `${prefix}/${LEAF}`;
    const clear = JSON.stringify({
      files: { 'ca.key': Buffer.from('-----BEGIN EC PRIVATE KEY-----\n').toString('base64') },
    });
    await ssm.put(name, clear, { type: 'String' });
    await ssm.put(name, clear);
    const run = await baton(ssm.storeUrl(prefix), ['store', 'check'], { nodeArgs: ['--import', REGISTER] });
    expect(run.exitCode, run.all).toBe(0);
    expect(run.stdout).toContain('✓ conditional writes are enforced');
    expect(run.stdout).toContain('create-only is enforced');
    expect(run.stdout).toContain('no compare-and-swap on a replace');
    expect(run.stdout).toContain('detected after the fact');
    expect(run.stdout).toContain(`! 1 stored version(s) of ssm://${name} are not SecureStrings`);
    expect(run.stdout).toMatch(/ {2}version 1 .*\(String, not encrypted\): ca\.key/);
    expect(run.stdout).not.toMatch(/ {2}version 2/);
    expect(run.stdout).toContain(`aws ssm delete-parameter --name ${name}`);
    const loaded = packagesLoaded(traceFromLog(run.stderr));
    expect(loaded).toContain('@aws-sdk/client-ssm');
    expect(loaded).not.toContain('@aws-sdk/client-s3');
    // The probe parameters are gone; the document's two versions are untouched.
    expect((await ssm.history(name)).map((h) => h.Version)).toEqual([1, 2]);
    const left = JSON.parse(ssm.aws(['ssm', 'get-parameters-by-path', '--path', prefix])) as {
      Parameters: { Name: string }[];
    };
    expect(left.Parameters.map((p) => p.Name)).toEqual([name]);
  }, 200_000);

  it('a first controller publishes a SecureString through AWS_ENDPOINT_URL_SSM (no ?endpoint=), and status says KMS seals it', async () => {
    const prefix = ssm.prefix();
    const url = `ssm://${prefix}?region=us-east-1`;
    const env = { AWS_ENDPOINT_URL_SSM: ssm.endpoint };
    const stateDir = path.join(tmp.dir, `fc-${++seq}`);
    const common = ['--store', url, '--state-dir', stateDir, '--deployment', DEPLOYMENT];
    const first = await runBaton([...common, 'sync', '--first-controller', '--yes'], {
      env: { ...MOTO_ENV, ...env },
      timeoutMs: 150_000,
    });
    expect(first.exitCode, first.all).toBe(0);
    expect(await ssm.describe(`${prefix}/${LEAF}`)).toMatchObject({
      Type: 'SecureString',
      KeyId: 'alias/aws/ssm',
    });
    const status = await runBaton([...common, 'status'], {
      env: { ...MOTO_ENV, ...env },
      timeoutMs: 150_000,
    });
    expect(status.all).toContain(`ssm://${prefix}/${LEAF}`);
    expect(status.all).toContain(
      "not by baton; at rest by KMS: a SecureString under alias/aws/ssm (the account's default key)",
    );
  }, 200_000);

  it("baton's own seal on SSM is refused (exit 2) naming what, where and what to do; nothing is written", async () => {
    const prefix = ssm.prefix();
    const key = path.join(tmp.dir, `seal-${++seq}.key`);
    writeFileSync(key, Buffer.alloc(32, 9), { mode: 0o600 });
    const run = await baton(ssm.storeUrl(prefix), ['--seal-key-file', key, 'sync', '--first-controller']);
    expect(run.exitCode, run.all).toBe(2);
    expect(run.stderr).toContain('seal_key_file is set, but the store is SSM Parameter Store');
    expect(run.stderr).toContain('kms_key_id');
    expect(await ssm.value(`${prefix}/${LEAF}`)).toBeUndefined();
  }, 200_000);
});
