/**
 * THE STORE'S COPY FOLLOWS RETIRE, on moto (S3 that enforces If-Match) through the built CLI.
 * A retired key that stayed published came back: a rebuilt controller adopted both pairs and
 * billet served with the RETIRED authority. Retiring on the host that publishes re-publishes
 * the document with one pair; when the store was not written (no store given), status says the
 * store still carries the retired key and names the bound command that removes it; a fresh
 * host adopting afterwards gets one pair.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { confirmationPrefix, type Fingerprint } from '../../src/pki/fingerprint-type.js';
import { parseDocument } from '../../src/share/document.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';
import { assertBuilt, runBaton, type BatonRun } from '../helpers/run-baton.js';

const DEP = '0123456789abcdef0123456789abcdef';
let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
let seq = 0;

beforeAll(async () => {
  assertBuilt();
  moto = await startMoto();
  tmp = makeTempDir('baton-retire-store-');
}, 120_000);

afterAll(async () => {
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

async function world() {
  const bucket = await moto.bucket();
  const prefix = `r${++seq}`;
  const url = moto.storeUrl(bucket, prefix);
  const dir = (name: string) => path.join(tmp.dir, `${prefix}-${name}`);
  const baton = (name: string, args: readonly string[], withStore = true): Promise<BatonRun> =>
    runBaton(
      [
        '--no-seal',
        '--deployment',
        DEP,
        '--state-dir',
        dir(name),
        ...(withStore ? ['--store', url] : []),
        ...args,
      ],
      { env: moto.env },
    );
  const document = async () => {
    const object = await moto.getObject(bucket, `${prefix}/authority.json`);
    if (!object) throw new Error('nothing published');
    const parsed = parseDocument(object.body, { deployment: DEP, where: url });
    return { etag: object.etag, header: parsed.header, names: Object.keys(parsed.files ?? {}).sort() };
  };
  return { dir, baton, document };
}

async function whole(stateDir: string) {
  const local = await readLocalAuthority(stateDir, DEP);
  if (local.state !== 'whole') throw new Error(`expected whole in ${stateDir}, got ${local.state}`);
  return local;
}

/** A first controller that rotated and published, and a second that adopted mid-overlap. */
async function overlapOnTwoHosts() {
  const w = await world();
  expect((await w.baton('a', ['sync', '--first-controller', '--yes'])).exitCode).toBe(0);
  const previous: Fingerprint = (await whole(w.dir('a'))).current.fingerprint;
  expect((await w.baton('a', ['ca', 'rotate'])).exitCode).toBe(0);
  const pushed = await w.baton('a', ['sync', '--push']);
  expect(pushed.exitCode, pushed.all).toBe(0);
  expect((await w.baton('b', ['sync'])).exitCode).toBe(0);
  expect((await whole(w.dir('b'))).previous?.fingerprint).toBe(previous);
  expect((await w.document()).names).toContain('ca-previous.key');
  return { w, previous };
}

describe('retire and the published document', () => {
  it('retire on both hosts: the published document carries no ca-previous.*, and a fresh host adopting gets one pair', async () => {
    const { w, previous } = await overlapOnTwoHosts();
    const before = await w.document();

    const onA = await w.baton('a', ['ca', 'retire', '--confirm', confirmationPrefix(previous)]);
    expect(onA.exitCode, onA.all).toBe(0);
    expect(onA.stdout).toContain(`no longer carries the previous authority ${previous}`);
    const after = await w.document();
    expect(after.etag).not.toBe(before.etag);
    expect(after.header.previousFingerprint).toBeNull();
    expect(after.header.fingerprint).toBe(before.header.fingerprint);
    expect(after.names).toEqual(['authority-created', 'ca.crt', 'ca.key']);

    const onB = await w.baton('b', ['ca', 'retire', '--confirm', confirmationPrefix(previous)]);
    expect(onB.exitCode, onB.all).toBe(0);
    expect(onB.stdout).toContain('carries no previous pair');
    expect((await w.document()).etag).toBe(after.etag);

    for (const host of ['a', 'b']) {
      const status = await w.baton(host, ['status']);
      expect(status.exitCode, status.all).toBe(0);
    }
    expect((await w.baton('c', ['sync'])).exitCode).toBe(0);
    const fresh = await whole(w.dir('c'));
    expect(fresh.previous).toBeUndefined();
    expect(fresh.current.fingerprint).toBe(after.header.fingerprint);
    expect(existsSync(path.join(w.dir('c'), 'ca', 'ca-previous.key'))).toBe(false);
    expect(existsSync(path.join(w.dir('c'), 'ca', 'ca-previous.crt'))).toBe(false);
  }, 120_000);

  it('a retire that did not reach the store: status says the store still carries the retired key and names the bound command; without its value nothing is written, with it the store follows', async () => {
    const { w, previous } = await overlapOnTwoHosts();
    const retired = await w.baton('a', ['ca', 'retire', '--confirm', confirmationPrefix(previous)], false);
    expect(retired.exitCode, retired.all).toBe(0);
    expect(retired.stdout).toContain('No store is configured');
    const stale = await w.document();
    expect(stale.names).toContain('ca-previous.key');

    const status = await w.baton('a', ['status']);
    expect(status.exitCode, status.all).toBe(3);
    expect(status.stdout).toContain(`the store still carries the previous key ${previous}`);
    expect(status.stdout).toContain('ca retire --confirm <PREVIOUS 8>');

    const unbound = await w.baton('a', ['ca', 'retire']);
    expect(unbound.exitCode, unbound.all).toBe(2);
    expect(unbound.stderr).toContain('still carries the previous authority');
    expect((await w.document()).etag).toBe(stale.etag);

    const bound = await w.baton('a', ['ca', 'retire', '--confirm', confirmationPrefix(previous)]);
    expect(bound.exitCode, bound.all).toBe(0);
    expect((await w.document()).names).toEqual(['authority-created', 'ca.crt', 'ca.key']);
    expect((await w.baton('a', ['status'])).exitCode).toBe(0);
  }, 120_000);
});
