import { execFile } from 'node:child_process';
import { existsSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { confirmationPrefix } from '../../src/pki/fingerprint-type.js';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { mintAuthority, withAuthorityLock } from '../../src/authority/index.js';
import { firstController } from '../../src/share/actions.js';
import { openStore } from '../../src/store/open-store.js';
import { fingerprintOfFiles, fixedClock } from '../helpers/authority.js';
import { billetPair, requireOpenssl, writeBilletState } from '../helpers/billet-fixture.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { authorityDir, ca, cleanupAll, DEP, emptyStateDir } from './support.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const bin = path.join(repo, 'bin/baton.js');
afterEach(cleanupAll);

beforeAll(() => {
  if (!existsSync(path.join(repo, 'dist/app.cjs')))
    throw new Error('dist/app.cjs is missing: run `npm run build` (npm test does).');
});

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The real CLI, as an operator runs it: node bin/baton.js, no config file in reach. */
function baton(stateDir: string, ...args: string[]): Promise<Run> {
  return batonWith([], stateDir, ...args);
}

function batonWith(globals: string[], stateDir: string, ...args: string[]): Promise<Run> {
  const cwd = path.dirname(stateDir);
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, '--deployment', DEP, '--state-dir', stateDir, ...globals, ...args],
      { cwd, env: { PATH: process.env.PATH, HOME: cwd, XDG_CONFIG_HOME: cwd, NO_COLOR: '1' } },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

function expectNoKeyMaterial(run: Run): void {
  expect(run.stdout + run.stderr).not.toContain('PRIVATE KEY');
  expect(run.stdout + run.stderr).not.toMatch(/[A-Za-z0-9+/]{60,}/);
}

describe('baton ca', () => {
  it('init mints on a fresh host, and show (text and --json) reports it whole with exit 0', async () => {
    const stateDir = path.join(path.dirname(await emptyStateDir()), 'fresh-state');
    const init = await baton(stateDir, 'ca', 'init');
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const fingerprint = /Fingerprint: (SHA256:\S{43})/.exec(init.stdout)?.[1];
    expect(fingerprint).toBeDefined();
    expect(init.stdout).toContain(
      `Minted a new authority for deployment ${DEP} in ${path.join(stateDir, 'ca')}.`,
    );
    expectNoKeyMaterial(init);
    const snap = snapshotDir(stateDir);
    expect(snap['ca/ca.key']).toMatch(/^file 600 /);
    expect(snap['ca/ca.crt']).toMatch(/^file 644 /);
    expect(snap['authority-created']).toMatch(/^file 644 /);

    const show = await baton(stateDir, 'ca', 'show', '--json');
    expect(show.code).toBe(0);
    const json = JSON.parse(show.stdout) as Record<string, unknown>;
    expect(json).toMatchObject({ state: 'whole', fingerprint, previous_fingerprint: null, deployment: DEP });
    expect(Date.parse(String(json.not_after))).toBeGreaterThan(Date.now() + 9 * 365 * 86_400_000);

    const text = await baton(stateDir, 'ca', 'show');
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`Fingerprint: ${fingerprint}`);
    expect(text.stdout).toContain('Previous:    none (no rotation overlap).');
  });

  it('init refuses over a loss, naming the marker and the way forward, and writes nothing', async () => {
    const { stateDir } = await authorityDir();
    rmSync(path.join(stateDir, 'ca'), { recursive: true });
    const before = snapshotDir(stateDir);
    const run = await baton(stateDir, 'ca', 'init');
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`the marker ${path.join(stateDir, 'authority-created')} is present`);
    expect(run.stderr).toMatch(
      /Adopt the published authority with `baton (?:--\S+ \S+ )*--state-dir \S+ (?:--\S+ \S+ )*sync`, or restore ca\/ from a backup\./,
    );
    expect(run.stderr).toContain('Nothing was written.');
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('init refuses on a host that already holds an authority, and writes nothing', async () => {
    const { stateDir, fingerprint } = await authorityDir();
    const before = snapshotDir(stateDir);
    const run = await baton(stateDir, 'ca', 'init');
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(`This host already holds the authority ${fingerprint}.`);
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it("init refuses half an authority with the reader's words, and writes nothing", async () => {
    const { stateDir } = await authorityDir();
    unlinkSync(ca(stateDir, 'ca.crt'));
    const before = snapshotDir(stateDir);
    const run = await baton(stateDir, 'ca', 'init');
    expect(run.code).toBe(3);
    expect(run.stderr).toContain(
      'The authority is half-initialised: ca/ca.key is present but ca/ca.crt is missing.',
    );
    expect(run.stderr).toContain(`Where: ${path.join(stateDir, 'ca')}`);
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('show exits 3 for a fresh or blocked host and says why, as one JSON object with --json', async () => {
    const fresh = await emptyStateDir();
    const run = await baton(fresh, 'ca', 'show');
    expect(run.code).toBe(3);
    expect(run.stdout).toContain('This host holds no authority');
    const { stateDir } = await authorityDir();
    unlinkSync(ca(stateDir, 'ca.key'));
    const json = await baton(stateDir, 'ca', 'show', '--json');
    expect(json.code).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({
      state: 'blocked',
      problem: 'half-initialised',
      error: { where: path.join(stateDir, 'ca') },
    });
    // The reader's way out is a step object, rendered with the flags given; the text shows the same command.
    const command = `baton --deployment ${DEP} --state-dir ${stateDir} sync`;
    expect(JSON.parse(json.stdout).error.next_steps).toEqual([
      { command, args: ['--deployment', DEP, '--state-dir', stateDir, 'sync'], placeholders: [], host: null },
    ]);
    expect((await baton(stateDir, 'ca', 'show')).stdout).toContain(`\`${command}\``);
  });

  it('show exits 1 like status when the authority could not be read (ca/ is not a directory), and changes nothing', async () => {
    const stateDir = await emptyStateDir();
    writeFileSync(path.join(stateDir, 'ca'), 'not a directory');
    const before = snapshotDir(stateDir);
    const run = await baton(stateDir, 'ca', 'show', '--json');
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ state: 'blocked', problem: 'unreadable' });
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('rotate keeps the old authority as previous, refuses a second rotation, and retire ends the overlap', async () => {
    const { stateDir, fingerprint: old } = await authorityDir();
    const rotate = await baton(stateDir, 'ca', 'rotate');
    expect(rotate.code).toBe(0);
    expect(rotate.stdout).toContain(`Previous: ${old}`);
    // The commands it names carry the global flags given, built where they are written.
    expect(rotate.stdout).toContain(`\`baton --deployment ${DEP} --state-dir ${stateDir} sync --push\``);
    // Retiring deletes a key: the command named is bound, and as printed it runs nothing.
    expect(rotate.stdout).toContain(
      `\`baton --deployment ${DEP} --state-dir ${stateDir} ca retire --confirm <PREVIOUS 8>\``,
    );
    expectNoKeyMaterial(rotate);
    const shown = JSON.parse((await baton(stateDir, 'ca', 'show', '--json')).stdout) as Record<
      string,
      unknown
    >;
    expect(shown).toMatchObject({ previous_fingerprint: old, replaces: old });

    const before = snapshotDir(stateDir);
    const again = await baton(stateDir, 'ca', 'rotate');
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('A rotation overlap is already in progress');
    expect(snapshotDir(stateDir)).toEqual(before);

    const unbound = await baton(stateDir, 'ca', 'retire');
    expect(unbound.code).toBe(2);
    expect(unbound.stderr).toContain('No --confirm was given.');
    expect(unbound.stderr).toContain('ca retire --confirm <PREVIOUS 8>');
    const wrong = await baton(stateDir, 'ca', 'retire', '--confirm', 'AAAAAAAA');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('does not match the previous authority on this host now');
    expect(snapshotDir(stateDir)).toEqual(before);
    const retire = await baton(stateDir, 'ca', 'retire', '--confirm', confirmationPrefix(old));
    expect(retire.code).toBe(0);
    expect(retire.stdout).toContain(`Retired the previous authority ${old}`);
    expect(JSON.parse((await baton(stateDir, 'ca', 'show', '--json')).stdout)).toMatchObject({
      previous_fingerprint: null,
      fingerprint: shown.fingerprint,
    });
  });

  it('retire of an unproved predecessor (an older billet rotated without the claim) is refused without its --confirm, naming it and the way on, and done with it; --yes is no confirmation', async () => {
    requireOpenssl();
    const stateDir = await emptyStateDir();
    const work = path.dirname(stateDir);
    const old = billetPair(work, DEP);
    const current = billetPair(work, DEP);
    writeBilletState(stateDir, DEP, current, old);
    const before = snapshotDir(stateDir);

    const refused = await baton(stateDir, 'ca', 'retire');
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`The current certificate ${current.fingerprint} names no predecessor`);
    expect(refused.stderr).toContain(
      `so ${old.fingerprint} in ca-previous.* cannot be proved to be the authority it replaced.`,
    );
    // The suggested commands keep the global flags this run was given (the one builder).
    expect(refused.stderr).toMatch(
      /`baton (?:--\S+ \S+ )*ca retire --confirm <PREVIOUS 8>` \(or `baton (?:--\S+ \S+ )*ca retire` on a terminal, typing the same 8 characters\) deletes ca-previous\.crt and ca-previous\.key on your word\./,
    );
    expect(refused.stderr).toContain('Nothing was written.');
    expect(snapshotDir(stateDir)).toEqual(before);

    const yes = await baton(stateDir, 'ca', 'retire', '--yes');
    expect(yes.code).toBe(2);
    expect(yes.stderr).toContain('ca retire takes no --yes');
    expect(snapshotDir(stateDir)).toEqual(before);

    const done = await baton(stateDir, 'ca', 'retire', '--confirm', confirmationPrefix(old.fingerprint));
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(
      `Retired the previous authority ${old.fingerprint} from ${path.join(stateDir, 'ca')} on your word (the current certificate names no predecessor).`,
    );
    expect(existsSync(ca(stateDir, 'ca-previous.key'))).toBe(false);
    expect(existsSync(ca(stateDir, 'ca-previous.crt'))).toBe(false);
    expect(readFileSync(ca(stateDir, 'ca.key'))).toEqual(Buffer.from(current.keyPem));
  });

  it('retire refuses a current certificate whose claim names a DIFFERENT predecessor, even with --yes, and writes nothing', async () => {
    requireOpenssl();
    const stateDir = await emptyStateDir();
    const work = path.dirname(stateDir);
    const old = billetPair(work, DEP);
    const stranger = billetPair(work, DEP);
    const files = await mintAuthority(DEP, { replaces: stranger.fingerprint });
    const current = {
      keyPem: files['ca.key']!,
      certPem: files['ca.crt']!,
      fingerprint: await fingerprintOfFiles(files),
    };
    writeBilletState(stateDir, DEP, current, old);
    const before = snapshotDir(stateDir);
    for (const args of [
      ['ca', 'retire'],
      ['ca', 'retire', '--confirm', confirmationPrefix(old.fingerprint)],
    ]) {
      const run = await baton(stateDir, ...args);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(
        `The current certificate says it replaces ${stranger.fingerprint}, not the previous authority ${old.fingerprint}`,
      );
      expect(run.stderr).toContain('no confirmation overrides that');
      expect(snapshotDir(stateDir)).toEqual(before);
    }
  });

  it('a writing command while another holds ca.lock exits 5 naming the lock file, and writes nothing', async () => {
    const { stateDir } = await authorityDir();
    const before = snapshotDir(stateDir);
    const runs = await withAuthorityLock(stateDir, async () => [
      await baton(stateDir, 'ca', 'rotate'),
      await baton(stateDir, 'ca', 'retire'),
    ]);
    for (const run of runs) {
      expect(run.code).toBe(5);
      expect(run.stderr).toContain(path.join(stateDir, 'ca.lock'));
    }
    expect(snapshotDir(stateDir)).toEqual(before);
  });

  it('init on a fresh host whose deployment already published an authority adopts it (the first-controller path), minting nothing of its own', async () => {
    const work = path.dirname(await emptyStateDir());
    const storeUrl = `file://${path.join(work, 'store')}`;
    const firstStateDir = await emptyStateDir();
    const outcome = await firstController({
      stateDir: firstStateDir,
      deployment: DEP,
      store: await openStore(storeUrl),
      clock: fixedClock(),
      host: 'ctl-a',
      noSeal: true,
    });
    expect(outcome.kind).toBe('first-controller');
    const published = (outcome as { fingerprint: string }).fingerprint;
    const storeBefore = snapshotDir(path.join(work, 'store'));

    const stateDir = path.join(work, 'second-controller');
    const run = await batonWith(['--store', storeUrl], stateDir, 'ca', 'init');
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`already published by another controller: this host adopted ${published}`);
    expect(readFileSync(ca(stateDir, 'ca.key'))).toEqual(readFileSync(ca(firstStateDir, 'ca.key')));
    expect(snapshotDir(path.join(work, 'store'))).toEqual(storeBefore);
  });

  it('init with no store mints, says no store was asked, and exits 0', async () => {
    const stateDir = path.join(path.dirname(await emptyStateDir()), 'no-store');
    const run = await baton(stateDir, 'ca', 'init');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      'No store is configured, so no store was asked whether this deployment already has an authority.',
    );
    expect(existsSync(ca(stateDir, 'ca.key'))).toBe(true);
  });

  it('init with a store that holds nothing mints aside, publishes create-only, then installs what it published', async () => {
    const work = path.dirname(await emptyStateDir());
    const stateDir = path.join(work, 'first-controller');
    const storeDir = path.join(work, 'empty-store');
    const run = await batonWith(
      ['--store', `file://${storeDir}`, '--no-seal'],
      stateDir,
      'ca',
      'init',
      '--yes',
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      `published it create-only to ${path.join(storeDir, 'authority.json')}, then installed it in ${path.join(stateDir, 'ca')}.`,
    );
    const fingerprint = /Fingerprint: (SHA256:\S{43})/.exec(run.stdout)?.[1];
    const document = JSON.parse(readFileSync(path.join(storeDir, 'authority.json'), 'utf8')) as {
      fingerprint: string;
      files: Record<string, string>;
    };
    expect(document.fingerprint).toBe(fingerprint);
    expect(Buffer.from(document.files['ca.key']!, 'base64')).toEqual(readFileSync(ca(stateDir, 'ca.key')));
  });
});
