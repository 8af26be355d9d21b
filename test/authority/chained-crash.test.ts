/**
 * THE CHAINED CRASH: adopting a mid-overlap document, killed after
 * ca-previous.key was linked, then a billet restart whose Adopt (billet b2b42c1a, authority.go
 * InstallAuthority, in AuthorityFiles order) writes ca.key and ca.crt over what baton left and
 * stops at the ca-previous.key it finds. What is left is a whole current pair beside a lone
 * ca-previous.key while the published document still carries that previous pair. baton once
 * called it "a retire stopped part-way", and its Next (`ca retire --confirm <8>`) deleted the
 * key and re-published without the pair, ending the fleet's overlap. Now: the verdict is the
 * same adopt again, `ca retire` refuses (nothing deleted, nothing published), and the `sync` it
 * names, run as printed, reaches a state both billet readings start on.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readAuthority } from '../../src/authority/read-local-authority.js';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import { adopt, force, look, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { fixedClock, makeAuthority, TEST_DEPLOYMENT } from '../helpers/authority.js';
import { billetReads } from '../helpers/crash-points.js';
import { wirecertReads } from '../helpers/billet/wirecert-rules.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { ifSet } from '../helpers/if-set.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';

const DEP = TEST_DEPLOYMENT;
let tmp: { dir: string; cleanup: () => void };

beforeAll(() => {
  assertBuilt();
  tmp = makeTempDir('baton-chained-crash-');
});
afterAll(() => ifSet(tmp)?.cleanup());

function share(stateDir: string, store: DirectoryStore): ShareContext {
  return { stateDir, deployment: DEP, store, clock: fixedClock(), host: 'b', noSeal: true };
}

describe('the chained crash: an adopt of an overlap stopped after ca-previous.key, then billet', () => {
  it('is read as an install to finish, `ca retire` refuses it, and the printed `sync` restores the overlap', async () => {
    const storeDir = path.join(tmp.dir, 'store');
    const store = new DirectoryStore(storeDir);
    const source = await makeAuthority({ deployment: DEP, rotated: true });
    try {
      await publish(share(source.stateDir, store));
    } finally {
      source.cleanup();
    }
    const published = readFileSync(path.join(storeDir, 'authority.json'));

    // The end state of the chain: baton's adopt wrote the marker and ca-previous.key (its
    // order), billet's Adopt wrote ca.key and ca.crt and stopped at ca-previous.key.
    const stateDir = path.join(tmp.dir, 'b');
    const ctx = share(stateDir, store);
    expect((await adopt(ctx)).kind).toBe('installed');
    rmSync(path.join(stateDir, 'ca', 'ca-previous.crt'));
    const { local } = await readAuthority(stateDir, DEP);
    if (local.state !== 'whole') throw new Error('fixture: the current pair must be whole');
    expect(local).toMatchObject({ pending: 'retire', alone: 'ca-previous.key' });
    const previous = local.leftover!.fingerprint;
    expect(await wirecertReads(stateDir, DEP)).toMatchObject({
      verdict: 'refuses',
      rule: expect.stringContaining('a lone ca-previous.key'),
    });

    // The verdict is the same adopt again, never a retire.
    expect((await look(ctx)).verdict).toMatchObject({ kind: 'adopt', lostMarker: false });

    const flags = [
      '--deployment',
      DEP,
      '--state-dir',
      stateDir,
      '--store',
      `file://${storeDir}`,
      '--no-seal',
    ];
    const disk = snapshotDir(stateDir);
    const retire = await runBaton([...flags, 'ca', 'retire', '--confirm', confirmationPrefix(previous)]);
    expect(retire.exitCode, retire.all).toBe(3);
    const said = retire.stderr.replace(/\s+/g, ' ');
    expect(said).toContain('the published document still carries that previous pair in an overlap');
    expect(said).toContain('an install of the overlap stopped part-way');
    expect(said).toContain('writes ca-previous.crt back from the published document');
    expect(said).toMatch(/`baton [^`]*sync`/);
    expect(said).toContain('Nothing was deleted or published.');
    expect(snapshotDir(stateDir)).toEqual(disk);
    expect(readFileSync(path.join(storeDir, 'authority.json'))).toEqual(published);

    // The way out exactly as printed: the same adopt again.
    const printed = /`baton ([^`]*sync)`/.exec(said)![1]!.split(' ');
    const sync = await runBaton(printed);
    expect(sync.exitCode, sync.all).toBe(0);
    const after = (await readAuthority(stateDir, DEP)).local;
    expect(after).toMatchObject({ state: 'whole', previous: { fingerprint: previous } });
    expect(after.state === 'whole' && after.pending).toBeFalsy();
    expect(await wirecertReads(stateDir, DEP)).toMatchObject({ verdict: 'starts' });
    expect(await billetReads(stateDir, DEP)).toMatchObject({ outcome: 'serves-previous' });
    expect(readFileSync(path.join(storeDir, 'authority.json'))).toEqual(published);
  }, 60_000);
});

/** Every `next_steps` entry anywhere in a status --json object. */
function nextStepsIn(value: unknown): { command: string; args: string[] }[] {
  if (Array.isArray(value)) return value.flatMap(nextStepsIn);
  if (value === null || typeof value !== 'object') return [];
  const found: { command: string; args: string[] }[] = [];
  for (const [key, inner] of Object.entries(value)) {
    if (key === 'next_steps' && Array.isArray(inner))
      found.push(...(inner as { command: string; args: string[] }[]));
    else found.push(...nextStepsIn(inner));
  }
  return found;
}

