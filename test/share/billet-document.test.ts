/**
 * billet's own document: what billet's wireshare.Publish writes — no
 * `format`, `{deployment, fingerprint, published_at, files}` — is read by billet's rules and then
 * adopted, compared, forced and diagnosed like baton's own; a billet rotation is "claimed, not
 * proved" and NOTHING offered on a left-behind host publishes the authority billet retired.
 * Fixtures: openssl SEC1 keys (billet-fixture.ts), the rotated certificate by baton's minter
 * (openssl refuses the 66-character billet-replaces: OU: it enforces the X.509 upper bound of 64 characters on an OU, which Go writes without complaint).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, readLocalAuthority, withAuthorityLock } from '../../src/authority/index.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { adopt, force, look, publish, push, replaceUnreadable } from '../../src/share/actions.js';
import { allowedActions, pushesOver } from '../../src/share/decide.js';
import { decodeDocument } from '../../src/share/document.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { verdictWords } from '../../src/share/verdict-words.js';
import {
  billetDocument,
  billetFiles,
  billetPair,
  requireOpenssl,
  writeBilletState,
  type BilletFiles,
  type BilletPair,
} from '../helpers/billet-fixture.js';
import { batonErrorOf } from '../helpers/baton-error.js';
import { fingerprintOfPem } from '../helpers/bad-documents.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { MemoryStore } from '../helpers/memory-store.js';

const DEPLOYMENT = 'b1e7c0de0123456789abcdef01234567';
const cleanups: (() => void)[] = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

let work: string;
/** The authority both controllers held before billet rotated (A), and billet's rotation of it (B). */
let a: BilletPair;
let b: BilletPair;
let foreignPair: BilletPair;

beforeAll(async () => {
  requireOpenssl();
  const dir = makeTempDir('baton-billetdoc-');
  work = dir.dir;
  a = billetPair(path.join(work, 'pairs'), DEPLOYMENT);
  foreignPair = billetPair(path.join(work, 'pairs'), 'another-deployment');
  const rotated = await mintAuthority(DEPLOYMENT, { replaces: a.fingerprint });
  b = {
    keyPem: rotated['ca.key']!,
    certPem: rotated['ca.crt']!,
    fingerprint: fingerprintOfPem(rotated['ca.crt']!),
  };
  return dir.cleanup;
});

let hostCount = 0;
async function host(store: MemoryStore, holds?: BilletPair): Promise<ShareContext> {
  const { dir, cleanup } = makeTempDir('baton-billetdoc-host-');
  cleanups.push(cleanup);
  const stateDir = path.join(dir, 'state');
  mkdirSync(stateDir, { recursive: true });
  if (holds) writeBilletState(stateDir, DEPLOYMENT, holds);
  await withAuthorityLock(stateDir, async () => undefined);
  return {
    stateDir,
    deployment: DEPLOYMENT,
    store,
    clock: { now: () => new Date() },
    host: `ctl-${hostCount++}`,
    noSeal: true,
  };
}

const storeWith = (body: Uint8Array) => new MemoryStore({ document: body });
const doc = (fingerprint: Fingerprint, files: BilletFiles) => billetDocument(DEPLOYMENT, fingerprint, files);

/** Runs `fn`, expecting a refusal, and asserts neither the state dir nor the store changed. */
async function refusedWithoutChange(ctx: ShareContext, store: MemoryStore, fn: () => Promise<unknown>) {
  const disk = snapshotDir(ctx.stateDir);
  const before = store.snapshot();
  const error = await batonErrorOf(fn());
  expect(snapshotDir(ctx.stateDir)).toEqual(disk);
  expect(store.snapshot()).toEqual(before);
  return error;
}

