/**
 * Two controllers sharing one deployment through a REAL S3 object: s3rver on 127.0.0.1, the
 * real S3 adapter and SDK, and the BUILT CLI (`node bin/baton.js … sync`) run as an operator's
 * script runs it (no TTY). Two state directories play the two hosts.
 *
 * s3rver ignores conditional writes, so this proves the walk end to end; the conditional
 * logic itself is proven on the fake and the directory store (test/share/operations*.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { startS3Sandbox, type S3Sandbox } from '../../src/sandbox/s3.js';
import { decodeDocument } from '../../src/share/document.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { REPO } from '../helpers/bundle-script.js';
import { assertBuilt, BIN, runBaton, S3_TEST_ENV, type BatonRun } from '../helpers/run-baton.js';
import { unenforcedStoreFlags } from '../helpers/test-s3.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = 'fedcba9876543210fedcba9876543210';

let s3: S3Sandbox;
let tmp: { dir: string; cleanup: () => void };
let hostA: string;
let hostB: string;
/** A third controller, forced by hand on a real terminal (tmux) rather than with --yes. */
let hostC: string;
const TMUX_SOCKET = `baton-sync-${process.pid}`;
const tmuxSockets = new Set<string>();

beforeAll(async () => {
  assertBuilt();
  tmp = makeTempDir('baton-two-controllers-');
  hostA = path.join(tmp.dir, 'ctl-a');
  hostB = path.join(tmp.dir, 'ctl-b');
  hostC = path.join(tmp.dir, 'ctl-c');
  s3 = await startS3Sandbox({ prefix: 'fleet/prod' });
});

afterAll(async () => {
  for (const socket of tmuxSockets) {
    try {
      execFileSync('tmux', ['-L', socket, 'kill-server'], { stdio: 'ignore' });
    } catch {
      // already closed by its test
    }
  }
  await ifSet(s3)?.close();
  ifSet(tmp)?.cleanup();
});

function baton(stateDir: string, ...args: string[]): Promise<BatonRun> {
  return runBaton(
    [
      '--deployment',
      DEPLOYMENT,
      '--no-seal',
      '--state-dir',
      stateDir,
      '--store',
      s3.url,
      ...unenforcedStoreFlags(s3.url),
      ...args,
    ],
    {
      env: { ...S3_TEST_ENV },
    },
  );
}

async function fingerprintOf(stateDir: string): Promise<Fingerprint> {
  const local = await readLocalAuthority(stateDir, DEPLOYMENT);
  if (local.state !== 'whole')
    throw new Error(`expected a whole authority in ${stateDir}, got ${local.state}`);
  return local.current.fingerprint;
}

async function publishedDocument() {
  const store = await s3.openStore();
  const stored = await store.get();
  if (!stored) throw new Error('nothing published');
  return decodeDocument(stored.body, { deployment: DEPLOYMENT, where: store.location });
}

const modeOf = (file: string) => statSync(file).mode & 0o777;

/**
 * Runs `baton … sync --force` on a real terminal: a private tmux server, 80×24, no user
 * config. The child's exit code is printed after it ends so the test can read it off the pane.
 */
function forceOnTerminal(stateDir: string, session: string) {
  const script = path.join(tmp.dir, `${session}.sh`);
  const env = Object.entries({ ...S3_TEST_ENV, XDG_CONFIG_HOME: '/nonexistent-baton-test-config' })
    .map(([k, v]) => `${k}='${v}'`)
    .join(' ');
  writeFileSync(
    script,
    [
      `cd '${REPO}'`,
      `env -u CI -u CONTINUOUS_INTEGRATION ${env} node '${BIN}' --deployment ${DEPLOYMENT} --state-dir '${stateDir}' --store '${s3.url}' sync --force`,
      'echo "EXIT=$?"',
      'sleep 600',
    ].join('\n'),
  );
  // One tmux server per terminal: killing the last session of a shared server makes it exit,
  // and the next test's new-session could reach the dying server and fail at once.
  const socket = `${TMUX_SOCKET}-${session}`;
  tmuxSockets.add(socket);
  const tmux = (...args: string[]) =>
    execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
  tmux('new-session', '-d', '-s', session, '-x', '80', '-y', '24', `sh '${script}'`);
  const screen = () => tmux('capture-pane', '-p', '-J', '-t', session);
  const waitFor = (text: string) =>
    vi.waitFor(() => expect(screen()).toContain(text), { timeout: 30_000, interval: 100 });
  return {
    screen,
    waitFor,
    /** Types `text`, waits until the terminal shows it, then presses Enter (never one paste). */
    async answer(text: string) {
      tmux('send-keys', '-t', session, '-l', text);
      await waitFor(`SHA256:" of the LOCAL fingerprint to set it aside: ${text}`);
      tmux('send-keys', '-t', session, 'Enter');
    },
    keys: (...keys: string[]) => tmux('send-keys', '-t', session, ...keys),
    close: () => tmux('kill-server'),
  };
}

