/**
 * Races that happen on the night of a failover. Two controllers of a fresh deployment running
 * `sync` at the same instant against one directory store must end with ONE authority,
 * published and held by both — 200 trials through two child processes running the project's
 * own operations (the code `baton sync` runs), and 20 more with pairs of the real CLI. Two
 * `sync --force --confirm <LOCAL 8>` at once on one host, and a failover walk confirmed while a script's
 * force holds the lock: one wins, the other gets exit 5 naming the lock, and nothing is
 * corrupted (the reader says whole, one ca.superseded-* dir, byte for byte what was set aside).
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { bundleScript, REPO, type Bundle } from '../helpers/bundle-script.js';
import { startFaultProxy, type FaultProxy } from '../helpers/fault-proxy.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN, runBaton, S3_TEST_ENV } from '../helpers/run-baton.js';
import { startTestS3, type TestS3, unenforcedStoreFlags } from '../helpers/test-s3.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';
import { pressUntil, typeUntilEchoed } from '../helpers/tmux-input.js';
import type { ShareAnswer, ShareJob } from './scripts/share-child.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = '4ace04ace04ace04ace04ace04ace0ab';
const TRIALS = 200;
// The race itself is proven by the process trials; the CLI trials show `baton sync` runs that code.
const CLI_TRIALS = 3;

let tmp: { dir: string; cleanup: () => void };
let bundle: Bundle;
const figures = {
  trials: 0,
  cliTrials: 0,
  lostAtThePublish: 0,
  adoptedAfterLooking: 0,
  forceTrials: 0,
  forceLockBusy: 0,
  walkVsForce: 0,
};

beforeAll(async () => {
  assertBuilt();
  tmp = makeTempDir('baton-races-');
  bundle = await bundleScript(path.join(REPO, 'test/reliability/scripts/share-child.ts'));
});

afterAll(() => {
  ifSet(bundle)?.remove();
  ifSet(tmp)?.cleanup();
  console.log(`races figures: ${JSON.stringify(figures)}`);
});

/** A long-lived child that runs share jobs; answers are matched to jobs by id. */
class ShareChild {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #waiting = new Map<string, (answer: ShareAnswer) => void>();
  #stderr = '';

  constructor(file: string) {
    this.#child = spawn('node', [file], { stdio: 'pipe' });
    createInterface({ input: this.#child.stdout }).on('line', (line) => {
      const answer = JSON.parse(line) as ShareAnswer;
      this.#waiting.get(answer.id)?.(answer);
      this.#waiting.delete(answer.id);
    });
    this.#child.stderr.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString()));
  }

  run(job: ShareJob): Promise<ShareAnswer> {
    return new Promise((resolve) => {
      this.#waiting.set(job.id, resolve);
      this.#child.stdin.write(`${JSON.stringify(job)}\n`);
    });
  }

  get stderr(): string {
    return this.#stderr;
  }

  close(): void {
    this.#child.stdin.end();
    this.#child.kill();
  }
}

/** The fingerprint the store's document names, and what else the store dir holds. */
function storeState(storeDir: string): { fingerprint: string | undefined; names: string[] } {
  const names = readdirSync(storeDir).sort();
  if (!names.includes('authority.json')) return { fingerprint: undefined, names };
  const doc = JSON.parse(readFileSync(path.join(storeDir, 'authority.json'), 'utf8')) as {
    fingerprint: string;
  };
  return { fingerprint: doc.fingerprint, names };
}

async function heldBy(stateDir: string): Promise<string | undefined> {
  const local = await readLocalAuthority(stateDir, DEPLOYMENT);
  return local.state === 'whole' ? local.current.fingerprint : `(${local.state})`;
}