describe("billet's document, read by billet's rules", () => {
  it('decodes exactly what billet writes: its files, its fingerprint, the previous pair named from the files', async () => {
    const files = billetFiles(DEPLOYMENT, b, a);
    const opened = await decodeDocument(doc(b.fingerprint, files), { deployment: DEPLOYMENT, where: 'W' });
    expect(opened.header).toMatchObject({
      wire: 'billet',
      deployment: DEPLOYMENT,
      fingerprint: b.fingerprint,
      // billet writes no previous_fingerprint: it is the carried ca-previous.crt's.
      previousFingerprint: a.fingerprint,
    });
    expect(opened.header.publishedAt.raw).toBe('2026-12-01T09:30:00Z');
    expect(opened.current.replaces).toBe(a.fingerprint);
    for (const [name, bytes] of Object.entries(files))
      expect(Buffer.from(opened.files[name as keyof typeof opened.files]!)).toEqual(Buffer.from(bytes));
  });

  it('a fresh host adopts it byte for byte, marker included, and is then in sync', async () => {
    const files = billetFiles(DEPLOYMENT, a);
    const store = storeWith(doc(a.fingerprint, files));
    const ctx = await host(store);
    const seen = await look(ctx);
    expect(seen.verdict).toEqual({ kind: 'adopt', published: a.fingerprint, lostMarker: false });
    expect(seen.published).toMatchObject({ state: 'present', current: { fingerprint: a.fingerprint } });
    expect(await adopt(ctx, { seen: seen.verdict })).toEqual({
      kind: 'installed',
      fingerprint: a.fingerprint,
    });
    const { readFileSync } = await import('node:fs');
    expect(readFileSync(path.join(ctx.stateDir, 'ca', 'ca.key'))).toEqual(Buffer.from(a.keyPem));
    expect(readFileSync(path.join(ctx.stateDir, 'ca', 'ca.crt'))).toEqual(Buffer.from(a.certPem));
    expect(readFileSync(path.join(ctx.stateDir, 'authority-created'), 'utf8')).toBe(`${DEPLOYMENT}\n`);
    expect((await look(ctx)).verdict).toMatchObject({ kind: 'in-sync', fingerprint: a.fingerprint });
  });

  it('a host holding the SAME authority is in sync (status exit 0), during an overlap too', async () => {
    const store = storeWith(doc(a.fingerprint, billetFiles(DEPLOYMENT, a)));
    expect((await look(await host(store, a))).verdict).toEqual({
      kind: 'in-sync',
      fingerprint: a.fingerprint,
    });
  });

  it.each([
    ['during the overlap', true],
    ['after billet retired the previous pair', false],
  ])(
    'a host LEFT BEHIND by a billet rotation (%s) is told so, claimed not proved, and nothing offered publishes A over B',
    async (_when, overlap) => {
      const store = storeWith(doc(b.fingerprint, billetFiles(DEPLOYMENT, b, overlap ? a : undefined)));
      const ctx = await host(store, a);
      const seen = await look(ctx);
      const verdict = seen.verdict;
      if (verdict.kind !== 'refuse') throw new Error(`expected a refusal, got ${verdict.kind}`);
      expect(verdict.lineage).toEqual({
        kind: 'left-behind',
        chain: [b.fingerprint, a.fingerprint],
        proof: { kind: 'claimed', reason: 'billet-signs-none' },
      });
      const words = verdictWords(verdict, {
        fingerprints: true,
        baton: { prefix: 'baton', inventory: undefined, terminal: false },
      });
      expect(words.headline).toContain('left behind by a billet rotation');
      expect(words.headline).toContain('CLAIMED, NOT PROVED');
      expect(words.next).toContain('sync --force --confirm');
      expect(words.next).not.toContain('--push');
      expect(words.next).not.toContain('--replace-unreadable');
      expect(allowedActions(verdict)).toEqual(['leave', 'force']);
      expect(pushesOver(verdict)).toBe(false);

      // The push the seed's incident needed is refused, and writes nothing.
      await refusedWithoutChange(ctx, store, () => push(ctx, { seen: verdict }));
      await refusedWithoutChange(ctx, store, () => publish(ctx, { seen: verdict, over: true }));

      // Force is the way on: this host's authority is set aside, billet's rotation installed.
      const forced = await force(ctx, { seen: verdict });
      expect(forced).toMatchObject({ kind: 'forced', fingerprint: b.fingerprint });
      const after = await readLocalAuthority(ctx.stateDir, DEPLOYMENT);
      expect(after).toMatchObject({ state: 'whole', current: { fingerprint: b.fingerprint } });
      expect((await look(ctx)).verdict).toMatchObject({ kind: 'in-sync', fingerprint: b.fingerprint });
    },
  );

  it('a host holding an authority billet never linked to the published one is refused as unrelated (push-over still bound)', async () => {
    const other = billetPair(path.join(work, 'pairs'), DEPLOYMENT);
    const store = storeWith(doc(b.fingerprint, billetFiles(DEPLOYMENT, b)));
    const verdict = (await look(await host(store, other))).verdict;
    expect(verdict).toMatchObject({ kind: 'refuse', lineage: { kind: 'unrelated' } });
  });
});

