/**
 * PASTING IS SAFE. For every verdict, status's Next — exactly as printed to a pipe, with the
 * global flags given — is run through `sh -c`. No run changes a local authority this host
 * already holds, and no run writes the store except the three plain steps (adopt, the first
 * publish of an authority this host holds, the push of its own rotation). Every step that
 * mints or replaces an authority shows its bound value as a placeholder, so the pasted command
 * cannot do it. Then each way out of oversize, edited-deployment, siblings and unrelated is
 * refused without its bound value (exit 2, nothing changed) and works with it.
 *
 * States are built in-process on a directory store; the bin runs only for the pasted command
 * and the ways out. One part runs on moto: minting is never inferred from an empty prefix, and
 * a neighbouring prefix's document is named.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layoutOf, mintAuthority, rotateAuthority, systemClock } from '../../src/authority/index.js';
import { describeVerdict } from '../../src/app/status-verdict.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { adopt, firstController, look, publish } from '../../src/share/actions.js';
import { etagShown } from '../../src/share/confirm-binding.js';
import { encodeDocument } from '../../src/share/document.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DOCUMENT_FORMAT, type Verdict } from '../../src/share/types.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { suggester } from '../../src/suggest-command.js';
import { fingerprintOfFiles } from '../helpers/authority.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { startMoto, type MotoS3 } from '../helpers/moto-s3.js';
import { assertBuilt, BIN, runBaton, type BatonRun } from '../helpers/run-baton.js';
import { ifSet } from '../helpers/if-set.js';

const DEP = '0123456789abcdef0123456789abcdef';
const OTHER = 'fedcba9876543210fedcba9876543210';

let tmp: { dir: string; cleanup: () => void };
let binDir: string;
let seq = 0;

beforeAll(() => {
  assertBuilt();
  tmp = makeTempDir('baton-paste-');
  // `baton` on PATH, as an operator has it: the pasted text starts with the word `baton`.
  binDir = path.join(tmp.dir, 'bin');
  mkdirSync(binDir);
  writeFileSync(path.join(binDir, 'baton'), `#!/bin/sh\nexec node ${JSON.stringify(BIN)} "$@"\n`);
  chmodSync(path.join(binDir, 'baton'), 0o755);
});
afterAll(() => ifSet(tmp)?.cleanup());

interface World {
  readonly root: string;
  readonly storeDir: string;
  readonly url: string;
  ctx(name: string, sealKey?: Uint8Array): ShareContext;
  document(): string;
  writeDocument(body: Uint8Array | string): void;
  /** status's Next, as printed without a terminal, and the verdict under it. */
  next(name: string): Promise<{ readonly next: string; readonly verdict: Verdict }>;
  baton(name: string, args: readonly string[]): Promise<BatonRun>;
}

function world(): World {
  const root = path.join(tmp.dir, `w${++seq}`);
  const storeDir = path.join(root, 'store');
  mkdirSync(storeDir, { recursive: true, mode: 0o700 });
  const url = `file://${storeDir}`;
  const file = path.join(storeDir, 'authority.json');
  const ctx = (name: string, sealKey?: Uint8Array): ShareContext => ({
    stateDir: path.join(root, name),
    deployment: DEP,
    store: new DirectoryStore(storeDir),
    clock: systemClock,
    host: name,
    noSeal: true,
    ...(sealKey ? { sealKey } : {}),
  });
  return {
    root,
    storeDir,
    url,
    ctx,
    document: () => readFileSync(file, 'utf8'),
    writeDocument: (body) => writeFileSync(file, body),
    async next(name) {
      const { verdict } = await look(ctx(name));
      const s = suggester(
        { deployment: DEP, stateDir: path.join(root, name), store: url, seal: false },
        false,
      );
      return { next: describeVerdict(verdict, s).next, verdict };
    },
    baton: (name, args) =>
      runBaton(
        ['--deployment', DEP, '--no-seal', '--state-dir', path.join(root, name), '--store', url, ...args],
        { env: { NO_COLOR: '1' } },
      ),
  };
}

async function paste(w: World, next: string) {
  return execa('sh', ['-c', next], {
    reject: false,
    cwd: w.root,
    env: { PATH: `${binDir}:${process.env.PATH ?? ''}`, NO_COLOR: '1' },
    extendEnv: false,
    stdin: 'ignore',
    timeout: 60_000,
  });
}

const storeFiles = (w: World) => JSON.stringify(snapshotDir(w.storeDir));
const caFiles = (w: World, name: string) =>
  existsSync(layoutOf(path.join(w.root, name)).caDir)
    ? JSON.stringify(snapshotDir(layoutOf(path.join(w.root, name)).caDir))
    : 'none';