describe('two controllers through S3 with `baton sync`', () => {
  let first: Fingerprint;
  let rotated: Fingerprint;

  it('the first controller mints (asked for with --first-controller), publishes to the bucket and installs', async () => {
    const run = await baton(hostA, 'sync', '--first-controller', '--yes');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    first = await fingerprintOf(hostA);
    expect(run.stdout).toContain('first controller');
    expect(run.stdout).toContain(first);
    expect(run.stdout).toContain(`s3://${s3.bucket}/fleet/prod/authority.json`);
    const doc = await publishedDocument();
    expect(doc.header.fingerprint).toBe(first);
    expect(doc.header.previousFingerprint).toBeNull();
  });

  it('the second controller adopts the same authority, its key written 0600', async () => {
    const run = await baton(hostB, 'sync');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain(`adopted ${first}`);
    expect(await fingerprintOf(hostB)).toBe(first);
    expect(modeOf(path.join(hostB, 'ca', 'ca.key'))).toBe(0o600);
    expect(readFileSync(path.join(hostB, 'ca', 'ca.key'))).toEqual(
      readFileSync(path.join(hostA, 'ca', 'ca.key')),
    );
    expect((await baton(hostC, 'sync')).exitCode).toBe(0);
    expect(await fingerprintOf(hostC)).toBe(first);
  });

  it('a second sync on a host in sync says so and changes nothing', async () => {
    const before = snapshotDir(hostB);
    const run = await baton(hostB, 'sync');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('in sync');
    expect(snapshotDir(hostB)).toEqual(before);
  });

  it('the first controller rotates; a plain sync refuses it as ahead and --push publishes, the previous pair travelling with it', async () => {
    const rotate = await baton(hostA, 'ca', 'rotate');
    expect(rotate.exitCode, rotate.all).toBe(0);
    rotated = await fingerprintOf(hostA);
    expect(rotated).not.toBe(first);

    const plain = await baton(hostA, 'sync');
    expect(plain.exitCode).toBe(3);
    expect(plain.stderr).toContain('is ahead');
    expect(plain.stderr).toContain('--push');
    expect((await publishedDocument()).header.fingerprint).toBe(first);

    const push = await baton(hostA, 'sync', '--push');
    expect(push.exitCode, push.all).toBe(0);
    expect(push.stdout).toContain(`Published this host's authority ${rotated}`);
    const doc = await publishedDocument();
    expect(doc.header.fingerprint).toBe(rotated);
    expect(doc.header.previousFingerprint).toBe(first);
    expect(doc.previous?.fingerprint).toBe(first);
    expect(doc.files['ca-previous.key']).toEqual(
      new Uint8Array(readFileSync(path.join(hostA, 'ca', 'ca-previous.key'))),
    );
  });

  it('the second controller is refused (exit 3) naming both fingerprints, the left-behind diagnosis and its ca/, and nothing changes', async () => {
    const before = snapshotDir(hostB);
    const run = await baton(hostB, 'sync');
    expect(run.exitCode).toBe(3);
    expect(run.stderr).toContain(`Local: ${first}`);
    expect(run.stderr).toContain(`Published: ${rotated}`);
    expect(run.stderr).toContain('left behind by a rotation');
    expect(run.stderr).toContain(path.join(hostB, 'ca'));
    expect(run.stderr).toContain('Nothing was written.');
    expect(snapshotDir(hostB)).toEqual(before);
  });

  it('a host PROVED left behind cannot --push over the store: a usage error (exit 2) naming the verdict and the roll-back', async () => {
    const before = snapshotDir(hostB);
    const run = await baton(hostB, 'sync', '--push', '--confirm', rotated.slice(7, 15));
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('only when this host is not PROVED behind');
    expect(run.stderr).toContain('roll the fleet back');
    expect(run.stderr).toContain('left behind by a rotation');
    expect(run.stderr).toContain('sync would refuse and change nothing');
    expect(snapshotDir(hostB)).toEqual(before);
    expect((await publishedDocument()).header.fingerprint).toBe(rotated);
  });

  it('--force without its bound value on a non-terminal stdin (even with --yes) is exit 2 naming what to read, and nothing changes', async () => {
    const before = snapshotDir(hostB);
    for (const extra of [[], ['--yes'], ['--confirm', rotated.slice(7, 15)]]) {
      const run = await baton(hostB, 'sync', '--force', ...extra);
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toContain(
        '--force needs --confirm with the 8 characters after "SHA256:" of the LOCAL fingerprint',
      );
      expect(run.stderr).toMatch(
        /baton --deployment \S+ (?:--\S+ )*--state-dir \S+ --store '[^']*'(?: \S+)* status`/,
      );
      expect(run.stderr).not.toContain(`--confirm ${first.slice(7, 15)}`);
    }
    expect(snapshotDir(hostB)).toEqual(before);
  });

  it('--force --confirm <LOCAL 8> sets the old authority aside (key intact, marker with it) and installs the published one', async () => {
    const oldKey = readFileSync(path.join(hostB, 'ca', 'ca.key'));
    const run = await baton(hostB, 'sync', '--force', '--confirm', first.slice(7, 15));
    expect(run.exitCode, run.all).toBe(0);
    const aside = readdirSync(hostB).filter(
      (name) => /^ca\.superseded-\d{8}T\d{6}Z/.test(name) && !name.endsWith('.authority-created'),
    );
    expect(aside).toHaveLength(1);
    const asideDir = path.join(hostB, aside[0]!);
    expect(run.stdout).toContain(asideDir);
    expect(readFileSync(path.join(asideDir, 'ca.key'))).toEqual(oldKey);
    expect(modeOf(path.join(asideDir, 'ca.key'))).toBe(0o600);
    expect(await fingerprintOf(hostB)).toBe(rotated);
    expect(modeOf(path.join(hostB, 'ca', 'ca.key'))).toBe(0o600);
    expect(existsSync(path.join(hostB, 'ca', 'ca-previous.key'))).toBe(true);

    const again = await baton(hostB, 'sync');
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain('in sync');
  });

  it('on a terminal, --force asks for the LOCAL fingerprint; wrong characters abort (exit 3) and nothing changes', async () => {
    const before = snapshotDir(hostC);
    const term = forceOnTerminal(hostC, 'wrong');
    try {
      await term.waitFor('of the LOCAL fingerprint to set it aside:');
      expect(term.screen()).toContain(`Local: ${first}`);
      expect(term.screen()).toContain('left behind by a rotation');
      // The PUBLISHED fingerprint's characters are the tempting wrong answer.
      await term.answer(rotated.slice(7, 15));
      await term.waitFor('EXIT=');
      expect(term.screen()).toContain(
        'do not match: expected the 8 characters after "SHA256:" of the LOCAL fingerprint',
      );
      expect(term.screen()).toContain('EXIT=3');
    } finally {
      term.close();
    }
    expect(snapshotDir(hostC)).toEqual(before);
  });

  it('on a terminal, Ctrl-C at the confirmation aborts (exit 3) and nothing changes', async () => {
    const before = snapshotDir(hostC);
    const term = forceOnTerminal(hostC, 'ctrl-c');
    try {
      await term.waitFor('of the LOCAL fingerprint to set it aside:');
      term.keys('C-c');
      await term.waitFor('EXIT=');
      expect(term.screen()).toContain('The confirmation was not given');
      expect(term.screen()).toContain('EXIT=3');
    } finally {
      term.close();
    }
    expect(snapshotDir(hostC)).toEqual(before);
  });

  it('on a terminal, typing the first 8 characters of the LOCAL fingerprint sets it aside and installs the published one', async () => {
    const term = forceOnTerminal(hostC, 'right');
    try {
      await term.waitFor('of the LOCAL fingerprint to set it aside:');
      await term.answer(first.slice(7, 15));
      await term.waitFor('EXIT=');
      expect(term.screen()).toContain('EXIT=0');
      expect(term.screen()).toContain('was set aside in');
    } finally {
      term.close();
    }
    expect(await fingerprintOf(hostC)).toBe(rotated);
    expect(readdirSync(hostC).some((name) => name.startsWith('ca.superseded-'))).toBe(true);
  });
});
