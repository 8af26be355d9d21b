/**
 * Each cell of the lineage diagnosis (docs/publishing.md), on real disk and a real directory store,
 * through the built CLI: what `baton sync` / `baton status` say, and that saying it changed
 * nothing — not a file in any state dir, not a byte in the store.
 */
import { outside } from '../../src/outside-text.js';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, retireAuthority, rotateAuthority, systemClock } from '../../src/authority/index.js';
import { confirmationPrefix, type Fingerprint } from '../../src/pki/fingerprint-type.js';
import { encodeDocument } from '../../src/share/document.js';
import { adopt, firstController, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DOCUMENT_FORMAT } from '../../src/share/types.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { fingerprintOfFiles } from '../helpers/authority.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton, type BatonRun } from '../helpers/run-baton.js';

const DEP = '0123456789abcdef0123456789abcdef';
beforeAll(() => assertBuilt());

interface World {
  readonly root: string;
  ctx(name: string, store?: string): ShareContext;
  sync(name: string, ...flags: string[]): Promise<BatonRun>;
  status(name: string): Promise<BatonRun>;
  storeDir(name?: string): string;
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

function world(): World {
  const { dir, cleanup } = makeTempDir('baton-lineage-');
  cleanups.push(cleanup);
  const storeDir = (name = 'store') => {
    // Every store but the first under a parent of its own: a sibling store of one deployment
    // is a near miss, and minting there is refused (src/share/near-miss.ts).
    const d = name === 'store' ? path.join(dir, name) : path.join(dir, name, 'store');
    mkdirSync(d, { recursive: true, mode: 0o700 });
    return d;
  };
  const run = (name: string, store: string, args: string[]) =>
    runBaton(
      [
        '--deployment',
        DEP,
        '--no-seal',
        '--state-dir',
        path.join(dir, name),
        '--store',
        `file://${storeDir(store)}`,
        ...args,
      ],
      { env: { NO_COLOR: '1' } },
    );
  return {
    root: dir,
    storeDir,
    ctx: (name, store = 'store') => ({
      stateDir: path.join(dir, name),
      deployment: DEP,
      store: new DirectoryStore(storeDir(store)),
      clock: systemClock,
      host: name,
      noSeal: true,
    }),
    sync: (name, ...flags) => run(name, 'store', ['sync', ...flags]),
    status: (name) => run(name, 'store', ['status']),
  };
}

/** Runs `fn` and asserts nothing under the world's root changed (state dirs and the store). */
async function unchanged<T>(w: World, fn: () => Promise<T>): Promise<T> {
  const before = snapshotDir(w.root);
  const result = await fn();
  expect(snapshotDir(w.root)).toEqual(before);
  return result;
}

const flat = (text: string) => text.replace(/\s+/g, ' ');

/**
 * a is the first controller, b adopts, then a rotates and publishes: b is left behind.
 * Returns the authority both held before the rotation (the parent).
 */
async function leaveBBehind(w: World): Promise<{ a: ShareContext; b: ShareContext; parent: Fingerprint }> {
  const a = w.ctx('a');
  const b = w.ctx('b');
  const parent = ((await firstController(a)) as { fingerprint: Fingerprint }).fingerprint;
  await adopt(b);
  await rotateAuthority(a.stateDir, DEP);
  await publish(a);
  return { a, b, parent };
}

async function current(ctx: ShareContext): Promise<Fingerprint> {
  const { readLocalAuthority } = await import('../../src/authority/index.js');
  const local = await readLocalAuthority(ctx.stateDir, DEP);
  if (local.state !== 'whole') throw new Error(local.state);
  return local.current.fingerprint;
}

describe('the lineage cells, each said and each changing nothing', () => {
  it('AHEAD by a chain (rotate, retire, rotate with no publish between): sync refuses saying so, and `sync --push` is allowed', async () => {
    const w = world();
    const a = w.ctx('a');
    await firstController(a);
    const first = await rotateAuthority(a.stateDir, DEP);
    await retireAuthority(a.stateDir, DEP, { confirm: confirmationPrefix(first.previous) });
    await rotateAuthority(a.stateDir, DEP);
    const refused = await unchanged(w, () => w.sync('a'));
    expect(refused.exitCode).toBe(3);
    expect(flat(refused.stderr)).toContain(
      'this host is ahead (it rotated away from the published authority by 2 rotations its own certificates record',
    );
    expect(refused.stderr).not.toContain('nothing links');
    const pushed = await w.sync('a', '--push');
    expect(pushed.stderr).toBe('');
    expect(pushed.exitCode).toBe(0);
    expect(
      (JSON.parse(readFileSync(path.join(w.storeDir(), 'authority.json'), 'utf8')) as { fingerprint: string })
        .fingerprint,
    ).toBe(await current(a));
  });

  it('SIBLINGS (both rotated from one parent): said as such, neither newer; neither sync nor an unbound sync --push changes anything', async () => {
    const w = world();
    const { b, parent } = await leaveBBehind(w);
    await rotateAuthority(b.stateDir, DEP);
    for (const flags of [[], ['--push']]) {
      const run = await unchanged(w, () => w.sync('b', ...flags));
      // An unbound --push over a sibling: another controller published its rotation of the same
      // parent; without --confirm it is a usage error (exit 2, never "retry"), the verdict named.
      expect(run.exitCode).toBe(flags.length === 0 ? 3 : 2);
      if (flags.length > 0)
        expect(flat(run.stderr)).toContain('Another controller published its own rotation');
      expect(flat(run.stderr).toLowerCase()).toContain(
        `this host and the published authority are siblings: both rotated from ${parent}, so neither is newer; one of the two must be chosen on purpose`.toLowerCase(),
      );
    }
  });

  it("LEFT BEHIND, PROVED: the handover is signed by this host's own authority key, and sync and status say so", async () => {
    const w = world();
    await leaveBBehind(w);
    const run = await unchanged(w, () => w.sync('b'));
    expect(run.exitCode).toBe(3);
    expect(flat(run.stderr)).toContain(
      "this host was left behind by a rotation (the published authority replaced the one this host holds, and is newer). PROVED: signed by this host's own authority key.",
    );
    expect(run.stderr).not.toContain('only claimed');
    const status = await unchanged(w, () => w.status('b'));
    expect(status.exitCode).toBe(3);
    expect(flat(status.stdout)).toContain("PROVED: signed by this host's own authority key.");
  });

  it('LEFT BEHIND, CLAIMED: a forged document (a new CA whose OU names this host, no signature) says NOT PROVED — never "left behind" — in sync, status, JSON and the force refusal, and changes nothing', async () => {
    const w = world();
    const b = w.ctx('b');
    const mine = ((await firstController(b)) as { fingerprint: Fingerprint }).fingerprint;
    // Whoever can write the bucket mints a CA naming this host's fingerprint as its predecessor.
    const forged = await mintAuthority(DEP, { replaces: mine });
    const header = {
      format: DOCUMENT_FORMAT,
      deployment: DEP,
      fingerprint: await fingerprintOfFiles(forged, DEP),
      previousFingerprint: null,
      publishedAt: outside(new Date().toISOString()),
      publishedBy: outside('ctl-a'),
    } as const;
    writeFileSync(path.join(w.storeDir(), 'authority.json'), await encodeDocument(header, forged));
    const words =
      "published authority claims to replace this host's (by a rotation) — NOT PROVED: the document carries no handover signature.";

    const sync = await unchanged(w, () => w.sync('b'));
    expect(sync.exitCode).toBe(3);
    expect(flat(sync.stderr)).toContain(words);
    expect(sync.stderr).not.toContain('left behind');
    expect(flat(sync.stderr)).toContain('publishing over it would roll the fleet back');
    const status = await unchanged(w, () => w.status('b'));
    expect(flat(status.stdout)).toContain(words);
    const json = await unchanged(w, () =>
      runBaton([
        '--deployment',
        DEP,
        '--state-dir',
        b.stateDir,
        '--store',
        `file://${w.storeDir()}`,
        'status',
        '--json',
      ]),
    );
    expect(JSON.parse(json.stdout)).toMatchObject({
      verdict: { lineage: 'left-behind', handover: 'claimed' },
    });
    // The force without a terminal or its bound value: refused, showing the claim unproved.
    const force = await unchanged(w, () => w.sync('b', '--force'));
    expect(force.exitCode).toBe(2);
    expect(flat(force.stderr)).toContain(words);
  });

  it('UNRELATED: nothing either side holds links them (the wrong store), said as such, and nothing changes', async () => {
    const w = world();
    await firstController(w.ctx('a'));
    await firstController(w.ctx('b', 'other-store'));
    const run = await unchanged(w, () => w.sync('b'));
    expect(run.exitCode).toBe(3);
    expect(flat(run.stderr)).toContain(
      'nothing links the two authorities, so neither is newer (this host may be pointed at the wrong deployment or store).',
    );
  });

  it('a handover signature that does not verify is tampering: the document is refused and nothing is installed, even forced', async () => {
    const w = world();
    await leaveBBehind(w);
    const file = path.join(w.storeDir(), 'authority.json');
    const doc = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>;
    expect(doc.handover_signature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    doc.published_at = '2020-01-01T00:00:00.000Z'; // the signed field changed after signing
    writeFileSync(file, JSON.stringify(doc));
    for (const flags of [[], ['--force', '--yes']]) {
      const run = await unchanged(w, () => w.sync('b', ...flags));
      // A tampered document is unusable, not a refusal: --force does not apply (exit 2).
      expect(run.exitCode).toBe(flags.length === 0 ? 3 : 2);
      expect(flat(run.stderr)).toContain('refused as tampered: its handover signature does not verify');
    }
  });
});