async function leaveBBehind(w: World): Promise<{ readonly a: ShareContext; readonly b: ShareContext }> {
  const a = w.ctx('a');
  const b = w.ctx('b');
  await firstController(a);
  await adopt(b);
  await rotateAuthority(a.stateDir, DEP);
  await publish(a);
  return { a, b };
}

/** A CA whose certificate claims to replace `replaces`, published with no handover signature: a forgery. */
async function forge(w: World, replaces: Fingerprint | undefined, deployment = DEP): Promise<void> {
  const files = await mintAuthority(deployment, replaces ? { replaces } : {});
  const header = {
    format: DOCUMENT_FORMAT,
    deployment,
    fingerprint: await fingerprintOfFiles(files, deployment),
    previousFingerprint: null,
    publishedAt: new Date().toISOString(),
    publishedBy: 'ctl-x',
  } as const;
  w.writeDocument(await encodeDocument(header, files));
}

async function whole(ctx: ShareContext): Promise<Fingerprint> {
  const seen = await look(ctx);
  if (seen.local.state !== 'whole') throw new Error(`not whole: ${seen.local.state}`);
  return seen.local.current.fingerprint;
}

interface Case {
  readonly name: string;
  /** Builds the state; returns the host whose Next is pasted. */
  readonly build: (w: World) => Promise<string>;
  readonly verdict: (v: Verdict) => boolean;
  /** The pasted command may write the store (adopt, the plain first publish, the plain push of this host's rotation). */
  readonly writesStore?: boolean;
}

const CASES: readonly Case[] = [
  {
    name: 'fresh (nothing published)',
    build: async () => 'b',
    verdict: (v) => v.kind === 'first-controller',
  },
  {
    name: 'lost (the marker without ca/)',
    build: async (w) => {
      await firstController(w.ctx('a'));
      await adopt(w.ctx('b'));
      rmSync(layoutOf(w.ctx('b').stateDir).caDir, { recursive: true });
      return 'b';
    },
    verdict: (v) => v.kind === 'adopt' && v.lostMarker,
    writesStore: false,
  },
  {
    name: 'publish (a whole host, nothing published)',
    build: async (w) => {
      await firstController(w.ctx('a'));
      rmSync(path.join(w.storeDir, 'authority.json'));
      return 'a';
    },
    verdict: (v) => v.kind === 'publish',
    writesStore: true,
  },
  {
    name: 'in sync',
    build: async (w) => (await firstController(w.ctx('a')), 'a'),
    verdict: (v) => v.kind === 'in-sync',
  },
  {
    name: 'ahead (this host rotated)',
    build: async (w) => {
      await firstController(w.ctx('a'));
      await rotateAuthority(w.ctx('a').stateDir, DEP);
      return 'a';
    },
    verdict: (v) => v.kind === 'refuse' && v.lineage.kind === 'ahead',
    writesStore: true,
  },
  {
    name: 'left behind, proved',
    build: async (w) => (await leaveBBehind(w), 'b'),
    verdict: (v) =>
      v.kind === 'refuse' && v.lineage.kind === 'left-behind' && v.lineage.proof.kind === 'proved',
  },
  {
    name: 'left behind, claimed (forged)',
    build: async (w) => {
      const mine = ((await firstController(w.ctx('b'))) as { fingerprint: Fingerprint }).fingerprint;
      await forge(w, mine);
      return 'b';
    },
    verdict: (v) =>
      v.kind === 'refuse' && v.lineage.kind === 'left-behind' && v.lineage.proof.kind === 'claimed',
  },
  {
    name: 'siblings',
    build: async (w) => {
      const { b } = await leaveBBehind(w);
      await rotateAuthority(b.stateDir, DEP);
      return 'b';
    },
    verdict: (v) => v.kind === 'refuse' && v.lineage.kind === 'siblings',
  },
  {
    name: 'unrelated',
    build: async (w) => {
      await firstController(w.ctx('b'));
      await forge(w, undefined);
      return 'b';
    },
    verdict: (v) => v.kind === 'refuse' && v.lineage.kind === 'unrelated',
  },
  {
    name: 'unreadable (not JSON)',
    build: async (w) => (await firstController(w.ctx('a')), w.writeDocument('not json at all'), 'a'),
    verdict: (v) => v.kind === 'blocked' && v.unreadable === 'unusable',
  },
  {
    name: 'oversize',
    build: async (w) => (
      await firstController(w.ctx('a')),
      w.writeDocument(Buffer.alloc(1024 * 1024 + 1, 0x20)),
      'a'
    ),
    verdict: (v) => v.kind === 'blocked' && v.unreadable === 'unusable',
  },
  {
    name: 'edited deployment (the certificate names this one)',
    build: async (w) => {
      await firstController(w.ctx('a'));
      w.writeDocument(JSON.stringify({ ...JSON.parse(w.document()), deployment: OTHER }));
      return 'a';
    },
    verdict: (v) => v.kind === 'blocked' && v.unreadable === 'unusable',
  },
  {
    name: 'sealed, this host without the key',
    build: async (w) => (await firstController(w.ctx('a', randomBytes(32))), 'b'),
    verdict: (v) => v.kind === 'blocked' && v.sealedWithoutKey === true,
  },
  {
    name: 'another deployment',
    build: async (w) => (await firstController(w.ctx('a')), await forge(w, undefined, OTHER), 'a'),
    verdict: (v) => v.kind === 'blocked' && v.unreadable === 'foreign-deployment',
  },
  {
    name: 'newer format',
    build: async (w) => (
      await firstController(w.ctx('a')),
      w.writeDocument(JSON.stringify({ format: 'baton.authority/2', deployment: DEP })),
      'a'
    ),
    verdict: (v) => v.kind === 'blocked' && v.unreadable === 'newer-format',
  },
];

