/**
 * Byte compatibility with billet's wirecert (docs/authority-on-disk.md): baton runs on a billet controller's
 * own state dir, publishes what it finds there byte for byte, and another host adopts exactly
 * those bytes — and what baton writes is what openssl (and so Go's x509) reads as SEC1 and as
 * billet's names. The fixtures are made by openssl at run time.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import {
  mintAuthority,
  readLocalAuthority,
  retireAuthority,
  rotateAuthority,
} from '../../src/authority/index.js';
import { decodeDocument } from '../../src/share/document.js';
import { adopt, look, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { openStore } from '../../src/store/open-store.js';
import { fingerprintOfFiles, fixedClock, makeAuthority, TEST_DEPLOYMENT } from '../helpers/authority.js';
import {
  billetPair,
  openssl,
  type BilletPair,
  requireOpenssl,
  writeBilletState,
} from '../helpers/billet-fixture.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

const DEP = TEST_DEPLOYMENT;
const temp = makeTempDir('baton-billet-');
afterAll(() => temp.cleanup());
beforeAll(() => requireOpenssl());

let n = 0;
async function context(storeDir: string, name: string): Promise<ShareContext> {
  const stateDir = path.join(temp.dir, `${name}-${n++}`);
  return {
    stateDir,
    deployment: DEP,
    store: await openStore(`file://${storeDir}`),
    clock: fixedClock(new Date()),
    host: name,
    noSeal: true,
  };
}

/** A successor of `old` as billet's rotate mints it: SEC1 key, OU billet-replaces:<old>. */
async function successorOf(old: BilletPair): Promise<BilletPair> {
  const files = await mintAuthority(DEP, { replaces: old.fingerprint });
  return {
    keyPem: files['ca.key']!,
    certPem: files['ca.crt']!,
    fingerprint: await fingerprintOfFiles(files),
  };
}

const onDisk = (stateDir: string, name: string) =>
  new Uint8Array(readFileSync(path.join(stateDir, 'ca', name)));

describe("a billet controller's own files (openssl-made, as Go's x509 writes them)", () => {
  it('read as one whole authority with the fingerprint openssl computes, naming no predecessor', async () => {
    const pair = billetPair(temp.dir, DEP);
    expect(Buffer.from(pair.keyPem).toString()).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n/);
    const stateDir = path.join(temp.dir, `whole-${n++}`);
    writeBilletState(stateDir, DEP, pair);
    const local = await readLocalAuthority(stateDir, DEP);
    expect(local).toMatchObject({
      state: 'whole',
      current: { fingerprint: pair.fingerprint, replaces: undefined, claim: undefined },
      previous: undefined,
      markerMissing: false,
    });
  });

  it('publish with their key bytes exactly as on disk, and another host adopts them byte for byte', async () => {
    const storeDir = path.join(temp.dir, `store-${n++}`);
    const billet = await context(storeDir, 'billet');
    const pair = billetPair(temp.dir, DEP);
    writeBilletState(billet.stateDir, DEP, pair);
    expect((await publish(billet)).kind).toBe('published');

    const stored = await billet.store.get();
    const document = await decodeDocument(stored!.body, { deployment: DEP, where: 'test' });
    expect(Buffer.from(document.files['ca.key']!)).toEqual(Buffer.from(pair.keyPem));
    expect(Buffer.from(document.files['ca.crt']!)).toEqual(Buffer.from(pair.certPem));

    const fresh = await context(storeDir, 'baton');
    expect(await adopt(fresh)).toEqual({ kind: 'installed', fingerprint: pair.fingerprint });
    expect(Buffer.from(onDisk(fresh.stateDir, 'ca.key'))).toEqual(Buffer.from(pair.keyPem));
    expect(Buffer.from(onDisk(fresh.stateDir, 'ca.crt'))).toEqual(Buffer.from(pair.certPem));
    expect((await look(fresh)).verdict).toEqual({ kind: 'in-sync', fingerprint: pair.fingerprint });
  });

  it('a billet rotation overlap (OU billet-replaces:) reads whole, travels byte for byte, and retires as proved', async () => {
    const storeDir = path.join(temp.dir, `store-${n++}`);
    const billet = await context(storeDir, 'billet');
    // openssl refuses to write the 66-character OU (X.520's bound is 64; Go's x509 does not
    // check it), so the successor is minted by baton, which writes what billet's rotate writes.
    const old = billetPair(temp.dir, DEP);
    const next = await successorOf(old);
    writeBilletState(billet.stateDir, DEP, next, old);
    expect(await readLocalAuthority(billet.stateDir, DEP)).toMatchObject({
      state: 'whole',
      current: { fingerprint: next.fingerprint, replaces: old.fingerprint },
      previous: { fingerprint: old.fingerprint },
    });
    await publish(billet);
    const fresh = await context(storeDir, 'baton');
    await adopt(fresh);
    for (const [name, bytes] of [
      ['ca.key', next.keyPem],
      ['ca.crt', next.certPem],
      ['ca-previous.key', old.keyPem],
      ['ca-previous.crt', old.certPem],
    ] as const) {
      expect(Buffer.from(onDisk(fresh.stateDir, name))).toEqual(Buffer.from(bytes));
    }
    expect(
      await retireAuthority(fresh.stateDir, DEP, { confirm: confirmationPrefix(old.fingerprint) }),
    ).toEqual({
      kind: 'retired',
      previous: old.fingerprint,
      current: next.fingerprint,
    });
  });
});

