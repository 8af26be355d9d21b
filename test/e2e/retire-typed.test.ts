/**
 * `baton ca retire` of an unproved predecessor on a real terminal (tmux): the typed screen
 * deletes ca-previous.* only after the operator typed the first 8 characters of the PREVIOUS
 * fingerprint; anything else is an abort that writes nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { billetPair, requireOpenssl, writeBilletState } from '../helpers/billet-fixture.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN } from '../helpers/run-baton.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';

const DEP = '0123456789abcdef0123456789abcdef';
const temp = makeTempDir('baton-retire-typed-');
const sessions: TmuxSession[] = [];
beforeAll(() => {
  assertBuilt();
  requireOpenssl();
  try {
    execFileSync('tmux', ['-V'], { stdio: 'pipe' });
  } catch {
    throw new Error('tmux is not on PATH: install it (apt-get install tmux); this suite must run, not skip.');
  }
});
afterEach(async () => {
  while (sessions.length) await sessions.pop()!.kill();
});
afterAll(() => temp.cleanup());

let n = 0;
function unprovedOverlap() {
  const stateDir = path.join(temp.dir, `state-${n++}`);
  const old = billetPair(temp.dir, DEP);
  const current = billetPair(temp.dir, DEP);
  writeBilletState(stateDir, DEP, current, old);
  return { stateDir, old, current };
}

async function retireInTmux(stateDir: string): Promise<TmuxSession> {
  const command = ['node', BIN, '--deployment', DEP, '--state-dir', stateDir, 'ca', 'retire']
    .map(shellQuote)
    .join(' ');
  const session = await TmuxSession.start({ command, env: { NO_COLOR: '1' } });
  sessions.push(session);
  return session;
}

/** `text` echoed as the answer to the typed question (the screen may wrap it anywhere). */
const echoed = (text: string) => (screen: string) => screen.replace(/\s+/g, '').includes(`deleteit:${text}`);

describe('ca retire on a terminal, when the current certificate names no predecessor', () => {
  it('says why it cannot be proved and aborts on a wrong prefix, writing nothing', async () => {
    const { stateDir } = unprovedOverlap();
    const before = snapshotDir(stateDir);
    const s = await retireInTmux(stateDir);
    const screen = await s.waitFor('Type the first 8 characters', 'the typed screen');
    expect(screen.replace(/\s+/g, ' ')).toContain('names no predecessor');
    await s.type('AAAAAAAA');
    await s.waitFor(echoed('AAAAAAAA'), 'the typed text');
    await s.keys('Enter');
    expect(await s.exitCode()).toBe(3);
    expect((await s.capture()).replace(/\s+/g, ' ')).toContain(
      'The typed characters do not match the previous fingerprint.',
    );
    expect(snapshotDir(stateDir)).toEqual(before);
    expect(existsSync(path.join(stateDir, 'ca', 'ca-previous.key'))).toBe(true);
  });

  it("deletes ca-previous.* once the previous fingerprint's first 8 characters are typed", async () => {
    const { stateDir, old } = unprovedOverlap();
    const s = await retireInTmux(stateDir);
    await s.waitFor('Type the first 8 characters', 'the typed screen');
    const prefix = old.fingerprint.slice('SHA256:'.length, 'SHA256:'.length + 8);
    await s.type(prefix);
    // The prefix is already on screen in the fingerprint printed above the question: wait for
    // its echo after the question instead.
    await s.waitFor(echoed(prefix), 'the typed text');
    await s.keys('Enter');
    expect(await s.exitCode()).toBe(0);
    expect((await s.capture()).replace(/\s+/g, ' ')).toContain('on your word');
    expect(existsSync(path.join(stateDir, 'ca', 'ca-previous.key'))).toBe(false);
    expect(existsSync(path.join(stateDir, 'ca', 'ca-previous.crt'))).toBe(false);
  });
});