describe("pasting status's Next, exactly as printed", () => {
  it.each(CASES)(
    '$name: changes no local authority, and writes the store only for a plain step',
    async (c) => {
      const w = world();
      const host = await c.build(w);
      const { next, verdict } = await w.next(host);
      expect(c.verdict(verdict), JSON.stringify(verdict)).toBe(true);
      const store = storeFiles(w);
      const ca = caFiles(w, host);
      const held = ca !== 'none';
      await paste(w, next);
      if (held) expect(caFiles(w, host), next).toBe(ca);
      if (!c.writesStore) expect(storeFiles(w), next).toBe(store);
      // Nothing minted: a host that held nothing holds nothing unless it adopted.
      if (!held && !(verdict.kind === 'adopt')) expect(caFiles(w, host), next).toBe('none');
      // A step that mints or replaces shows its value as a placeholder, never the value.
      if (verdict.kind === 'refuse' && verdict.lineage.kind !== 'ahead') {
        expect(next).toContain('--confirm <LOCAL 8>');
        expect(next).not.toContain(verdict.local.slice(7, 15));
        expect(next).not.toContain(verdict.published.slice(7, 15));
      }
    },
  );
});

describe('each way out: refused without its bound value (exit 2, nothing changed), done with it', () => {
  // `unbound`: how a run without any --confirm is refused, when not "needs --confirm" (exit 2).
  const refusedThenDone = async (
    w: World,
    host: string,
    args: readonly string[],
    value: string,
    unbound = { exitCode: 2, says: 'needs --confirm with' },
  ) => {
    const store = storeFiles(w);
    const ca = caFiles(w, host);
    for (const confirm of [[], ['--confirm', 'wrongval'], ['--yes']]) {
      const run = await w.baton(host, [...args, ...confirm]);
      const given = confirm[0] === '--confirm';
      expect(run.exitCode, run.all).toBe(given ? 2 : unbound.exitCode);
      expect(run.stderr.replace(/\s+/g, ' ')).toContain(given ? 'needs --confirm with' : unbound.says);
      // Where to read the value, as a command with the flags given.
      expect(run.stderr).toContain(
        `--state-dir ${path.join(w.root, host)} --store ${w.url} --no-seal status\``,
      );
      // The sides are shown (that is where the value is read), but no command carries it.
      expect(run.stderr).not.toContain(`--confirm ${value}`);
    }
    expect(storeFiles(w)).toBe(store);
    expect(caFiles(w, host)).toBe(ca);
    const done = await w.baton(host, [...args, '--confirm', value]);
    expect(done.exitCode, done.all).toBe(0);
    return done;
  };

  it("oversize and edited-deployment: --replace-unreadable --confirm <ETAG 8> replaces the document with this host's", async () => {
    for (const body of ['oversize', 'edited'] as const) {
      const w = world();
      const a = w.ctx('a');
      await firstController(a);
      w.writeDocument(
        body === 'oversize'
          ? Buffer.alloc(1024 * 1024 + 1, 0x20)
          : JSON.stringify({ ...JSON.parse(w.document()), deployment: OTHER }),
      );
      const seen = await look(a);
      if (seen.published.state !== 'unreadable' || !seen.published.etag) throw new Error('fixture');
      const status = await w.baton('a', ['status']);
      const etag8 = etagShown(seen.published.etag).slice(0, 8);
      expect(status.stdout).toContain(`etag         ${etagShown(seen.published.etag)}`);
      await refusedThenDone(w, 'a', ['sync', '--replace-unreadable'], etag8);
      expect((await look(a)).verdict.kind).toBe('in-sync');
    }
  });

  it("siblings and unrelated: --push --confirm <PUBLISHED 8> publishes this host's over it, and says neither was newer", async () => {
    for (const kind of ['siblings', 'unrelated'] as const) {
      const w = world();
      let b: ShareContext;
      if (kind === 'siblings') {
        b = (await leaveBBehind(w)).b;
        await rotateAuthority(b.stateDir, DEP);
      } else {
        b = w.ctx('b');
        await firstController(b);
        await forge(w, undefined);
      }
      const seen = await look(b);
      if (seen.verdict.kind !== 'refuse') throw new Error('fixture');
      expect(seen.verdict.lineage.kind).toBe(kind);
      const refused = await w.baton('b', ['sync']);
      expect(refused.exitCode).toBe(3);
      expect(refused.stderr.replace(/\s+/g, ' ')).toContain('neither is newer');
      // A push without the bound value over a sibling is the race for the publish lost (exit 6).
      const unbound =
        kind === 'siblings'
          ? { exitCode: 6, says: 'Another controller published its own rotation' }
          : undefined;
      await refusedThenDone(w, 'b', ['sync', '--push'], seen.verdict.published.slice(7, 15), unbound);
      expect(JSON.parse(w.document())).toMatchObject({ fingerprint: await whole(b) });
    }
  });

  it('--force --confirm <LOCAL 8> on a forged "left behind" sets this host\'s aside only with the LOCAL value; --yes alone does nothing', async () => {
    const w = world();
    const b = w.ctx('b');
    const mine = ((await firstController(b)) as { fingerprint: Fingerprint }).fingerprint;
    await forge(w, mine);
    await refusedThenDone(w, 'b', ['sync', '--force'], mine.slice(7, 15));
    expect(await whole(b)).not.toBe(mine);
  });
});