describe('two controllers of a fresh deployment syncing at the same instant', () => {
  it(`end with exactly one authority, published and held by both (${TRIALS} trials, two processes)`, async () => {
    const a = new ShareChild(bundle.file);
    const b = new ShareChild(bundle.file);
    try {
      for (let trial = 0; trial < TRIALS; trial += 1) {
        const dir = path.join(tmp.dir, `trial-${trial}`);
        const storeDir = path.join(dir, 'store');
        mkdirSync(storeDir, { recursive: true, mode: 0o700 });
        const job = (host: string): ShareJob => ({
          id: `${trial}-${host}`,
          op: 'sync',
          stateDir: path.join(dir, host),
          store: `file://${storeDir}`,
          deployment: DEPLOYMENT,
        });
        // Both jobs are written before either answer is awaited: the two processes look at
        // the empty store within microseconds of each other.
        const [ra, rb] = await Promise.all([a.run(job('a')), b.run(job('b'))]);
        const context = `trial ${trial}: ${JSON.stringify([ra, rb])}\n${a.stderr}${b.stderr}`;
        expect(ra.ok && rb.ok, context).toBe(true);
        const outcomes = [ra, rb].map((r) =>
          r.ok ? (r.outcome as { kind: string; wonRace?: boolean; fingerprint: string }) : undefined,
        );
        const winners = outcomes.filter((o) => o?.kind === 'first-controller' && o.wonRace === true);
        expect(winners, context).toHaveLength(1);
        const loser = outcomes.find((o) => o !== winners[0])!;
        if (loser.kind === 'first-controller') figures.lostAtThePublish += 1;
        else figures.adoptedAfterLooking += 1;
        const { fingerprint, names } = storeState(storeDir);
        expect(
          names.filter((n) => !n.startsWith('.authority.lock')),
          context,
        ).toEqual(['authority.json']);
        expect(fingerprint, context).toBe(winners[0]!.fingerprint);
        expect(await heldBy(path.join(dir, 'a')), context).toBe(fingerprint);
        expect(await heldBy(path.join(dir, 'b')), context).toBe(fingerprint);
        figures.trials += 1;
      }
    } finally {
      a.close();
      b.close();
    }
    // The hard path was exercised: both minted, and one lost at the create-only publish.
    expect(figures.lostAtThePublish).toBeGreaterThan(0);
  }, 240_000);

  it(`end with exactly one authority through the real CLI (${CLI_TRIALS} trials of two \`baton sync\`)`, async () => {
    for (let trial = 0; trial < CLI_TRIALS; trial += 1) {
      const dir = path.join(tmp.dir, `cli-trial-${trial}`);
      const storeDir = path.join(dir, 'store');
      mkdirSync(storeDir, { recursive: true, mode: 0o700 });
      const sync = (host: string) =>
        runBaton([
          '--deployment',
          DEPLOYMENT,
          '--no-seal',
          '--state-dir',
          path.join(dir, host),
          '--store',
          `file://${storeDir}`,
          'sync',
          '--first-controller',
          '--yes',
        ]);
      const [ra, rb] = await Promise.all([sync('a'), sync('b')]);
      const context = `cli trial ${trial}:\n${ra.all}\n${rb.all}`;
      expect([ra.exitCode, rb.exitCode], context).toEqual([0, 0]);
      const { fingerprint, names } = storeState(storeDir);
      expect(
        names.filter((n) => !n.startsWith('.authority.lock')),
        context,
      ).toEqual(['authority.json']);
      expect(await heldBy(path.join(dir, 'a')), context).toBe(fingerprint);
      expect(await heldBy(path.join(dir, 'b')), context).toBe(fingerprint);
      // Exactly one of the two says it minted; the other says it adopted.
      expect(
        [ra.stdout, rb.stdout].filter((out) => /first controller/i.test(out)),
        context,
      ).toHaveLength(1);
      figures.cliTrials += 1;
    }
  }, 240_000);
});

