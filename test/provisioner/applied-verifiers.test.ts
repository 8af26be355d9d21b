/**
 * The provisioner's record of the verifiers it applied (src/provisioner/applied-verifiers.ts), on
 * a real file system: 0600 in 0700 directories, the current and the one before, the kept one
 * found again by its credential's digest, and a temp a killed provisioner left removed once stale
 * (a younger one may be this provisioner's own write in flight, and is kept).
 */
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { appliedVerifierPath } from '../../src/mesh/applied-verifier.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { keptVerifier, prepareAppliedVerifier } from '../../src/provisioner/applied-verifiers.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const V1 = 'SCRAM-SHA-256$4096:b2xk$T0xE:T0xE';
const V2 = 'SCRAM-SHA-256$4096:bmV3$TkVX:TkVX';
const V3 = 'SCRAM-SHA-256$4096:dGhk$VEhE:VEhE';
const [D1, D2, D3] = ['one', 'two', 'three'].map((p) => secretDigest(p));

/** Written ahead and put in place, as the provisioner does once the database took the verifier. */
const recordAppliedVerifier = async (...args: Parameters<typeof prepareAppliedVerifier>) =>
  (await prepareAppliedVerifier(...args)).commit();

let tmp: { dir: string; cleanup: () => void };
beforeEach(() => {
  tmp = makeTempDir('baton-applied-verifiers-');
});
afterEach(() => tmp.cleanup());

it('keeps the current verifier and the one before, 0600 in 0700 directories; a credential applied again finds its own', async () => {
  const provider = path.join(tmp.dir, 'provides', 'pg-main');
  mkdirSync(provider, { recursive: true });
  await recordAppliedVerifier(provider, 'web1_app', { digest: D1!, verifier: V1 });
  await recordAppliedVerifier(provider, 'web1_app', { digest: D2!, verifier: V2 });
  expect(await keptVerifier(provider, 'web1_app', D1!)).toBe(V1);
  await recordAppliedVerifier(provider, 'web1_app', { digest: D3!, verifier: V3 });
  expect(await keptVerifier(provider, 'web1_app', D1!)).toBeUndefined();
  expect(await keptVerifier(provider, 'web1_app', D2!)).toBe(V2);
  expect(await keptVerifier(provider, 'web1_app', D3!)).toBe(V3);
  const file = appliedVerifierPath(provider, 'web1_app');
  expect(statSync(file).mode & 0o777).toBe(0o600);
  expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
  expect(statSync(path.dirname(path.dirname(file))).mode & 0o777).toBe(0o700);
});

it("removes a temp a killed provisioner left once it is stale, never a fresh one or another login's", async () => {
  const provider = path.join(tmp.dir, 'provides', 'pg-main');
  const dir = path.dirname(appliedVerifierPath(provider, 'web1_app'));
  mkdirSync(dir, { recursive: true });
  const stale = path.join(dir, '.web1_app.tmp-0123456789ab');
  const fresh = path.join(dir, '.web1_app.tmp-ba9876543210');
  const other = path.join(dir, '.web2_app.tmp-0123456789ab');
  for (const f of [stale, fresh, other]) writeFileSync(f, `x ${V1}\n`, { mode: 0o600 });
  const old = new Date(Date.now() - 120_000);
  for (const f of [stale, other]) utimesSync(f, old, old);
  await recordAppliedVerifier(provider, 'web1_app', { digest: D1!, verifier: V1 });
  expect(existsSync(stale)).toBe(false);
  expect(readdirSync(dir).sort()).toEqual([
    '.web1_app.tmp-ba9876543210',
    '.web2_app.tmp-0123456789ab',
    'web1_app',
  ]);
});

it('a record written ahead is not read until it is committed; abandoned, it leaves the kept one and no temp', async () => {
  const provider = path.join(tmp.dir, 'provides', 'pg-main');
  mkdirSync(provider, { recursive: true });
  await recordAppliedVerifier(provider, 'web1_app', { digest: D1!, verifier: V1 });
  const dir = path.dirname(appliedVerifierPath(provider, 'web1_app'));
  // Refused by the database: taken back.
  const refused = await prepareAppliedVerifier(provider, 'web1_app', { digest: D2!, verifier: V2 });
  expect(await keptVerifier(provider, 'web1_app', D2!)).toBeUndefined();
  expect(readdirSync(dir).filter((n) => n.includes('.tmp-'))).toHaveLength(1);
  await refused.abandon();
  expect(readdirSync(dir)).toEqual(['web1_app']);
  expect(await keptVerifier(provider, 'web1_app', D1!)).toBe(V1);
  // Taken: in place, 0600, the temp gone; abandoning it afterwards removes nothing.
  const taken = await prepareAppliedVerifier(provider, 'web1_app', { digest: D3!, verifier: V3 });
  await taken.commit();
  await taken.abandon();
  expect(readdirSync(dir)).toEqual(['web1_app']);
  expect(await keptVerifier(provider, 'web1_app', D3!)).toBe(V3);
  expect(await keptVerifier(provider, 'web1_app', D1!)).toBe(V1);
  expect(statSync(appliedVerifierPath(provider, 'web1_app')).mode & 0o777).toBe(0o600);
});