describe('minting is said, never inferred (moto)', () => {
  let moto: MotoS3;
  beforeAll(async () => {
    moto = await startMoto();
  }, 120_000);
  afterAll(async () => ifSet(moto)?.close());

  it("sync, ca init and status against an empty prefix mint nothing, create nothing, and name the neighbouring prefix's document", async () => {
    const bucket = await moto.bucket();
    const root = path.join(tmp.dir, 'moto');
    const run = (name: string, prefix: string, args: readonly string[]) =>
      runBaton(
        [
          '--deployment',
          DEP,
          '--no-seal',
          '--state-dir',
          path.join(root, name),
          '--store',
          moto.storeUrl(bucket, prefix),
          ...args,
        ],
        { env: moto.env },
      );
    const first = await run('a', 's6/wire', ['sync', '--first-controller', '--yes']);
    expect(first.exitCode, first.all).toBe(0);
    for (const args of [['sync'], ['ca', 'init'], ['sync', '--first-controller']]) {
      const typo = await run('b', 's6/wier', args);
      expect(typo.exitCode, typo.all).toBe(args.length === 1 ? 3 : 2);
      expect(typo.stderr).toContain(`Nothing is published at s3://${bucket}/s6/wier/authority.json`);
      expect(typo.stderr).toContain(
        `s3://${bucket}/s6/wire/authority.json (deployment ${DEP}, THIS deployment)`,
      );
      expect(typo.stderr).toContain('Nothing was minted or written.');
    }
    const status = await run('b', 's6/wier', ['status', '--json']);
    expect(status.exitCode, status.all).toBe(3);
    expect(JSON.parse(status.stdout)).toMatchObject({
      verdict: { kind: 'first-controller', next_step: { args: ['sync', '--first-controller'] } },
      published: {
        state: 'none',
        neighbours: [{ location: `s3://${bucket}/s6/wire/authority.json`, deployment: DEP }],
      },
    });
    const plain = await run('b', 's6/wier', ['status']);
    expect(plain.stdout).toContain(`nothing is published at s3://${bucket}/s6/wier/authority.json`);
    expect(plain.stdout).toContain(
      `nearby       s3://${bucket}/s6/wire/authority.json (deployment ${DEP}, THIS deployment: is --store mistyped?)`,
    );
    expect(existsSync(path.join(root, 'b'))).toBe(false);
    expect((await moto.versions(bucket)).map((v) => v.key)).toEqual(['s6/wire/authority.json']);
  });
});
