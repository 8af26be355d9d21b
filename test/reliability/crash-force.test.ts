/**
 * A crash in the middle of a forced replace — the one operation that moves the key a fleet
 * verifies against. A child process runs the project's real `force` with a stop wired to the
 * authority layer's own step hooks (test/reliability/scripts/crash-shim.ts) and is SIGKILLed
 * at that exact step, holding the lock. Then the real CLI runs the same command again, as
 * typed (`sync --force --confirm <LOCAL 8>`): the superseded directory is intact byte for byte,
 * the lock was released by the kernel, and the rerun either completes (finishing the install,
 * naming where the old authority went) or refuses naming what it found.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import { bundleScript, REPO, type Bundle } from '../helpers/bundle-script.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import type { ShareJob } from './scripts/share-child.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'c4a500c4a500c4a500c4a500c4a500ab';

let tmp: { dir: string; cleanup: () => void };
let bundle: Bundle;
const figures = { crashes: 0, rerunsCompleted: 0, rerunsRefusedNamingIt: 0 };

beforeAll(async () => {
  assertBuilt();
  tmp = makeTempDir('baton-crash-');
  bundle = await bundleScript(path.join(REPO, 'test/reliability/scripts/share-child.ts'), [
    {
      module: path.join(REPO, 'src/authority/index.ts'),
      importer: 'src/share/actions.ts',
      with: path.join(REPO, 'test/reliability/scripts/crash-shim.ts'),
    },
  ]);
});

afterAll(() => {
  ifSet(bundle)?.remove();
  ifSet(tmp)?.cleanup();
  console.log(`crash-force figures: ${JSON.stringify(figures)}`);
});

/** A host whose own authority differs from the published one (the REFUSE row), made by the CLI. */
async function divergedHost(name: string): Promise<{ host: string; store: string; published: string }> {
  const dir = path.join(tmp.dir, name);
  const store = path.join(dir, 'store');
  // A parent of its own: a sibling of the fleet's store would be a near miss (minting refused).
  const ownStore = path.join(dir, 'own', 'store');
  mkdirSync(store, { recursive: true });
  mkdirSync(ownStore, { recursive: true });
  const sync = (stateDir: string, storeDir: string) =>
    runBaton([
      '--deployment',
      DEPLOYMENT,
      '--no-seal',
      '--state-dir',
      stateDir,
      '--store',
      `file://${storeDir}`,
      'sync',
      '--first-controller',
      '--yes',
    ]);
  expect((await sync(path.join(dir, 'other'), store)).exitCode).toBe(0);
  const host = path.join(dir, 'host');
  expect((await sync(host, ownStore)).exitCode).toBe(0);
  const other = await readLocalAuthority(path.join(dir, 'other'), DEPLOYMENT);
  if (other.state !== 'whole') throw new Error('the publishing controller is not whole');
  return { host, store, published: other.current.fingerprint };
}

/** Runs `force` in a child and SIGKILLs it once it reports having reached `step`. */
async function forceAndKillAt(step: string, host: string, store: string): Promise<void> {
  const child = spawn('node', [bundle.file], { stdio: 'pipe', env: { ...process.env, CRASH_AT: step } });
  let stderr = '';
  let stdout = '';
  const stopped = new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes(`STOPPED ${step}`)) resolve();
    });
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('exit', (code) =>
      reject(new Error(`the child exited (${code}) before "${step}":\n${stdout}\n${stderr}`)),
    );
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const job: ShareJob = {
    id: 'force',
    op: 'force',
    stateDir: host,
    store: `file://${store}`,
    deployment: DEPLOYMENT,
  };
  child.stdin.write(`${JSON.stringify(job)}\n`);
  await stopped;
  child.kill('SIGKILL');
  await exited;
  figures.crashes += 1;
}

function supersededDirs(host: string): string[] {
  return readdirSync(host).filter((n) => /^ca\.superseded-[0-9TZ-]+$/.test(n));
}

describe('SIGKILL during a forced replace, then the CLI again', () => {
  const steps: ReadonlyArray<readonly [string, string, 'completes' | 'refuses naming it']> = [
    ['set aside ca/', 'ca/ moved aside, the marker still in place: a lost host', 'completes'],
    ['between set-aside and install', 'ca/ moved aside, the marker still in place: a lost host', 'completes'],
    // The new key alone in ca/ is the document's own key: the same sync finishes the install
    // (src/share/partial-install.ts), never minting and never touching what was set aside.
    [
      'installed ca.key',
      'the new key alone in ca/: half-initialised, the key the document carries',
      'completes',
    ],
    ['installed ca.crt', 'the new pair in ca/ with the marker that stayed', 'completes'],
  ];

  it.each(steps)(
    'killed at "%s" (%s): the superseded dir is intact and the rerun %s',
    async (at, _left, rerun) => {
      const { host, store, published } = await divergedHost(at.replace(/[^a-z]+/g, '-'));
      const before = await readLocalAuthority(host, DEPLOYMENT);
      if (before.state !== 'whole') throw new Error('the diverged host is not whole');
      const local8 = confirmationPrefix(before.current.fingerprint);
      const original = snapshotDir(path.join(host, 'ca'));
      const originalMarker = snapshotDir(path.join(host, 'authority-created'));

      await forceAndKillAt(at, host, store);

      const [superseded, ...more] = supersededDirs(host);
      expect(more).toEqual([]);
      expect(superseded).toBeDefined();
      expect(snapshotDir(path.join(host, superseded!))).toEqual(original);
      const markerAside = path.join(host, `${superseded}.authority-created`);
      const markerHome = path.join(host, 'authority-created');
      // The marker stays where it is, unchanged (a state dir without it is day one for billet),
      // and a copy of it goes with what was set aside.
      expect(snapshotDir(markerHome)).toEqual(originalMarker);
      expect(snapshotDir(markerAside)).toEqual(originalMarker);

      // THE SAME COMMAND AS TYPED before the cut: `sync --force --confirm <LOCAL 8>`.
      const again = await runBaton([
        '--deployment',
        DEPLOYMENT,
        '--no-seal',
        '--state-dir',
        host,
        '--store',
        `file://${store}`,
        'sync',
        '--force',
        '--confirm',
        local8,
      ]);
      // The kernel released the dead holder's flock.
      expect(again.exitCode, again.all).not.toBe(5);
      if (rerun === 'completes') {
        expect(again.exitCode, again.all).toBe(0);
        const local = await readLocalAuthority(host, DEPLOYMENT);
        expect(local.state === 'whole' && local.current.fingerprint).toBe(published);
        expect(again.stdout.replace(/\s+/g, ' ')).toContain(`set aside in ${path.join(host, superseded!)}`);
        figures.rerunsCompleted += 1;
      } else {
        expect(again.exitCode, again.all).toBe(3);
        expect(again.all).toMatch(/half/i);
        expect(again.all).toContain(path.join(host, 'ca'));
        figures.rerunsRefusedNamingIt += 1;
      }
      // Whatever the rerun did, it never touched what was set aside.
      expect(supersededDirs(host)).toEqual([superseded]);
      expect(snapshotDir(path.join(host, superseded!))).toEqual(original);
    },
    60_000,
  );
});
