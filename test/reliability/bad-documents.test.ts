/**
 * Bad input at the one door an attacker with write access to the store has: the published
 * document. Every crafted document (test/helpers/bad-documents.ts) is refused on a fresh host
 * and on a whole host, naming why, with the state dir byte-for-byte unchanged and the store
 * untouched: all of them in process, and one of each class through `baton sync`, from a
 * directory store AND from s3rver. The 100 MB body is refused by its size without being read
 * into memory.
 */
import { cpSync, createWriteStream, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adopt } from '../../src/share/actions.js';
import { readLocalAuthority, systemClock } from '../../src/authority/index.js';
import { isBatonError, type BatonError } from '../../src/errors.js';
import { MemoryStore } from '../helpers/memory-store.js';
import { makeBadDocuments, projectSealing, type BadDocument, type Corpus } from '../helpers/bad-documents.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton, S3_TEST_ENV, type BatonRun } from '../helpers/run-baton.js';
import { startTestS3, type TestS3, unenforcedStoreFlags } from '../helpers/test-s3.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'c0bb05c0bb05c0bb05c0bb05c0bb05aa';
const BUCKET = 'baton-corpus';

// Built at collection time (a few real mints, ~0.2 s) so every case is named after its document.
const corpus: Corpus = await makeBadDocuments(DEPLOYMENT, projectSealing);
let s3: TestS3;
let tmp: { dir: string; cleanup: () => void };
let sealConfig: string;
let rssProbe: string;
let slot = 0;
let wholeTemplate: string;
const figures = { documents: 0, runs: 0, refusedNamingWhy: 0 };

