/**
 * Bracketed paste in a real terminal. tmux wraps a paste (`paste-buffer -p`) in ESC[200~ …
 * ESC[201~ only while the program has asked for it, as xterm, iTerm and GNOME do: without
 * the request a pasted `<LOCAL 8>⏎` is eight keys and an Enter, and the Enter replaced the
 * authority. Each exit path is checked to leave the terminal with the mode off again (a shell
 * after baton would otherwise get every paste wrapped in escapes).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { bracketedPasteLeftOn, shellQuote, TmuxSession } from '../helpers/tmux.js';
import { pressUntil } from '../helpers/tmux-input.js';

const DEPLOYMENT = '6b6579726561647300000000000000b2';
let tmp: { dir: string; cleanup: () => void };
let sessions: TmuxSession[] = [];
let hosts = 0;
/** Loaded before baton (`node --require`): SIGUSR2 throws, the uncaught error a crash is. */
let crashOnSignal: string;

beforeAll(() => {
  assertBuilt();
  tmp = makeTempDir('baton-paste-');
  crashOnSignal = path.join(tmp.dir, 'crash-on-sigusr2.cjs');
  writeFileSync(
    crashOnSignal,
    "process.on('SIGUSR2', () => { throw new Error('a crash, for the test'); });\n",
  );
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.kill()));
  sessions = [];
});
afterAll(() => tmp.cleanup());

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
  return { args, stateDir, published, local };
}

/** What the pane's program wrote, recorded from before it started. */
const recordings = new Map<TmuxSession, string>();

/** Whether the terminal is in bracketed-paste mode, as the program's writes so far leave it. */
function pasteMode(session: TmuxSession): boolean | undefined {
  const file = recordings.get(session)!;
  return existsSync(file) ? bracketedPasteLeftOn(readFileSync(file, 'latin1')) : undefined;
}

async function failover(host: { args: string[] }, node: string[] = []): Promise<TmuxSession> {
  // baton starts only once the recording does, so its first request is in the recording.
  const go = path.join(tmp.dir, `go-${(hosts += 1)}`);
  const baton = ['node', ...node, BIN, ...host.args, 'failover'].map(shellQuote).join(' ');
  const session = await TmuxSession.start({
    command: `sh -c ${shellQuote(`while [ ! -e ${shellQuote(go)} ]; do sleep 0.05; done; exec ${baton}`)}`,
    env: { NO_COLOR: '1' },
  });
  sessions.push(session);
  const recording = path.join(tmp.dir, `pane-${hosts}.raw`);
  await session.record(recording);
  recordings.set(session, recording);
  writeFileSync(go, '');
  await session.waitFor('› Publish this host', 'the failover list');
  // The list takes keys once `?` opens its help; Esc closes it again.
  await pressUntil(session, '?', 'Esc or ? closes this help');
  await pressUntil(session, 'Escape', '› Publish this host');
  return session;
}

async function openForceGate(session: TmuxSession): Promise<void> {
  await session.type('jj');
  await session.waitFor('› Replace the local authority (force)', 'on the force choice');
  await session.type('\r');
  await session.waitFor('marked "type these"', 'the force gate');
}

describe('bracketed paste at 80×24', () => {
  it('a pasted <LOCAL 8>⏎ fills the force field and replaces nothing until a separate Enter', async () => {
    const host = await aheadHost();
    const before = snapshotDir(host.stateDir);
    const prefix = host.local.slice(7, 15);
    const session = await failover(host);
    expect(pasteMode(session)).toBe(true);
    await openForceGate(session);

    await session.paste(`${prefix}\n`);
    await session.waitFor(
      (s) => s.includes(`> ${prefix}`) && s.includes('[ Replace ] enabled'),
      'the pasted prefix in the field',
    );
    // A key typed after the paste lands in the same field: the pasted line break pressed nothing.
    await session.type('x');
    await session.waitFor(`> ${prefix}x`, 'the field still taking keys after the paste');
    expect(await fingerprintOf(host.stateDir)).toBe(host.local);
    expect(snapshotDir(host.stateDir)).toEqual(before);

    await session.keys('BSpace');
    await session.waitFor((s) => s.includes(`> ${prefix}`) && s.includes('[ Replace ] enabled'));
    await session.keys('Enter');
    await session.waitFor('Read again:', 'the force, done by the separate Enter');
    expect(await fingerprintOf(host.stateDir)).toBe(host.published);
    await session.type('q');
    expect(await session.exitCode()).toBe(0);
    expect(pasteMode(session)).toBe(false);
  });

  const exits: readonly {
    readonly how: string;
    readonly code: number;
    readonly node?: string[];
    readonly leave: (session: TmuxSession) => Promise<void>;
  }[] = [
    { how: 'q', code: 3, leave: (s) => s.type('q') },
    { how: 'Ctrl-C at the force gate', code: 3, leave: async (s) => (await openForceGate(s), s.keys('C-c')) },
    { how: 'SIGTERM', code: 143, leave: async (s) => void process.kill(await s.commandPid(), 'SIGTERM') },
    { how: 'SIGHUP', code: 129, leave: async (s) => void process.kill(await s.commandPid(), 'SIGHUP') },
    {
      how: 'a crash (an uncaught error)',
      code: 1,
      node: ['--require'],
      leave: async (s) => void process.kill(await s.commandPid(), 'SIGUSR2'),
    },
  ];
  for (const exit of exits) {
    it(`bracketed paste is off again after ${exit.how}`, async () => {
      const host = await aheadHost();
      const before = snapshotDir(host.stateDir);
      const session = await failover(host, exit.node ? [...exit.node, crashOnSignal] : []);
      expect(pasteMode(session)).toBe(true);
      await exit.leave(session);
      expect(await session.exitCode()).toBe(exit.code);
      expect(pasteMode(session)).toBe(false);
      expect(snapshotDir(host.stateDir)).toEqual(before);
    });
  }
});
