/**
 * billet's own document through both real stores billet and baton share, with the built CLI:
 * a document exactly as billet's wireshare.Publish writes it, placed in SSM with `aws ssm
 * put-parameter` and in S3 as an object, is adopted by a fresh host byte for byte (the marker
 * included) and then reads as in sync; what baton's first controller publishes to SSM is a
 * SecureString that billet's rules (test/helpers/billet/wireshare-rules.ts) install.
 *
 * Under CI=true a missing moto_server or openssl fails this file; it never skips.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { billetAdopt } from '../helpers/billet/wireshare-rules.js';
import { billetDocument, billetFiles, billetPair, requireOpenssl } from '../helpers/billet-fixture.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { MOTO_ENV } from '../helpers/moto-s3.js';
import { startMotoSsm, type MotoSsm } from '../helpers/moto-ssm.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const DEPLOYMENT = 'fedcba9876543210fedcba9876543210';
const LEAF = 'node-wire-authority';

let ssm: MotoSsm;
let tmp: { dir: string; cleanup: () => void };
let seq = 0;

beforeAll(async () => {
  assertBuilt();
  requireOpenssl();
  ssm = await startMotoSsm();
  tmp = makeTempDir('baton-billet-stores-');
}, 200_000);

afterAll(async () => {
  await ifSet(ssm)?.close();
  ifSet(tmp)?.cleanup();
});

function baton(store: string, stateDir: string, args: readonly string[]) {
  return runBaton(['--store', store, '--state-dir', stateDir, '--deployment', DEPLOYMENT, ...args], {
    env: MOTO_ENV,
    timeoutMs: 150_000,
  });
}

/** A fresh host adopts `stored` from `store` and then reads in sync; its files are billet's bytes. */
async function adoptsByteForByte(store: string, pair: ReturnType<typeof billetPair>) {
  const stateDir = path.join(tmp.dir, `host-${++seq}`);
  const sync = await baton(store, stateDir, ['sync']);
  expect(sync.exitCode, sync.all).toBe(0);
  expect(readFileSync(path.join(stateDir, 'ca', 'ca.key'))).toEqual(Buffer.from(pair.keyPem));
  expect(readFileSync(path.join(stateDir, 'ca', 'ca.crt'))).toEqual(Buffer.from(pair.certPem));
  expect(readFileSync(path.join(stateDir, 'authority-created'), 'utf8')).toBe(`${DEPLOYMENT}\n`);
  const status = await baton(store, stateDir, ['status', '--json']);
  expect(status.exitCode, status.all).toBe(0);
  const report = JSON.parse(status.stdout) as { published: { fingerprint: string } };
  expect(report.published.fingerprint).toBe(pair.fingerprint);
}

describe("billet's document in SSM and S3 (moto), read and written by the built CLI", () => {
  it('SSM: a document placed by `aws ssm put-parameter` exactly as billet writes it is adopted byte for byte, then in sync', async () => {
    const pair = billetPair(path.join(tmp.dir, 'fixtures'), DEPLOYMENT);
    const body = billetDocument(DEPLOYMENT, pair.fingerprint, billetFiles(DEPLOYMENT, pair));
    const prefix = ssm.prefix();
    const name = `${prefix}/${LEAF}`;
    ssm.aws([
      'ssm',
      'put-parameter',
      '--name',
      name,
      '--type',
      'SecureString',
      '--value',
      Buffer.from(body).toString(),
    ]);
    expect((await ssm.value(name))?.value).toBe(Buffer.from(body).toString());
    await adoptsByteForByte(ssm.storeUrl(prefix), pair);
    // Adopting changed nothing in the store: still billet's one version.
    expect((await ssm.history(name)).length).toBe(1);
  }, 200_000);

  it('S3: the same bytes as an object are adopted byte for byte, then in sync', async () => {
    const pair = billetPair(path.join(tmp.dir, 'fixtures'), DEPLOYMENT);
    const body = billetDocument(DEPLOYMENT, pair.fingerprint, billetFiles(DEPLOYMENT, pair));
    const bucket = await ssm.moto.bucket();
    await ssm.moto.putObject(bucket, 'prod/authority.json', body);
    await adoptsByteForByte(ssm.moto.storeUrl(bucket, 'prod'), pair);
    expect((await ssm.moto.getObject(bucket, 'prod/authority.json'))?.body).toEqual(body);
  }, 200_000);

  it("SSM: a first controller's document is a SecureString that billet's rules install whole, marker included", async () => {
    const prefix = ssm.prefix();
    const name = `${prefix}/${LEAF}`;
    const stateDir = path.join(tmp.dir, `first-${++seq}`);
    const first = await baton(ssm.storeUrl(prefix), stateDir, ['sync', '--first-controller', '--yes']);
    expect(first.exitCode, first.all).toBe(0);
    expect((await ssm.describe(name))?.Type).toBe('SecureString');
    const stored = await ssm.value(name);
    const adopted = billetAdopt(new TextEncoder().encode(stored?.value), DEPLOYMENT, undefined);
    expect(adopted.kind, JSON.stringify(adopted)).toBe('installed');
    if (adopted.kind !== 'installed') return;
    expect(Buffer.from(adopted.files['authority-created']!).toString()).toBe(`${DEPLOYMENT}\n`);
    expect(Buffer.from(adopted.files['ca.key']!)).toEqual(readFileSync(path.join(stateDir, 'ca', 'ca.key')));
    expect(Buffer.from(adopted.files['ca.crt']!)).toEqual(readFileSync(path.join(stateDir, 'ca', 'ca.crt')));
  }, 200_000);
});
