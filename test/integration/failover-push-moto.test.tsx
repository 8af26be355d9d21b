/**
 * The failover walk's "keep this host's authority" against moto_server (S3 that ENFORCES
 * If-Match): two controllers rotated the same parent, the other published first. Walked with
 * real keys in the Ink view over the real S3 adapter: a wrong code writes nothing; the right one
 * leaves the store holding THIS host's authority, written if-match over the sibling's, and this
 * host's own authority — its previous pair included — exactly as it was.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FailoverApp } from '../../components/FailoverApp.js';
import { readLocalAuthority, rotateAuthority, systemClock } from '../../src/authority/index.js';
import { failoverPorts } from '../../src/operations/failover-ports.js';
import { adopt, firstController, look, publish } from '../../src/share/actions.js';
import { parseDocument } from '../../src/share/document.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { S3Store } from '../../src/store/s3-store.js';
import { parseStoreUrl, type S3StoreSpec } from '../../src/store/store-url.js';
import { KEY, renderAt } from '../components/render-at.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';

const DEPLOYMENT = 'f00df00df00df00df00df00df00df00d';
let moto: MotoS3;
let tmp: { dir: string; cleanup: () => void };
const stores: S3Store[] = [];

beforeAll(async () => {
  moto = await startMoto();
  tmp = makeTempDir('baton-failover-push-');
}, 120_000);
afterAll(async () => {
  stores.forEach((store) => store.destroy());
  await ifSet(moto)?.close();
  ifSet(tmp)?.cleanup();
});

function host(url: string, name: string): ShareContext {
  const store = new S3Store(parseStoreUrl(url) as S3StoreSpec, {
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    maxAttempts: 2,
  });
  stores.push(store);
  return {
    stateDir: path.join(tmp.dir, name),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    noSeal: true,
  };
}

async function whole(stateDir: string) {
  const local = await readLocalAuthority(stateDir, DEPLOYMENT);
  if (local.state !== 'whole') throw new Error(`expected a whole authority in ${stateDir}`);
  return local;
}

const flat = (frame: string) => frame.replace(/\s+/g, ' ');

describe('failover on S3 that enforces If-Match: keep this host over a sibling', () => {
  it("a wrong code writes nothing; the right one publishes this host's authority and leaves it untouched", async () => {
    const bucket = await moto.bucket();
    const url = moto.storeUrl(bucket, 'fleet');
    const key = 'fleet/authority.json';
    const a = host(url, 'a');
    const b = host(url, 'b');
    await firstController(a);
    await adopt(b);
    const parent = (await whole(b.stateDir)).current.fingerprint;
    await rotateAuthority(a.stateDir, DEPLOYMENT);
    expect((await publish(a)).kind).toBe('published');
    await rotateAuthority(b.stateDir, DEPLOYMENT);
    const mine = await whole(b.stateDir);
    const theirs = (await whole(a.stateDir)).current.fingerprint;
    expect((await look(b)).verdict).toMatchObject({ kind: 'refuse', lineage: { kind: 'siblings', parent } });
    const stored = await moto.getObject(bucket, key);
    const hereBefore = snapshotDir(b.stateDir);
    const previousKey = readFileSync(path.join(b.stateDir, 'ca', 'ca-previous.key'));
    const otherBefore = snapshotDir(a.stateDir);

    let exitCode: number | undefined;
    const view = renderAt(
      <FailoverApp
        ports={failoverPorts(b, url, undefined)}
        columns={80}
        baton="baton"
        onExit={(code) => (exitCode = code)}
      />,
      80,
    );
    try {
      await view.waitFor((f) => f.includes('› Leave it as it is') && f.includes('siblings'), 'the choices');
      await view.press(KEY.down);
      await view.press(KEY.down);
      await view.waitFor(
        (f) => f.includes("› Keep this host's authority"),
        'the cursor on keeping this host',
      );
      await view.press(KEY.enter);
      await view.waitFor((f) => f.includes('[ Publish ] disabled'), 'the push-over gate');
      const want = theirs.slice(7, 15);
      // A digit, never a letter: 'x' for an 'X' there is the same-letters-another-case refusal.
      const wrong = `${want.slice(0, 7)}${want[7] === '0' ? '1' : '0'}`;
      await view.press(wrong);
      await view.waitFor((f) => f.includes(`> ${wrong}`), 'the wrong code typed');
      await view.press(KEY.enter);
      const refused = flat(await view.waitFor((f) => f.includes('not accepted'), 'the refusal'));
      expect(refused).toContain('character 8 differs');
      expect((await moto.getObject(bucket, key))?.etag).toBe(stored!.etag);

      await view.press('\u0015');
      await view.press(want);
      await view.waitFor((f) => f.includes('[ Publish ] enabled'), 'the gate open');
      await view.press(KEY.enter);
      const done = await view.waitFor(
        (f) => f.includes('Read again:') && f.includes('in sync'),
        'the result, read again',
      );
      expect(flat(done)).toContain(`Published ${mine.current.fingerprint} to the store.`);
      await view.press('q');
    } finally {
      view.unmount();
    }
    expect(exitCode).toBe(0);

    // The store holds this host's authority, written over the sibling's.
    const now = await moto.getObject(bucket, key);
    expect(now!.etag).not.toBe(stored!.etag);
    const header = parseDocument(now!.body, { deployment: DEPLOYMENT, where: url }).header;
    expect(header.fingerprint).toBe(mine.current.fingerprint);
    expect(header.previousFingerprint).toBe(parent);
    // This host's authority, its previous pair with it, exactly as it was (the lock file aside).
    const { 'ca.lock': _lock, ...hereAfter } = snapshotDir(b.stateDir);
    const { 'ca.lock': _lockBefore, ...hereWas } = hereBefore;
    expect(hereAfter).toEqual(hereWas);
    expect(readFileSync(path.join(b.stateDir, 'ca', 'ca-previous.key'))).toEqual(previousKey);
    expect(snapshotDir(a.stateDir)).toEqual(otherBefore);
    // The sibling that published first is now the one refused.
    expect((await look(a)).verdict).toMatchObject({ kind: 'refuse', lineage: { kind: 'siblings', parent } });
  }, 120_000);
});