describe('billet-shaped documents that are not whole are refused naming what, and nothing is installed', () => {
  const cases: [string, () => { fingerprint: Fingerprint; files: BilletFiles }, RegExp][] = [
    [
      'the marker missing',
      () => {
        const { 'authority-created': _m, ...files } = billetFiles(DEPLOYMENT, a);
        return { fingerprint: a.fingerprint, files };
      },
      /billet's document and does not carry the required file "authority-created"/,
    ],
    [
      'half of the previous pair',
      () => {
        const { 'ca-previous.key': _k, ...files } = billetFiles(DEPLOYMENT, b, a);
        return { fingerprint: b.fingerprint, files };
      },
      /half of the previous pair \("ca-previous.key" is missing\)/,
    ],
    [
      'an unknown file name',
      () => ({
        fingerprint: a.fingerprint,
        files: { ...billetFiles(DEPLOYMENT, a), 'ca.crt.new': a.certPem },
      }),
      /unknown file name "ca.crt.new"/,
    ],
    [
      'a foreign O in the certificate',
      () => ({ fingerprint: foreignPair.fingerprint, files: billetFiles(DEPLOYMENT, foreignPair) }),
      /Organization is "another-deployment"/,
    ],
    [
      "a fingerprint that is not the certificate's",
      () => ({ fingerprint: b.fingerprint, files: billetFiles(DEPLOYMENT, a) }),
      /is not the fingerprint of the ca.crt it carries/,
    ],
  ];

  it.each(cases)('%s', async (_name, make, words) => {
    const { fingerprint, files } = make();
    const store = storeWith(doc(fingerprint, files));
    const ctx = await host(store);
    const seen = await look(ctx);
    expect(seen.published.state).toBe('unreadable');
    if (seen.published.state !== 'unreadable') return;
    expect(seen.published.error.what).toMatch(words);
    const error = await refusedWithoutChange(ctx, store, () => adopt(ctx));
    expect(error.code).toBe('refused');
  });

  it('bad base64 is refused naming the file', async () => {
    const body = new TextDecoder()
      .decode(doc(a.fingerprint, billetFiles(DEPLOYMENT, a)))
      .replace(/"ca.key":"[^"]{8}/, '"ca.key":"!!!!!!!!');
    const store = storeWith(new TextEncoder().encode(body));
    const ctx = await host(store);
    const seen = await look(ctx);
    if (seen.published.state !== 'unreadable') throw new Error('expected unreadable');
    expect(seen.published.error.what).toContain('the file "ca.key" is not valid base64');
    await refusedWithoutChange(ctx, store, () => adopt(ctx));
  });

  it("a document for another deployment (billet's deployment field) is refused naming both", async () => {
    const store = storeWith(
      billetDocument(
        'another-deployment',
        foreignPair.fingerprint,
        billetFiles('another-deployment', foreignPair),
      ),
    );
    const ctx = await host(store);
    const seen = await look(ctx);
    if (seen.published.state !== 'unreadable') throw new Error('expected unreadable');
    expect(seen.published.error.what).toContain('it is for the deployment "another-deployment"');
    // A valid document of another fleet: never replaced from here (the wrong store).
    expect(seen.published.problem).toBe('foreign-deployment');
    await refusedWithoutChange(ctx, store, () => adopt(ctx));
  });

  it('anything else without "format" keeps today\'s words', async () => {
    const json = JSON.parse(
      new TextDecoder().decode(doc(a.fingerprint, billetFiles(DEPLOYMENT, a))),
    ) as object;
    for (const extra of [{ published_by: 'ctl-a' }, { format_version: 1 }]) {
      const store = storeWith(new TextEncoder().encode(JSON.stringify({ ...json, ...extra })));
      const seen = await look(await host(store));
      if (seen.published.state !== 'unreadable') throw new Error('expected unreadable');
      expect(seen.published.error.what).toContain('it has no "format" field');
    }
  });

  it("THE SEED'S INCIDENT: an unusable billet rotation on a left-behind host offers no replace, and the replace is refused", async () => {
    // billet's rotation of A, damaged (its marker lost): unusable, but it still says it replaced A.
    const { 'authority-created': _m, ...files } = billetFiles(DEPLOYMENT, b);
    const store = storeWith(doc(b.fingerprint, files));
    const ctx = await host(store, a);
    const seen = await look(ctx);
    expect(seen.verdict).toMatchObject({ kind: 'blocked', unreadable: 'unusable' });
    if (seen.verdict.kind !== 'blocked') return;
    expect(seen.verdict.step).toBeUndefined();
    expect(seen.verdict.next).toContain('Do not replace it from this host');
    const words = verdictWords(seen.verdict, {
      baton: { prefix: 'baton', inventory: undefined, terminal: false },
    });
    expect(words.next).not.toContain('--replace-unreadable');
    const error = await refusedWithoutChange(ctx, store, () => replaceUnreadable(ctx));
    expect(error.what).toContain("claims to replace this host's authority");
  });
});