describe('what baton writes, as openssl reads it', () => {
  it("a key openssl ec checks as a valid SEC1 EC key, a certificate whose subject is billet's, and a rotation claim billet reads", async () => {
    const made = await makeAuthority({ stateDir: path.join(temp.dir, `baton-${n++}`) });
    const key = path.join(made.caDir, 'ca.key');
    const cert = path.join(made.caDir, 'ca.crt');
    expect(readFileSync(key, 'utf8')).toMatch(
      /^-----BEGIN EC PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END EC PRIVATE KEY-----\n$/,
    );
    const check = await import('node:child_process').then(({ execFileSync }) =>
      execFileSync('/bin/sh', ['-c', `openssl ec -in '${key}' -check -noout 2>&1`], { encoding: 'utf8' }),
    );
    expect(check).toContain('EC Key valid.');
    expect(openssl(['x509', '-in', cert, '-noout', '-subject', '-nameopt', 'RFC2253']).trim()).toBe(
      `subject=O=${DEP},CN=billet node wire CA`,
    );

    const rotated = await rotateAuthority(made.stateDir, DEP, { clock: fixedClock() });
    expect(openssl(['x509', '-in', cert, '-noout', '-subject', '-nameopt', 'RFC2253']).trim()).toBe(
      `subject=OU=billet-replaces:${rotated.previous.replace(/\+/g, '\\+')},O=${DEP},CN=billet node wire CA`,
    );
    expect(readFileSync(path.join(made.caDir, 'ca-previous.key'), 'utf8')).toMatch(
      /^-----BEGIN EC PRIVATE KEY-----\n/,
    );
    made.cleanup();
  });

  it('an authority baton wrote before it matched billet (PKCS#8 keys) still reads whole, and a baton-replaces: claim still proves the predecessor', async () => {
    const { createPrivateKey } = await import('node:crypto');
    const pkcs8 = (pem: Uint8Array) =>
      new TextEncoder().encode(
        createPrivateKey(Buffer.from(pem)).export({ type: 'pkcs8', format: 'pem' }) as string,
      );
    const old = billetPair(temp.dir, DEP);
    const next = await successorOf(old);
    const stateDir = path.join(temp.dir, `legacy-${n++}`);
    writeBilletState(
      stateDir,
      DEP,
      { ...next, keyPem: pkcs8(next.keyPem) },
      { ...old, keyPem: pkcs8(old.keyPem) },
    );
    expect(readFileSync(path.join(stateDir, 'ca', 'ca.key'), 'utf8')).toMatch(
      /^-----BEGIN PRIVATE KEY-----\n/,
    );
    expect(await readLocalAuthority(stateDir, DEP)).toMatchObject({
      state: 'whole',
      current: { fingerprint: next.fingerprint, replaces: old.fingerprint },
      previous: { fingerprint: old.fingerprint },
    });
    expect(await retireAuthority(stateDir, DEP, { confirm: confirmationPrefix(old.fingerprint) })).toEqual({
      kind: 'retired',
      previous: old.fingerprint,
      current: next.fingerprint,
    });
  });
});