describe('a force cut short part-way through its install', () => {
  it('status names the same force again (and the ca.superseded-* it set aside) in its words and next_steps; that force, run as typed, finishes it', async () => {
    const storeDir = path.join(tmp.dir, 'store-force');
    const store = new DirectoryStore(storeDir);
    const source = await makeAuthority({ deployment: DEP, rotated: true });
    try {
      await publish(share(source.stateDir, store));
    } finally {
      source.cleanup();
    }
    const published = readFileSync(path.join(storeDir, 'authority.json'));
    const diverged = await makeAuthority({ deployment: DEP });
    // A crash point of force the harness records: ca/ set aside, the install written up to
    // ca.key (the previous pair and the key), ca.crt not yet.
    const stateDir = diverged.stateDir;
    expect((await force(share(stateDir, store))).kind).toBe('forced');
    rmSync(path.join(stateDir, 'ca', 'ca.crt'));
    expect((await readAuthority(stateDir, DEP)).local).toMatchObject({
      state: 'blocked',
      problem: 'half-initialised',
    });

    const flags = [
      '--deployment',
      DEP,
      '--state-dir',
      stateDir,
      '--store',
      `file://${storeDir}`,
      '--no-seal',
    ];
    const status = await runBaton([...flags, 'status', '--json']);
    expect(status.exitCode, status.all).toBe(3);
    const json = JSON.parse(status.stdout) as unknown;
    expect(status.stdout).toContain('ca.superseded-');
    expect(status.stdout).not.toMatch(/^[^.]*Restore the missing file from a backup\./);
    const steps = nextStepsIn(json).filter((step) => step.args.at(-1) === 'sync');
    expect(steps.length).toBeGreaterThan(0);
    // THE SAME COMMAND AS TYPED is named too, bound to the authority the force set aside.
    const again = nextStepsIn(json).find(
      (step) => step.args.slice(-4).join(' ') === 'sync --force --confirm <LOCAL 8>',
    );
    expect(again, status.stdout).toBeDefined();
    const setAside = /ca\.superseded-\d{8}T\d{6}Z/.exec(status.stdout)![0];
    expect(status.stdout).toContain(`${diverged.fingerprint} aside in ${path.join(stateDir, setAside)}`);
    const disk = snapshotDir(path.join(stateDir, setAside));

    // Run exactly as it was typed before the cut: the operator's LOCAL 8 of then.
    const typed = again!.args.map((a) => (a === '<LOCAL 8>' ? confirmationPrefix(diverged.fingerprint) : a));
    const sync = await runBaton(typed);
    expect(sync.exitCode, sync.all).toBe(0);
    expect(sync.stdout.replace(/\s+/g, ' ')).toContain(
      `A sync --force had stopped part-way: the old authority is set aside in ${path.join(stateDir, setAside)}`,
    );
    expect(snapshotDir(path.join(stateDir, setAside))).toEqual(disk);
    const after = (await readAuthority(stateDir, DEP)).local;
    expect(after).toMatchObject({ state: 'whole' });
    expect(await wirecertReads(stateDir, DEP)).toMatchObject({ verdict: 'starts' });
    expect(await billetReads(stateDir, DEP)).toMatchObject({ outcome: 'serves-previous' });
    expect(readFileSync(path.join(storeDir, 'authority.json'))).toEqual(published);
    diverged.cleanup();
  }, 60_000);
});
