/**
 * Proved in CI: every unsealed document baton can publish is one billet's
 * wireshare.Adopt installs and its ReadAuthority loads — run through test/helpers/billet/
 * wireshare-rules.ts, an independent model of billet's rules (node:crypto only, written from
 * billet's source at b2b42c1a). The model is shown to refuse what billet refuses first, so a
 * table of passes means something.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  readLocalAuthority,
  retireAuthority,
  rotateAuthority,
  withAuthorityLock,
} from '../../src/authority/index.js';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import {
  firstController,
  look,
  publish,
  push,
  replaceUnreadable,
  retirePublished,
} from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import {
  billetDocument,
  billetFiles,
  billetPair,
  requireOpenssl,
  writeBilletState,
  type BilletPair,
} from '../helpers/billet-fixture.js';
import { billetAdopt, billetFingerprint } from '../helpers/billet/wireshare-rules.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { MemoryStore } from '../helpers/memory-store.js';

const DEPLOYMENT = 'c0ffee00c0ffee00c0ffee00c0ffee00';
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

let pairs: string;
let a: BilletPair;
beforeAll(() => {
  requireOpenssl();
  const dir = makeTempDir('baton-billetreads-');
  pairs = dir.dir;
  a = billetPair(pairs, DEPLOYMENT);
  return dir.cleanup;
});

let n = 0;
async function host(store: MemoryStore, holds?: BilletPair, withMarker = true): Promise<ShareContext> {
  const { dir, cleanup } = makeTempDir('baton-billetreads-host-');
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  if (holds) {
    writeBilletState(stateDir, DEPLOYMENT, holds);
    if (!withMarker) rmSync(path.join(stateDir, 'authority-created'));
  }
  await withAuthorityLock(stateDir, async () => undefined);
  let t = Date.UTC(2026, 11, 1, 9, 0, 0);
  return {
    stateDir,
    deployment: DEPLOYMENT,
    store,
    clock: { now: () => new Date((t += 1000)) },
    host: `ctl-${n++}`,
    noSeal: true,
  };
}

const published = (store: MemoryStore) => {
  const body = store.document?.body;
  if (!body) throw new Error('nothing was published');
  return body;
};

/** Each way baton publishes, returning the document's bytes and the host that wrote it. */
const WAYS: Record<string, () => Promise<{ body: Uint8Array; ctx: ShareContext }>> = {
  'first controller (ca init / sync --first-controller)': async () => {
    const store = new MemoryStore();
    const ctx = await host(store);
    expect(await firstController(ctx)).toMatchObject({ kind: 'first-controller', wonRace: true });
    return { body: published(store), ctx };
  },
  'publish (sync on a whole host, nothing published)': async () => {
    const store = new MemoryStore();
    const ctx = await host(store, a);
    await publish(ctx);
    return { body: published(store), ctx };
  },
  'publish from a host whose marker is missing on disk': async () => {
    const store = new MemoryStore();
    const ctx = await host(store, billetPair(pairs, DEPLOYMENT), false);
    await publish(ctx);
    return { body: published(store), ctx };
  },
  'push of a rotation (sync --push, the rotation overlap)': async () => {
    const store = new MemoryStore();
    const ctx = await host(store);
    await firstController(ctx);
    await rotateAuthority(ctx.stateDir, DEPLOYMENT, { clock: ctx.clock });
    await push(ctx, { seen: (await look(ctx)).verdict });
    return { body: published(store), ctx };
  },
  'after retire (ca retire drops the previous pair from the store)': async () => {
    const store = new MemoryStore();
    const ctx = await host(store);
    await firstController(ctx);
    await rotateAuthority(ctx.stateDir, DEPLOYMENT, { clock: ctx.clock });
    await publish(ctx);
    const overlap = await readLocalAuthority(ctx.stateDir, DEPLOYMENT);
    if (overlap.state !== 'whole' || !overlap.previous) throw new Error('expected an overlap');
    const confirm = confirmationPrefix(overlap.previous.fingerprint);
    await retireAuthority(ctx.stateDir, DEPLOYMENT, { confirm });
    expect(await retirePublished(ctx, confirm)).toMatchObject({ kind: 'dropped' });
    return { body: published(store), ctx };
  },
  'push over another authority on purpose (sync --push --confirm <PUBLISHED 8>)': async () => {
    const store = new MemoryStore();
    const other = await host(store);
    await firstController(other);
    const ctx = await host(store, billetPair(pairs, DEPLOYMENT));
    await publish(ctx, { seen: (await look(ctx)).verdict, over: true });
    return { body: published(store), ctx };
  },
  'replace of an unusable document (sync --replace-unreadable --confirm <ETAG 8>)': async () => {
    const store = new MemoryStore();
    store.setDocument(new TextEncoder().encode('{"deployment":'));
    const ctx = await host(store, billetPair(pairs, DEPLOYMENT));
    await replaceUnreadable(ctx);
    return { body: published(store), ctx };
  },
};

