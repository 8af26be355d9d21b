import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Sandbox, type S3Sandbox } from '../../src/sandbox/s3.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton, S3_TEST_ENV } from '../helpers/run-baton.js';
import { storeCheckFile } from '../../src/store/store-check-record.js';
import { packagesLoaded, REGISTER, traceFromLog } from '../bench/lib/load-trace.js';
import { ifSet } from '../helpers/if-set.js';

describe('baton store check and baton key generate (the built CLI)', () => {
  let s3: S3Sandbox;
  let temp: { dir: string; cleanup: () => void };
  beforeAll(async () => {
    assertBuilt();
    temp = makeTempDir('baton-store-cli-');
    s3 = await startS3Sandbox({ dir: path.join(temp.dir, 's3') });
  });
  afterAll(async () => {
    await ifSet(s3)?.close();
    ifSet(temp)?.cleanup();
  });

  it('reports s3rver as NOT enforcing conditional writes, says why it matters, exits 3 and records it for status', async () => {
    const stateDir = path.join(temp.dir, 'state-s3');
    const run = await runBaton(
      [
        '--store',
        s3.url,
        '--state-dir',
        stateDir,
        '--deployment',
        '0123456789abcdef0123456789abcdef',
        'store',
        'check',
      ],
      { env: S3_TEST_ENV },
    );
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stdout).toContain('conditional writes are NOT enforced');
    expect(run.stdout).toContain('could overwrite each other');
    const record = JSON.parse(readFileSync(storeCheckFile(stateDir, s3.url), 'utf8'));
    expect(record).toEqual({
      store: s3.url,
      enforced: false,
      failed: ['create-only', 'replace-if-unchanged'],
      detail: expect.stringContaining(
        'a second create-only write (If-None-Match: *) of the same object was accepted',
      ),
      checked_at: expect.any(String),
    });
    expect(record.detail).not.toContain('could not be removed');
    expect(Number.isNaN(Date.parse(record.checked_at))).toBe(false);
  });

  it('reports the directory store as enforcing, exits 0, and leaves no probe behind', async () => {
    const stateDir = path.join(temp.dir, 'state-dir');
    const storeDir = path.join(temp.dir, 'dir-store');
    const run = await runBaton([
      '--store',
      `file://${storeDir}`,
      '--state-dir',
      stateDir,
      '--deployment',
      '0123456789abcdef0123456789abcdef',
      'store',
      'check',
    ]);
    expect(run.exitCode, run.all).toBe(0);
    expect(run.stdout).toContain('conditional writes are enforced');
    expect(JSON.parse(readFileSync(storeCheckFile(stateDir, `file://${storeDir}`), 'utf8'))).toMatchObject({
      store: `file://${storeDir}`,
      enforced: true,
    });
    // Kept beside the state dir, where every state dir of this host reads it.
    expect(storeCheckFile(stateDir, `file://${storeDir}`)).toMatch(
      new RegExp(`^${temp.dir}/store-checks/[0-9a-f]{32}\\.json$`),
    );
    expect(Object.keys(snapshotDir(storeDir)).filter((name) => name.includes('probe'))).toEqual([]);
  });

  it('does not load the AWS SDK for a directory store, and does for an s3:// store', async () => {
    const stateDir = path.join(temp.dir, 'state-lazy');
    const dirRun = await runBaton(
      [
        '--store',
        `file://${path.join(temp.dir, 'lazy-store')}`,
        '--state-dir',
        stateDir,
        '--deployment',
        '0123456789abcdef0123456789abcdef',
        'store',
        'check',
      ],
      {
        nodeArgs: ['--import', REGISTER],
      },
    );
    expect(dirRun.exitCode, dirRun.all).toBe(0);
    // The trace must see the app at all, or "not loaded" would pass vacuously.
    expect(packagesLoaded(traceFromLog(dirRun.stderr))).toContain('commander');
    expect(packagesLoaded(traceFromLog(dirRun.stderr))).not.toContain('@aws-sdk/client-s3');
    const s3Run = await runBaton(
      [
        '--store',
        s3.url,
        '--state-dir',
        stateDir,
        '--deployment',
        '0123456789abcdef0123456789abcdef',
        'store',
        'check',
      ],
      {
        nodeArgs: ['--import', REGISTER],
        env: S3_TEST_ENV,
      },
    );
    expect(s3Run.exitCode, s3Run.all).toBe(3);
    expect(packagesLoaded(traceFromLog(s3Run.stderr))).toContain('@aws-sdk/client-s3');
  });

  it('refuses an unknown store scheme with exit 2, naming the URL, and writes nothing', async () => {
    const stateDir = path.join(temp.dir, 'state-bad');
    const run = await runBaton([
      '--store',
      'ftp://host/x',
      '--state-dir',
      stateDir,
      '--deployment',
      '0123456789abcdef0123456789abcdef',
      'store',
      'check',
    ]);
    expect(run.exitCode, run.all).toBe(2);
    expect(run.stderr).toContain('ftp://host/x');
    expect(run.stderr).toContain('s3://bucket/prefix');
    expect(snapshotDir(stateDir)).toEqual({});
  });

  it('fails with exit 1 naming the bucket and endpoint when the S3 endpoint is down, and records nothing', async () => {
    const stateDir = path.join(temp.dir, 'state-down');
    const url = 's3://baton-sandbox/p?region=us-east-1&endpoint=http://127.0.0.1:9&path_style=true';
    const run = await runBaton(
      [
        '--store',
        url,
        '--state-dir',
        stateDir,
        '--deployment',
        '0123456789abcdef0123456789abcdef',
        'store',
        'check',
      ],
      { env: S3_TEST_ENV },
    );
    expect(run.exitCode, run.all).toBe(1);
    expect(run.stderr).toContain('s3://baton-sandbox/p/');
    expect(run.stderr).toContain('http://127.0.0.1:9');
    expect(snapshotDir(stateDir)).toEqual({});
  });

  it('writes a new 32-byte seal key 0600 and never prints it', async () => {
    const file = path.join(temp.dir, 'seal.key');
    const run = await runBaton(['key', 'generate', file]);
    expect(run.exitCode, run.all).toBe(0);
    const key = readFileSync(file);
    expect(key.length).toBe(32);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    for (const encoding of ['hex', 'base64'] as const) expect(run.all).not.toContain(key.toString(encoding));
    expect(run.stdout).toContain('every controller');
  });

  it('refuses to overwrite an existing file with exit 3 and leaves it unchanged', async () => {
    const file = path.join(temp.dir, 'existing.key');
    writeFileSync(file, 'precious', { mode: 0o600 });
    const before = snapshotDir(temp.dir);
    const run = await runBaton(['key', 'generate', file]);
    expect(run.exitCode, run.all).toBe(3);
    expect(run.stderr).toContain('never overwrites a key');
    expect(run.stderr).toContain(file);
    expect(run.stderr).toContain('Nothing was written.');
    expect(snapshotDir(temp.dir)).toEqual(before);
  });
});