describe('two `sync --force --confirm <LOCAL 8>` at once on one host', () => {
  let s3: TestS3;
  let proxy: FaultProxy;

  beforeAll(async () => {
    s3 = await startTestS3(path.join(tmp.dir, 's3'), 'baton-races');
    proxy = await startFaultProxy({ upstream: s3.endpoint });
  });
  afterAll(async () => {
    await ifSet(proxy)?.close();
    await ifSet(s3)?.close();
  });

  it('one wins, the other gets exit 5 naming the lock, and the host is whole with one superseded dir intact', async () => {
    // Up to 4 trials; two processes started together overlap in all but the most starved
    // runs, and a trial where they did not overlap must still leave a correct host.
    for (let trial = 0; trial < 4 && figures.forceLockBusy < 2; trial += 1) {
      const prefix = `force-${trial}`;
      const url = (endpoint: string) => `s3://baton-races/${prefix}?endpoint=${endpoint}&path_style=true`;
      const dir = path.join(tmp.dir, prefix);
      const baton = (stateDir: string, args: string[], endpoint = s3.endpoint) =>
        runBaton(
          [
            '--deployment',
            DEPLOYMENT,
            '--no-seal',
            '--state-dir',
            stateDir,
            '--store',
            url(endpoint),
            ...unenforcedStoreFlags(url(endpoint)),
            ...args,
          ],
          { env: S3_TEST_ENV },
        );
      // The published authority comes from controller "other"; this host minted its own.
      const other = path.join(dir, 'other');
      const host = path.join(dir, 'host');
      expect((await baton(other, ['sync', '--first-controller', '--yes'])).exitCode).toBe(0);
      const ownStore = path.join(dir, 'own-store');
      mkdirSync(ownStore, { recursive: true });
      const own = await runBaton([
        '--deployment',
        DEPLOYMENT,
        '--no-seal',
        '--state-dir',
        host,
        '--store',
        `file://${ownStore}`,
        'sync',
        '--first-controller',
        '--yes',
      ]);
      expect(own.exitCode, own.all).toBe(0);
      const originalCa = snapshotDir(path.join(host, 'ca'));
      const published = await heldBy(other);

      // Every read through the proxy is slowed, so whichever process takes ca.lock first is
      // still holding it (re-reading the store inside the lock) when the other one tries.
      proxy.clear();
      proxy.arm({ fault: 'delay', method: 'GET', count: Infinity, delayMs: 1_000 });
      const runs = await Promise.all([
        baton(host, ['sync', '--force', '--confirm', (await heldBy(host))!.slice(7, 15)], proxy.url),
        baton(host, ['sync', '--force', '--confirm', (await heldBy(host))!.slice(7, 15)], proxy.url),
      ]);
      proxy.clear();
      const context = runs.map((r) => `exit ${r.exitCode}\n${r.all}`).join('\n---\n');
      const codes = runs.map((r) => r.exitCode).sort();
      figures.forceTrials += 1;
      if (codes[1] === 5) {
        expect(codes, context).toEqual([0, 5]);
        const busy = runs.find((r) => r.exitCode === 5)!;
        expect(busy.all, context).toContain(path.join(host, 'ca.lock'));
        figures.forceLockBusy += 1;
      } else {
        // They did not overlap: the second found the host already in sync.
        expect(codes, context).toEqual([0, 0]);
        expect(
          runs.some((r) => /in sync|nothing to push or force/i.test(r.all)),
          context,
        ).toBe(true);
      }

      // Nothing corrupted: the reader says whole and in sync; exactly one superseded dir,
      // byte-for-byte the authority that was set aside, its marker beside it.
      expect(await heldBy(host), context).toBe(published);
      const superseded = readdirSync(host).filter((n) => /^ca\.superseded-[0-9TZ-]+$/.test(n));
      expect(superseded, context).toHaveLength(1);
      expect(snapshotDir(path.join(host, superseded[0]!)), context).toEqual(originalCa);
      expect(readdirSync(host), context).toContain(`${superseded[0]}.authority-created`);
      const status = await baton(host, ['status', '--json']);
      expect(status.exitCode, status.all).toBe(0);
    }
    expect(figures.forceLockBusy).toBeGreaterThanOrEqual(1);
  }, 180_000);
});