describe("billet's rules (the model) refuse what billet refuses", () => {
  it('a billet document passes; each way billet refuses one is refused', () => {
    const files = billetFiles(DEPLOYMENT, a);
    const body = (f: Record<string, Uint8Array>) => billetDocument(DEPLOYMENT, a.fingerprint, f);
    expect(billetAdopt(body(files), DEPLOYMENT, undefined)).toMatchObject({ kind: 'installed' });
    expect(billetAdopt(body(files), DEPLOYMENT, a.fingerprint.toLowerCase())).toEqual({
      kind: 'already-held',
    });
    const { 'authority-created': _m, ...noMarker } = files;
    expect(billetAdopt(body(noMarker), DEPLOYMENT, undefined)).toMatchObject({
      kind: 'refused',
      why: 'missing authority-created, so it is not a whole one',
    });
    expect(billetAdopt(body({ ...files, 'ca.crt.new': a.certPem }), DEPLOYMENT, undefined)).toMatchObject({
      kind: 'refused',
    });
    expect(
      billetAdopt(body({ ...files, 'ca-previous.crt': a.certPem }), DEPLOYMENT, undefined),
    ).toMatchObject({
      kind: 'refused',
      why: 'the stored authority carries only half of a previous generation',
    });
    expect(billetAdopt(body(files), 'another', undefined)).toMatchObject({ kind: 'refused' });
    // The same key as PKCS#8: x509.ParseECPrivateKey takes SEC1 only.
    const pkcs8 = new TextEncoder().encode(
      createPrivateKey(Buffer.from(a.keyPem)).export({ type: 'pkcs8', format: 'pem' }) as string,
    );
    expect(billetAdopt(body({ ...files, 'ca.key': pkcs8 }), DEPLOYMENT, undefined)).toMatchObject({
      kind: 'refused',
    });
    expect(billetAdopt(body(files), DEPLOYMENT, 'SHA256:someone-else')).toMatchObject({ kind: 'refused' });
  });
});

describe('every document baton publishes is one billet adopts', () => {
  it.each(Object.keys(WAYS))('%s', async (way) => {
    const { body, ctx } = await WAYS[way]!();
    const json = JSON.parse(new TextDecoder().decode(body)) as Record<string, unknown>;
    // billet's fields with billet's types; baton's own stay beside them.
    expect(typeof json.deployment).toBe('string');
    expect(typeof json.fingerprint).toBe('string');
    expect(typeof json.published_at).toBe('string');
    expect(json.format).toBe('baton.authority/1');
    expect(json).not.toHaveProperty('sealed');
    const files = json.files as Record<string, unknown>;
    expect(Object.values(files).every((v) => typeof v === 'string')).toBe(true);
    expect(Buffer.from(files['authority-created'] as string, 'base64').toString()).toBe(`${DEPLOYMENT}\n`);

    const adopted = billetAdopt(body, DEPLOYMENT, undefined);
    if (adopted.kind !== 'installed')
      throw new Error(`billet refuses it: ${adopted.kind === 'refused' ? adopted.why : adopted.kind}`);
    // What billet installs is byte for byte the publishing host's authority.
    const onDisk = (name: string) => new Uint8Array(readFileSync(path.join(ctx.stateDir, 'ca', name)));
    expect(Buffer.from(adopted.files['ca.key']!)).toEqual(Buffer.from(onDisk('ca.key')));
    expect(Buffer.from(adopted.files['ca.crt']!)).toEqual(Buffer.from(onDisk('ca.crt')));
    const local = await readLocalAuthority(ctx.stateDir, DEPLOYMENT);
    if (local.state !== 'whole') throw new Error(local.state);
    expect('ca-previous.key' in adopted.files).toBe(local.previous !== undefined);
    expect(json.fingerprint).toBe(billetFingerprint(adopted.files['ca.crt']!));
    expect(json.fingerprint).toBe(local.current.fingerprint);
    // A billet controller that already holds it: "already held", nothing to do.
    expect(billetAdopt(body, DEPLOYMENT, local.current.fingerprint)).toEqual({ kind: 'already-held' });
  });
});
