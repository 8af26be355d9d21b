/**
 * The console over the REAL S3 adapter: s3rver on 127.0.0.1 through @aws-sdk/client-s3, the
 * built CLI, and tmux for the walk — the path a production controller takes, with an emulator
 * in place of AWS.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Sandbox, type S3Sandbox } from '../../src/sandbox/s3.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN, runBaton, S3_TEST_ENV } from '../helpers/run-baton.js';
import { unenforcedStoreFlags } from '../helpers/test-s3.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';
import { ifSet } from '../helpers/if-set.js';

let s3: S3Sandbox;
let root: { dir: string; cleanup: () => void };
const sessions: TmuxSession[] = [];

beforeAll(async () => {
  assertBuilt();
  root = makeTempDir('baton-e2e-s3-');
  s3 = await startS3Sandbox({ prefix: 'console' });
});
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.kill()));
  await ifSet(s3)?.close();
  ifSet(root)?.cleanup();
});

const host = (name: string) => [
  '--deployment',
  'e2e53e2e53e2e53e2e53e2e53e2e53e2',
  '--no-seal',
  '--state-dir',
  path.join(root.dir, name),
  '--store',
  s3.url,
  ...unenforcedStoreFlags(s3.url),
];

async function baton(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = await runBaton(args, { env: S3_TEST_ENV });
  return { code: run.exitCode, stdout: run.stdout, stderr: run.stderr };
}

describe('the console over S3 (s3rver)', () => {
  it('status shows the published authority and that the store does NOT enforce conditional writes; failover adopts', async () => {
    const a = host('a');
    const b = host('b');
    expect((await baton([...a, 'ca', 'init', '--yes'])).code).toBe(0);
    expect((await baton([...a, 'sync'])).code).toBe(0);
    expect((await baton([...a, 'store', 'check'])).code).toBe(3);

    const json = await baton([...a, 'status', '--json']);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout);
    expect(report).toMatchObject({
      verdict: { kind: 'in-sync' },
      published: { state: 'present', sealed: false },
      store_check: { enforced: false },
    });
    expect(report.published.location).toContain('s3://');
    const plain = await baton([...a, 'status']);
    expect(plain.stdout).toContain('NOT enforced');
    expect(plain.stdout).toContain(report.local.fingerprint);

    const command = ['node', BIN, ...b, 'failover'].map(shellQuote).join(' ');
    const s = await TmuxSession.start({ command, env: { ...S3_TEST_ENV } });
    sessions.push(s);
    await s.waitFor('Adopt the published authority');
    await s.keys('Enter');
    await s.waitFor('Confirm: Adopt');
    await s.keys('Enter');
    await s.waitFor((screen) => screen.includes('Read again:') && screen.includes('in sync'), 'the result');
    await s.keys('q');
    expect(await s.exitCode()).toBe(0);
    const after = JSON.parse((await baton([...b, 'status', '--json'])).stdout);
    expect(after.local.fingerprint).toBe(report.local.fingerprint);
  });
});