describe('a failover walk and a `sync --force` at once on one host', () => {
  let paused: Bundle;
  let session: TmuxSession | undefined;
  beforeAll(async () => {
    paused = await bundleScript(path.join(REPO, 'test/reliability/scripts/share-child.ts'), [
      {
        module: path.join(REPO, 'src/authority/index.ts'),
        importer: 'src/share/actions.ts',
        with: path.join(REPO, 'test/reliability/scripts/crash-shim.ts'),
      },
    ]);
  });
  afterAll(async () => {
    await session?.kill();
    ifSet(paused)?.remove();
  });

  it('the walk confirmed while the force holds ca.lock is refused naming the lock (exit 5); the force completes; nothing is corrupted', async () => {
    const dir = path.join(tmp.dir, 'walk-vs-force');
    const store = path.join(dir, 'store');
    const elsewhere = path.join(dir, 'elsewhere');
    mkdirSync(store, { recursive: true });
    mkdirSync(elsewhere, { recursive: true });
    const host = path.join(dir, 'host');
    const args = (storeDir: string, stateDir = host) => [
      '--deployment',
      DEPLOYMENT,
      '--no-seal',
      '--state-dir',
      stateDir,
      '--store',
      `file://${storeDir}`,
    ];
    expect(
      (await runBaton([...args(store, path.join(dir, 'other')), 'sync', '--first-controller', '--yes']))
        .exitCode,
    ).toBe(0);
    expect((await runBaton([...args(elsewhere), 'sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    const local = (await heldBy(host))!;
    const published = await heldBy(path.join(dir, 'other'));
    const originalCa = snapshotDir(path.join(host, 'ca'));

    // The operator walks to the force gate and types the prefix; nothing is written yet.
    session = await TmuxSession.start({
      command: ['node', BIN, ...args(store), 'failover'].map(shellQuote).join(' '),
    });
    await session.waitFor('Replace the local authority (force)');
    await pressUntil(session, 'j', '› Replace the local authority');
    await pressUntil(session, 'Enter', 'marked "type these"');
    await typeUntilEchoed(session, local.slice(7, 15), '[ Replace ] enabled');

    // Meanwhile a script's `sync --force --confirm` takes ca.lock and is held mid-replace.
    const child = spawn('node', [paused.file], {
      stdio: 'pipe',
      env: { ...process.env, CRASH_AT: 'between set-aside and install', CRASH_MODE: 'pause' },
    });
    let stderr = '';
    let stdout = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    const stopped = new Promise<void>((resolve) =>
      child.stderr.on('data', (b: Buffer) => {
        stderr += b.toString();
        if (stderr.includes('STOPPED')) resolve();
      }),
    );
    const job: ShareJob = {
      id: 'force',
      op: 'force',
      stateDir: host,
      store: `file://${store}`,
      deployment: DEPLOYMENT,
    };
    child.stdin.write(`${JSON.stringify(job)}\n`);
    await stopped;

    // The operator confirms: the walk's force re-takes the lock, finds it held, and says so.
    const screen = await pressUntil(session, 'Enter', 'ca.lock');
    expect(screen.replace(/\s+/g, ' ')).toMatch(/lock/i);

    // The script carries on and finishes its replace.
    child.kill('SIGUSR1');
    await vi.waitFor(
      () => {
        if (!stdout.includes('"id":"force"')) throw new Error(`no answer yet: ${stderr}`);
      },
      { timeout: 20_000, interval: 50 },
    );
    child.stdin.end();
    await once(child, 'exit');
    const answer = JSON.parse(stdout.trim()) as ShareAnswer;
    expect(answer.ok, stdout).toBe(true);

    await pressUntil(session, 'q', (text) => /\[exit \d+\]/.test(text));
    expect(await session.exitCode()).toBe(5);
    figures.walkVsForce = 1;

    expect(await heldBy(host)).toBe(published);
    const superseded = readdirSync(host).filter((n) => /^ca\.superseded-[0-9TZ-]+$/.test(n));
    expect(superseded).toHaveLength(1);
    expect(snapshotDir(path.join(host, superseded[0]!))).toEqual(originalCa);
    const status = await runBaton([...args(store), 'status', '--json']);
    expect(status.exitCode, status.all).toBe(0);
  }, 120_000);
});
