/**
 * Keys that arrive together, in a real terminal: every `type()` below is ONE `tmux send-keys -l`
 * write, so the view gets the keys in one read — as over a laggy link or from a paste. Each
 * check is asserted by what the keys did (the files, the exit code), not only the screen. At
 * 80×24, then the first check once more through a real `ssh -t`.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { writeLocalMesh } from '../mesh/mesh-fixture.js';
import { startReceiptWriter } from '../mesh/receipt-writer.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { describeWithPart } from '../helpers/real-part.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { batonOverSsh, shellQuote, TmuxSession } from '../helpers/tmux.js';
import { pressUntil } from '../helpers/tmux-input.js';
import { ifSet } from '../helpers/if-set.js';

const DEPLOYMENT = '6b6579726561647300000000000000a1';
let tmp: { dir: string; cleanup: () => void };
let sessions: TmuxSession[] = [];
let hosts = 0;

beforeAll(() => {
  assertBuilt();
  tmp = makeTempDir('baton-key-reads-');
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.kill()));
  sessions = [];
});
afterAll(() => ifSet(tmp)?.cleanup());

const swapCase = (s: string) =>
  [...s].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');

async function fingerprintOf(stateDir: string): Promise<string | undefined> {
  const local = await readLocalAuthority(stateDir, DEPLOYMENT);
  return local.state === 'whole' ? local.current.fingerprint : undefined;
}

/** A controller that published, then rotated without pushing: the walk offers publish, leave, force. */
async function aheadHost(): Promise<{ args: string[]; stateDir: string; published: string; local: string }> {
  // Each store under a parent of its own: a sibling holding this deployment's document is a near
  // miss, where minting is refused (docs/publishing.md).
  const store = path.join(tmp.dir, `store-${(hosts += 1)}`, 'store');
  mkdirSync(store, { recursive: true, mode: 0o700 });
  const stateDir = path.join(tmp.dir, `host-${hosts}`);
  const args = [
    '--deployment',
    DEPLOYMENT,
    '--state-dir',
    stateDir,
    '--store',
    `file://${store}`,
    '--no-seal',
  ];
  expect((await runBaton([...args, 'sync', '--first-controller', '--yes'])).exitCode).toBe(0);
  const published = (await fingerprintOf(stateDir))!;
  expect((await runBaton([...args, 'ca', 'rotate'])).exitCode).toBe(0);
  const local = (await fingerprintOf(stateDir))!;
  expect(local).not.toBe(published);
  return { args, stateDir, published, local };
}

/** Waits until the failover list takes keys: `?` opens the help (re-sent only if nothing changed), Esc closes it. */
async function listTakesKeys(session: TmuxSession): Promise<void> {
  await session.waitFor('› Publish this host', 'the list, on the first safe choice');
  await pressUntil(session, '?', 'Esc or ? closes this help');
  await pressUntil(session, 'Escape', '› Publish this host');
}

/** jj moves onto the force choice and Enter opens its gate; Esc backs out onto Leave, the safe choice. */
async function forceGateAndBack(session: TmuxSession): Promise<void> {
  await moveTwice(session);
  await session.type('\r');
  await session.waitFor('marked "type these"', 'the force gate');
  await session.keys('Escape');
  await session.waitFor(
    (s) => s.includes('› Leave it as it is') && !s.includes('type these'),
    'back on the safe choice, Leave',
  );
}

async function moveTwice(session: TmuxSession): Promise<void> {
  await listTakesKeys(session);
  await session.type('jj');
  await session.waitFor('› Replace the local authority (force)', 'jj: two moves, publish → leave → force');
}