beforeAll(async () => {
  assertBuilt();
  tmp = makeTempDir('baton-corpus-');
  figures.documents = corpus.documents.length;
  s3 = await startTestS3(path.join(tmp.dir, 's3'), BUCKET);
  const keyFile = path.join(tmp.dir, 'seal.key');
  writeFileSync(keyFile, corpus.sealKey, { mode: 0o600 });
  sealConfig = path.join(tmp.dir, 'sealed.yaml');
  writeFileSync(sealConfig, `seal_key_file: ${keyFile}\n`);
  wholeTemplate = path.join(tmp.dir, 'whole-template');
  mkdirSync(path.join(tmp.dir, 'template-store'), { mode: 0o700 });
  const first = await baton(wholeTemplate, `file://${path.join(tmp.dir, 'template-store')}`, [
    'sync',
    '--first-controller',
    '--yes',
  ]);
  expect(first.exitCode, first.all).toBe(0);
  // Records the child's peak resident memory at exit: how "refused without buffering
  // everything" is measured from outside. VmHWM, not getrusage's maxRSS: Linux carries
  // maxRSS across fork+exec, so it would report the (large) test runner's memory.
  rssProbe = path.join(tmp.dir, 'rss-probe.mjs');
  writeFileSync(
    rssProbe,
    [
      "import { readFileSync, writeFileSync } from 'node:fs';",
      "process.on('exit', () => {",
      "  const hwm = /VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '-1';",
      '  if (process.env.RSS_OUT) writeFileSync(process.env.RSS_OUT, hwm);',
      '});',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await ifSet(s3)?.close();
  ifSet(tmp)?.cleanup();
  console.log(`bad-documents figures: ${JSON.stringify(figures)}`);
});

type StoreKind = 'directory' | 's3';
type HostKind = 'fresh' | 'whole';

interface Placed {
  readonly url: string;
  /** The store's raw bytes now (to prove the refusal wrote nothing there). */
  readonly digest: () => Promise<string>;
}

async function place(
  kind: StoreKind,
  doc: { body?: Uint8Array; oversize?: BadDocument['oversize'] },
): Promise<Placed> {
  slot += 1;
  if (kind === 'directory') {
    const dir = path.join(tmp.dir, `store-${slot}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, 'authority.json');
    if (doc.body) writeFileSync(file, doc.body, { mode: 0o600 });
    else await writeChunks(file, doc.oversize!.chunks());
    return { url: `file://${dir}`, digest: async () => JSON.stringify(snapshotDir(dir)) };
  }
  const prefix = `doc-${slot}`;
  const key = `${prefix}/authority.json`;
  if (doc.body) await s3.putObject(key, doc.body);
  else await s3.putStream(key, doc.oversize!.bytes, doc.oversize!.chunks);
  return {
    url: `s3://${BUCKET}/${prefix}?endpoint=${s3.endpoint}&path_style=true`,
    digest: async () => {
      const body = await s3.getObject(key);
      return body ? `${body.length}:${Buffer.from(body.subarray(0, 4096)).toString('base64')}` : 'none';
    },
  };
}

async function writeChunks(file: string, chunks: Iterable<Uint8Array>): Promise<void> {
  const out = createWriteStream(file, { mode: 0o600 });
  for (const chunk of chunks)
    if (!out.write(chunk)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  out.end();
  await finished(out);
}

/** A fresh host (state dir + empty lock file) or a whole one (first controller elsewhere). */
async function host(kind: HostKind): Promise<string> {
  slot += 1;
  const stateDir = path.join(tmp.dir, `host-${slot}`);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  writeFileSync(path.join(stateDir, 'ca.lock'), '', { mode: 0o600 });
  // A copy of one whole host made by the real CLI: every whole host is alike, and a fresh
  // `sync` per case would double the suite's time for nothing.
  if (kind === 'whole') cpSync(wholeTemplate, stateDir, { recursive: true, preserveTimestamps: true });
  return stateDir;
}

async function baton(
  stateDir: string,
  url: string,
  args: string[],
  extra: { config?: string; env?: Record<string, string>; nodeArgs?: string[] } = {},
): Promise<BatonRun> {
  figures.runs += 1;
  return runBaton(
    [
      ...(extra.config ? ['--config', extra.config] : ['--no-seal']),
      '--deployment',
      DEPLOYMENT,
      '--state-dir',
      stateDir,
      '--store',
      url,
      ...unenforcedStoreFlags(url),
      ...args,
    ],
    { env: { ...S3_TEST_ENV, ...extra.env }, ...(extra.nodeArgs ? { nodeArgs: extra.nodeArgs } : {}) },
  );
}

describe('the corpus itself', () => {
  it('holds at least 20 crafted documents, each wrong in a named way', () => {
    expect(corpus.documents.length).toBeGreaterThanOrEqual(20);
    expect(new Set(corpus.documents.map((d) => d.name)).size).toBe(corpus.documents.length);
  });

  it.each(['directory', 's3'] as const)(
    'its valid document IS adopted from a %s store (the positive control)',
    async (kind) => {
      const store = await place(kind, { body: corpus.valid });
      const stateDir = await host('fresh');
      const sync = await baton(stateDir, store.url, ['sync']);
      expect(sync.exitCode, sync.all).toBe(0);
      expect(sync.stdout).toContain(corpus.fingerprint);
    },
  );

  it('its valid sealed document IS adopted with the seal key', async () => {
    const store = await place('directory', { body: corpus.validSealed! });
    const stateDir = await host('fresh');
    const sync = await baton(stateDir, store.url, ['sync'], { config: sealConfig });
    expect(sync.exitCode, sync.all).toBe(0);
    expect(sync.stdout).toContain(corpus.fingerprint);
  });
});

/**
 * Every document but the 100 MB one, in process: a fresh host and a whole host adopting it
 * through the share layer (the code `baton sync` runs) refuse it naming why, and neither the
 * state dir nor the store changes. The CLI runs below take one document per class.
 */
describe('every crafted document is refused in process, naming why, and nothing changes', () => {
  const inProcess = corpus.documents
    .filter((doc) => !doc.oversize)
    .flatMap((doc) =>
      (['fresh', 'whole'] as const).map((hostKind): [string, HostKind, BadDocument] => [
        doc.name,
        hostKind,
        doc,
      ]),
    );
  it.each(inProcess)('%s, on a %s host', async (_name, hostKind, doc) => {
    const stateDir = await host(hostKind);
    const before = snapshotDir(stateDir);
    const store = new MemoryStore({ document: doc.body! });
    const stored = store.snapshot();
    const share = {
      stateDir,
      deployment: DEPLOYMENT,
      store,
      clock: systemClock,
      host: 'corpus',
      noSeal: !doc.needsSealKey,
      ...(doc.needsSealKey ? { sealKey: corpus.sealKey } : {}),
    };
    const refused = await adopt(share).then(
      (outcome) => `accepted: ${JSON.stringify(outcome)}`,
      (error: unknown) => error,
    );
    const context = `${doc.name} (${hostKind})`;
    expect(isBatonError(refused), `${context}: ${String(refused)}`).toBe(true);
    expect((refused as BatonError).message, context).toMatch(
      hostKind === 'whole' && doc.reasonOnWhole ? doc.reasonOnWhole : doc.reason,
    );
    expect(snapshotDir(stateDir), context).toEqual(before);
    expect(store.snapshot(), context).toEqual(stored);
    figures.refusedNamingWhy += 1;
  });
});

/**
 * Through the CLI, one document per class of refusal (each a different path to the operator's
 * screen: the decoder, the install step, a sealed document with the key and without it), in
 * both stores and on both hosts.
 */
const classOf = (doc: BadDocument) =>
  doc.refusedAt === 'install'
    ? 'install'
    : doc.needsSealKey
      ? 'sealed, with the key'
      : doc.reasonOnWhole
        ? 'sealed, without the key'
        : 'decoder';
const representatives = corpus.documents.filter(
  (doc, i, all) =>
    !doc.oversize && all.findIndex((other) => !other.oversize && classOf(other) === classOf(doc)) === i,
);
const cases: Array<[string, string, StoreKind, HostKind, BadDocument]> = representatives.flatMap((doc) =>
  (['directory', 's3'] as const).flatMap((store) =>
    (['fresh', 'whole'] as const).map((host): [string, string, StoreKind, HostKind, BadDocument] => [
      classOf(doc),
      doc.name,
      store,
      host,
      doc,
    ]),
  ),
);

describe('a crafted document of each class is refused by sync, naming why, and nothing changes', () => {
  it('takes one document of each of the four classes', () => {
    expect(new Set(representatives.map(classOf))).toEqual(
      new Set(['decoder', 'install', 'sealed, with the key', 'sealed, without the key']),
    );
  });

  it.concurrent.each(cases)(
    '%s: %s, in a %s store, on a %s host',
    async (_class, _name, storeKind, hostKind, doc) => {
      const store = await place(storeKind, doc);
      const stateDir = await host(hostKind);
      const before = snapshotDir(stateDir);
      const storeBefore = await store.digest();
      const sync = await baton(stateDir, store.url, ['sync'], doc.needsSealKey ? { config: sealConfig } : {});
      const context = `${doc.name} (${storeKind}, ${hostKind})\n${sync.all}`;
      expect(sync.exitCode, context).toBe(3);
      expect(sync.all, context).toMatch(
        hostKind === 'whole' && doc.reasonOnWhole ? doc.reasonOnWhole : doc.reason,
      );
      expect(sync.all, context).not.toMatch(/\n\s+at .*:\d+:\d+/);
      expect(snapshotDir(stateDir), context).toEqual(before);
      expect(await store.digest(), context).toBe(storeBefore);
      figures.refusedNamingWhy += 1;
    },
    120_000,
  );
});

describe('force does not get a bad document past the refusal', () => {
  it.each(['directory', 's3'] as const)(
    '`sync --force --confirm <LOCAL 8>` on a whole host with an expired published authority is refused naming the expiry (%s store)',
    async (storeKind) => {
      const expired = corpus.documents.find((d) => /expired/.test(d.name))!;
      const store = await place(storeKind, expired);
      const stateDir = await host('whole');
      const before = snapshotDir(stateDir);
      const storeBefore = await store.digest();
      const local = await readLocalAuthority(stateDir, DEPLOYMENT);
      if (local.state !== 'whole') throw new Error('fixture');
      const force = await baton(stateDir, store.url, [
        'sync',
        '--force',
        '--confirm',
        local.current.fingerprint.slice(7, 15),
      ]);
      expect(force.exitCode, force.all).toBe(3);
      expect(force.all).toMatch(/expired/i);
      expect(snapshotDir(stateDir)).toEqual(before);
      expect(await store.digest()).toBe(storeBefore);
    },
  );
});

describe('the 100 MB document is refused by its size, without being read into memory', () => {
  /** Peak resident memory (KiB) of one `baton sync`, measured from outside by a preload. */
  async function peakOf(stateDir: string, url: string): Promise<{ run: BatonRun; peakKiB: number }> {
    slot += 1;
    const rssOut = path.join(tmp.dir, `rss-${slot}`);
    const run = await baton(stateDir, url, ['sync'], {
      nodeArgs: ['--import', rssProbe],
      env: { RSS_OUT: rssOut },
    });
    return { run, peakKiB: Number(readFileSync(rssOut, 'utf8')) };
  }

  it.each(['directory', 's3'] as const)(
    'from a %s store, on a fresh and on a whole host',
    async (storeKind) => {
      const oversize = corpus.documents.find((d) => d.oversize)!;
      // The same command on a valid document is the baseline: buffering 100 MiB would add ~100 MiB.
      const baselineStore = await place(storeKind, { body: corpus.valid });
      const baseline = await peakOf(await host('fresh'), baselineStore.url);
      expect(baseline.run.exitCode, baseline.run.all).toBe(0);
      const store = await place(storeKind, oversize);
      for (const hostKind of ['fresh', 'whole'] as const) {
        const stateDir = await host(hostKind);
        const before = snapshotDir(stateDir);
        const storeBefore = await store.digest();
        const { run, peakKiB } = await peakOf(stateDir, store.url);
        const context = `${oversize.name} (${storeKind}, ${hostKind}): peak ${peakKiB} KiB, baseline ${baseline.peakKiB} KiB\n${run.all}`;
        console.log(
          `oversize ${storeKind}/${hostKind}: peak RSS ${peakKiB} KiB (baseline ${baseline.peakKiB} KiB)`,
        );
        expect(run.exitCode, context).toBe(3);
        expect(run.all, context).toMatch(oversize.reason);
        expect(snapshotDir(stateDir), context).toEqual(before);
        expect(await store.digest(), context).toBe(storeBefore);
        expect(peakKiB, context).toBeLessThan(baseline.peakKiB + 40 * 1024);
        figures.refusedNamingWhy += 1;
      }
    },
    180_000,
  );
});
