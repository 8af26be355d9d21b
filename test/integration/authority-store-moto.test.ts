/**
 * The authority against a store that is wrong in the ways an operator meets, through the BUILT
 * CLI on moto_server (an S3 that enforces preconditions and keeps versions), run as a script
 * runs it:
 *
 * - a host whose seal key differs from the fleet's is told so, is offered no replace, and a
 *   replace it tries anyway changes nothing in the store;
 * - a mistyped prefix next to this deployment's document, and a deleted document over earlier
 *   versions, refuse `--first-controller` (exit 3) and mint nothing;
 * - with the store down, the refusal names the offline route, and following it a fresh host
 *   adopts the fleet's authority byte-identically.
 */
import { createPrivateKey, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { rotateAuthority, systemClock, type Clock } from '../../src/authority/index.js';
import { adopt, firstController, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { S3Store } from '../../src/store/s3-store.js';
import { parseStoreUrl, type S3StoreSpec } from '../../src/store/store-url.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';
import { assertBuilt, BIN, runBaton, type BatonRun } from '../helpers/run-baton.js';

const DEPLOYMENT = '34a34a34a34a34a34a34a34a34a34a34';

let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
let seq = 0;

beforeAll(async () => {
  assertBuilt();
  moto = await startMoto();
  tmp = makeTempDir('baton-authority-store-');
}, 120_000);

afterAll(async () => {
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

function sealKeyFile(name: string): string {
  const file = path.join(tmp.dir, `${name}-${++seq}.key`);
  writeFileSync(file, randomBytes(32), { mode: 0o600 });
  return file;
}

function stateDir(name: string): string {
  return path.join(tmp.dir, `${name}-${++seq}`);
}

function baton(
  m: MotoS3,
  url: string,
  dir: string,
  seal: readonly string[],
  args: readonly string[],
): Promise<BatonRun> {
  return runBaton([...seal, '--deployment', DEPLOYMENT, '--state-dir', dir, '--store', url, ...args], {
    env: m.env,
  });
}

const flat = (text: string) => text.replace(/\s+/g, ' ');

describe('a host whose seal key differs from the fleet’s', () => {
  it('is told its key differs, is offered no replace and no --unseal, and a replace it tries leaves the store unchanged', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const url = moto.storeUrl(bucket, 'fleet');
    const fleetKey = sealKeyFile('fleet');
    const first = await baton(
      moto,
      url,
      stateDir('a'),
      ['--seal-key-file', fleetKey],
      ['sync', '--first-controller', '--yes'],
    );
    expect(first.exitCode, first.all).toBe(0);
    const before = await moto.getObject(bucket, 'fleet/authority.json');
    const versionsBefore = await moto.versions(bucket, 'fleet');

    const otherKey = ['--seal-key-file', sealKeyFile('other')];
    // A fresh host and a whole host (a copy of the fleet's authority), each with the wrong key.
    const fresh = stateDir('fresh');
    const whole = stateDir('whole');
    const copied = await baton(moto, url, whole, ['--seal-key-file', fleetKey], ['sync']);
    expect(copied.exitCode, copied.all).toBe(0);
    for (const dir of [fresh, whole]) {
      const local = existsSync(dir) ? snapshotDir(dir) : undefined;
      for (const args of [['status'], ['sync']]) {
        const run = await baton(moto, url, dir, otherKey, args);
        const said = flat(run.all);
        expect(run.exitCode, run.all).toBe(3);
        expect(said).toContain('sealed with another key');
        expect(said).toContain("This host's seal key differs from the fleet's");
        expect(said).not.toContain('--replace-unreadable');
        expect(said).not.toContain('--unseal');
      }
      // Tried anyway, with the bad object's ETag: refused, exit 3.
      const etag8 = before!.etag.replace(/"/g, '').slice(0, 8);
      const replace = await baton(moto, url, dir, otherKey, [
        'sync',
        '--replace-unreadable',
        '--confirm',
        etag8,
      ]);
      expect(replace.exitCode, replace.all).toBe(3);
      expect(flat(replace.all)).toContain('sealed with another key');
      if (local) expect(snapshotDir(dir)).toEqual(local);
      else expect(existsSync(path.join(dir, 'ca'))).toBe(false);
    }
    const after = await moto.getObject(bucket, 'fleet/authority.json');
    expect(after!.etag).toBe(before!.etag);
    expect(Buffer.from(after!.body).equals(Buffer.from(before!.body))).toBe(true);
    expect(await moto.versions(bucket, 'fleet')).toEqual(versionsBefore);
  }, 120_000);
});

describe('minting over a near miss is refused', () => {
  it('a typo’d prefix next to this deployment’s document: status says to fix the store URL, `sync --first-controller --yes` exits 3 and mints nothing', async () => {
    const bucket = await moto.bucket();
    const right = moto.storeUrl(bucket, 'fleet/wire');
    const typo = moto.storeUrl(bucket, 'fleet/wier');
    const a = await baton(moto, right, stateDir('a'), ['--no-seal'], ['sync', '--first-controller', '--yes']);
    expect(a.exitCode, a.all).toBe(0);

    const b = stateDir('b');
    const status = await baton(moto, typo, b, ['--no-seal'], ['status']);
    expect(status.exitCode, status.all).toBe(3);
    expect(flat(status.all)).toContain('a document of THIS deployment is at a neighbouring prefix');
    expect(flat(status.all)).toContain('Fix the store URL');
    expect(status.all).not.toContain('--first-controller');

    const mint = await baton(moto, typo, b, ['--no-seal'], ['sync', '--first-controller', '--yes']);
    expect(mint.exitCode, mint.all).toBe(3);
    expect(flat(mint.all)).toContain('--first-controller is refused');
    expect(flat(mint.all)).toContain(`${bucket}/fleet/wire/authority.json`);
    expect(await moto.getObject(bucket, 'fleet/wier/authority.json')).toBeUndefined();
    expect(existsSync(path.join(b, 'ca'))).toBe(false);
  }, 120_000);

  it('a deleted document in a versioned bucket (a delete marker over earlier versions) is not "nothing published"', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const url = moto.storeUrl(bucket, 'fleet');
    const a = await baton(moto, url, stateDir('a'), ['--no-seal'], ['sync', '--first-controller', '--yes']);
    expect(a.exitCode, a.all).toBe(0);
    await moto.deleteObject(bucket, 'fleet/authority.json');
    const versions = await moto.versions(bucket, 'fleet');

    const b = stateDir('b');
    const mint = await baton(moto, url, b, ['--no-seal'], ['sync', '--first-controller', '--yes']);
    expect(mint.exitCode, mint.all).toBe(3);
    expect(flat(mint.all)).toContain('1 earlier version(s)');
    expect(flat(mint.all)).toContain('the document was deleted');
    expect(await moto.versions(bucket, 'fleet')).toEqual(versions);
    expect(existsSync(path.join(b, 'ca'))).toBe(false);
  }, 120_000);
});

const stores: S3Store[] = [];
afterAll(() => stores.forEach((store) => store.destroy()));

function host(url: string, name: string, clock: Clock = systemClock): ShareContext {
  const store = new S3Store(parseStoreUrl(url) as S3StoreSpec, {
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    maxAttempts: 2,
  });
  stores.push(store);
  return { stateDir: stateDir(name), deployment: DEPLOYMENT, store, clock, host: name, noSeal: true };
}

describe('where the store keeps versions', () => {
  it('a replayed older version is refused on adopt, naming both authorities, and nothing is installed', async () => {
    const bucket = await moto.bucket({ versioned: true });
    const url = moto.storeUrl(bucket, 'fleet');
    const a = host(url, 'a');
    const first = await firstController(a);
    if (first.kind !== 'first-controller') throw new Error('fixture');
    const old = (await moto.getObject(bucket, 'fleet/authority.json'))!.body;
    // The fleet rotates and publishes the rotation; then someone puts the old bytes back.
    await new Promise((r) => setTimeout(r, 1100));
    const rotated = await rotateAuthority(a.stateDir, DEPLOYMENT, { clock: systemClock });
    expect((await publish(a)).kind).toBe('published');
    await moto.putObject(bucket, 'fleet/authority.json', old);

    const b = host(url, 'b');
    const refused = await batonErrorOf(adopt(b));
    expect(refused).toMatchObject({ code: 'refused', reason: 'replayed' });
    expect(refused.what).toContain(first.fingerprint);
    expect(refused.what).toContain(rotated.current);
    expect(refused.what).toContain('a later rotation of it');
    expect(existsSync(path.join(b.stateDir, 'ca'))).toBe(false);

    // The real rotation back on top: adopting it is fine.
    expect((await publish(a, {})).kind).toBe('published');
    expect((await adopt(host(url, 'c'))).kind).toBe('installed');
  }, 120_000);
});

describe('a clock more than a minute from the store’s', () => {
  it('refuses to mint, saying by how much, and nothing reaches the store or the disk', async () => {
    const bucket = await moto.bucket();
    const url = moto.storeUrl(bucket, 'fleet');
    const ahead: Clock = { now: () => new Date(Date.now() + 3 * 3_600_000) };
    const c = host(url, 'c', ahead);
    const refused = await batonErrorOf(firstController(c));
    expect(refused).toMatchObject({ code: 'refused', reason: 'clock-off' });
    expect(refused.what).toContain('about 3 hours ahead of');
    expect(refused.changed).toMatch(/^Nothing was minted or written\./);
    expect(await moto.getObject(bucket, 'fleet/authority.json')).toBeUndefined();
    expect(existsSync(path.join(c.stateDir, 'ca'))).toBe(false);
    // On time, the same host mints.
    expect((await firstController({ ...c, clock: systemClock })).kind).toBe('first-controller');
  }, 120_000);
});

describe('the terminal gate for minting', () => {
  it('shows the store URL it will publish to and never prints the answer it asks for', async () => {
    const dir = path.join(tmp.dir, `gate-${++seq}`);
    mkdirSync(dir, { recursive: true });
    // The deployment comes from the config file, so nothing the operator typed shows the id.
    const config = path.join(dir, 'baton.yaml');
    writeFileSync(
      config,
      `deployment: ${DEPLOYMENT}\nstate_dir: ${dir}/state\nstore: file://${dir}/store\nseal: none\n`,
    );
    const command = `node ${BIN} --config ${config} sync --first-controller`;
    // A real pty (script), fed a wrong answer once the question is up.
    const child = execa('script', ['-qec', command, '/dev/null'], {
      reject: false,
      all: true,
      timeout: 60_000,
    });
    let shown = '';
    child.all.on('data', (chunk: Buffer) => {
      shown += chunk.toString();
      if (shown.includes('then Enter:') && child.stdin.writable) child.stdin.end('wrongans\n');
    });
    const run = await child;
    const beforeAnswer = shown.slice(0, shown.indexOf('then Enter:') + 'then Enter:'.length);
    expect(beforeAnswer, shown).toContain(`publishes it to ${dir}/store/authority.json`);
    expect(beforeAnswer).toContain('not shown here');
    expect(shown).not.toContain(DEPLOYMENT.slice(0, 8));
    expect(run.exitCode, shown).toBe(3);
    expect(existsSync(path.join(dir, 'store', 'authority.json'))).toBe(false);
    expect(existsSync(path.join(dir, 'state', 'ca'))).toBe(false);
  }, 90_000);
});

describe('a key billet cannot parse', () => {
  it('a PKCS#8 ca.key reads whole to baton, and status says billet cannot parse it', async () => {
    const dir = path.join(tmp.dir, `pkcs8-${++seq}`);
    const args = [
      '--no-seal',
      '--deployment',
      DEPLOYMENT,
      '--state-dir',
      `${dir}/state`,
      '--store',
      `file://${dir}/store`,
    ];
    mkdirSync(`${dir}/store`, { recursive: true });
    expect((await runBaton([...args, 'sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    const before = await runBaton([...args, 'status']);
    expect(before.stdout).not.toContain('billet cannot parse');
    // The same key, re-encoded as PKCS#8 ("PRIVATE KEY"): what baton wrote before it matched billet.
    const keyFile = path.join(dir, 'state', 'ca', 'ca.key');
    const pkcs8 = createPrivateKey(readFileSync(keyFile)).export({ type: 'pkcs8', format: 'pem' });
    writeFileSync(keyFile, pkcs8, { mode: 0o600 });
    const status = await runBaton([...args, 'status']);
    expect(flat(status.stdout)).toContain('PKCS#8 ("PRIVATE KEY"): billet cannot parse it');
  }, 60_000);
});

describe('in an outage, the offline route', () => {
  it('moto stopped: the refusal names the route; following it, a fresh host adopts the fleet’s authority byte-identically', async () => {
    // A server of its own: this test stops it, and the run's moto serves the other files.
    const own = await startMoto({ own: true });
    let stopped = false;
    try {
      const bucket = await own.bucket();
      const url = own.storeUrl(bucket, 'fleet');
      const sealKey = ['--seal-key-file', sealKeyFile('fleet')];
      const a = stateDir('a');
      const first = await baton(own, url, a, sealKey, ['sync', '--first-controller', '--yes']);
      expect(first.exitCode, first.all).toBe(0);
      await own.close();
      stopped = true;

      const b = stateDir('b');
      const down = await baton(own, url, b, sealKey, ['sync']);
      expect(down.exitCode, down.all).toBe(1);
      const said = flat(down.stderr);
      expect(said).toContain('the offline route');
      expect(said).toContain('ca export --to <DIR>');
      expect(said).toContain('sync --store <file:///DIR>');
      expect(existsSync(path.join(b, 'ca'))).toBe(false);

      // On the host that holds the authority: the export, sealed as it is published.
      const exportDir = path.join(tmp.dir, `export-${++seq}`);
      const exported = await baton(own, url, a, sealKey, ['ca', 'export', '--to', exportDir]);
      expect(exported.exitCode, exported.all).toBe(0);
      const document = JSON.parse(readFileSync(path.join(exportDir, 'authority.json'), 'utf8')) as object;
      expect(document).toHaveProperty('sealed');
      expect(document).not.toHaveProperty('files');
      // A second export into the same directory never overwrites the first.
      const again = await baton(own, url, a, sealKey, ['ca', 'export', '--to', exportDir]);
      expect(again.exitCode, again.all).toBe(3);

      // On the promoted host, the suggested command as printed: the global --store, then sync's own.
      mkdirSync(path.dirname(exportDir), { recursive: true });
      const adopted = await baton(own, url, b, sealKey, ['sync', '--store', `file://${exportDir}`]);
      expect(adopted.exitCode, adopted.all).toBe(0);
      expect(adopted.stdout).toContain('adopted');
      for (const name of ['ca.key', 'ca.crt'])
        expect(readFileSync(path.join(b, 'ca', name)).equals(readFileSync(path.join(a, 'ca', name)))).toBe(
          true,
        );
    } finally {
      if (!stopped) await own.close();
    }
  }, 180_000);
});