describe('keys in one read at 80×24', () => {
  it('the failover walk: jj moves twice; Esc at the force gate and at the Publish confirm lands on Leave; a wrong case is refused; a paste types; <prefix>⏎ forces', async () => {
    const host = await aheadHost();
    const before = snapshotDir(host.stateDir);
    const prefix = host.local.slice(7, 15);
    const session = await TmuxSession.start({
      command: ['node', BIN, ...host.args, 'failover'].map(shellQuote).join(' '),
      env: { NO_COLOR: '1' },
    });
    sessions.push(session);

    await forceGateAndBack(session);
    // Not on force: one move up is Publish, and Esc from its confirm lands on Leave again.
    await session.type('k');
    await session.waitFor('› Publish this host', 'k: leave → publish');
    await session.type('\r');
    await session.waitFor('Confirm: Publish', 'Enter on Publish opens its confirm, not the force gate');
    await session.keys('Escape');
    await session.waitFor(
      (s) => s.includes('› Leave it as it is') && !s.includes('Confirm: Publish'),
      'back again, on Leave',
    );
    expect(snapshotDir(host.stateDir)).toEqual(before);

    await session.type('j');
    await session.waitFor('› Replace the local authority (force)', 'j: leave → force');
    await session.type('\r');
    await session.waitFor('marked "type these"', 'the force gate');
    await session.type(`${swapCase(prefix)}\r`);
    const refused = await session.waitFor('not accepted', 'the wrong case refused');
    expect(refused.replace(/\s+/g, ' ')).toContain(
      'same letters as the LOCAL fingerprint but not the same case',
    );
    expect(snapshotDir(host.stateDir)).toEqual(before);

    await session.keys('C-u');
    await session.waitFor((s) => /^>\s*$/m.test(s), 'the field cleared');
    await session.type(`\u001b[200~${prefix}\u001b[201~`);
    await session.waitFor(
      (s) => s.includes(`> ${prefix}`) && s.includes('[ Replace ] enabled'),
      'the pasted prefix, not submitted',
    );
    expect(snapshotDir(host.stateDir)).toEqual(before);

    await session.keys('C-u');
    await session.waitFor((s) => /^>\s*$/m.test(s), 'the field cleared');
    await session.type(`${prefix}\r`);
    await session.waitFor('Read again:', 'the force done');
    expect(await fingerprintOf(host.stateDir)).toBe(host.published);
    // ca/ was set aside (with its marker beside it), not deleted.
    const setAside = readdirSync(host.stateDir).filter((name) => /^ca\.superseded-[0-9TZ]+$/.test(name));
    expect(setAside).toHaveLength(1);
    expect(readdirSync(path.join(host.stateDir, setAside[0]!))).toContain('ca.key');
    await session.type('q');
    expect(await session.exitCode()).toBe(0);
  });

  it('the rotation gate: <count>⏎ in one write rotates', async () => {
    const dir = path.join(tmp.dir, 'mesh');
    mkdirSync(dir);
    writeLocalMesh(dir);
    const provisioner = startReceiptWriter(
      path.join(dir, 'machines/db1/var/lib/baton/mesh/provides/pg-main'),
    );
    try {
      const secretFile = path.join(dir, 'machines/web1/var/lib/baton/mesh/consumes/pg-main/web1_app');
      const command = [
        'node',
        BIN,
        '--state-dir',
        path.join(dir, 'state'),
        'mesh',
        'rotate',
        '--provider',
        'pg-main',
        '--inventory',
        path.join(dir, 'mesh.yaml'),
        '--wait',
        '10',
      ];
      const session = await TmuxSession.start({
        command: command.map(shellQuote).join(' '),
        cwd: dir,
        env: { NO_COLOR: '1' },
      });
      sessions.push(session);
      await session.waitFor('Type 2 (the number of credentials)', 'the confirm prompt');
      // The field takes keys once it echoes one: a digit, erased again.
      await pressUntil(session, '9', '> 9');
      await pressUntil(session, 'BSpace', (s) => /^>\s*$/m.test(s));
      await session.type('2\r');
      await session.waitFor('Rotated 2 credentials:', 'the rotation, from one write');
      expect(readFileSync(secretFile, 'utf8')).toHaveLength(43);
      await session.type('q');
      expect(await session.exitCode()).toBe(0);
    } finally {
      provisioner.stop();
    }
  });
});

const noSshd = sshdUnavailable();
describeWithPart(noSshd, 'keys in one read through a real ssh -t', () => {
  let sshd: Sshd;
  beforeAll(async () => {
    sshd = await startSshd();
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
  });

  it('jj on the failover list moves twice, and the Enter after it opens the force gate', async () => {
    const host = await aheadHost();
    const before = snapshotDir(host.stateDir);
    const session = await TmuxSession.start({ command: batonOverSsh(sshd, [...host.args, 'failover']) });
    sessions.push(session);
    await forceGateAndBack(session);
    await session.type('q');
    expect(await session.exitCode()).toBe(3);
    expect(snapshotDir(host.stateDir)).toEqual(before);
  });
});
