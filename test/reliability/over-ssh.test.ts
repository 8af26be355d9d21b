/**
 * The way operators use baton: over SSH. The BUILT CLI runs on the far side of `ssh -tt` to a
 * real sshd on 127.0.0.1, inside a private tmux at 80×24: the status view and the failover
 * walk render and take keys through the pty. Then the worst moment — the connection drops
 * mid-walk (the ssh client is SIGKILLed): the remote baton goes away with its terminal, no
 * lock is left held (a following sync is not exit 5), and nothing is half-written.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it, vi } from 'vitest';
import { readLocalAuthority } from '../../src/authority/index.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { keyMaterial, scanForSecrets } from '../helpers/secret-scan.js';
import { assertBuilt, runBaton } from '../helpers/run-baton.js';
import { describeWithPart } from '../helpers/real-part.js';
import { sshdUnavailable, startSshd, type Sshd } from '../helpers/sshd.js';
import { batonOverSsh, TmuxSession } from '../helpers/tmux.js';
import { pressUntil, typeUntilEchoed } from '../helpers/tmux-input.js';
import { ifSet } from '../helpers/if-set.js';

const unavailable = sshdUnavailable();
const DEPLOYMENT = '0be55be50be55be50be55be50be55b01';

describeWithPart(unavailable, 'baton over ssh -tt, in a real terminal', () => {
  let sshd: Sshd;
  let tmp: { dir: string; cleanup: () => void };
  let sessions: TmuxSession[] = [];
  let hosts = 0;
  const figures = { sessions: 0, keysSent: 0, droppedConnections: 0 };

  beforeAll(async () => {
    assertBuilt();
    sshd = await startSshd();
    tmp = makeTempDir('baton-over-ssh-');
  });
  afterEach(async () => {
    await Promise.all(sessions.map((s) => s.kill()));
    sessions = [];
  });
  afterAll(async () => {
    await ifSet(sshd)?.stop();
    ifSet(tmp)?.cleanup();
    console.log(`over-ssh figures: ${JSON.stringify(figures)}`);
  });

  const args = (stateDir: string, store: string) => [
    '--deployment',
    DEPLOYMENT,
    '--no-seal',
    '--state-dir',
    stateDir,
    '--store',
    `file://${store}`,
  ];

  /** Controller a published; b is fresh (or, with `diverge`, holds an unrelated authority). */
  async function controllers(name: string, diverge = false) {
    // Under a parent of its own: sibling stores of one deployment are a near miss (minting refused).
    const store = path.join(tmp.dir, name, 'store');
    mkdirSync(store, { recursive: true, mode: 0o700 });
    const a = path.join(tmp.dir, `${name}-a-${(hosts += 1)}`);
    const b = path.join(tmp.dir, `${name}-b-${(hosts += 1)}`);
    expect((await runBaton([...args(a, store), 'sync', '--first-controller', '--yes'])).exitCode).toBe(0);
    if (diverge) {
      // A parent of its own: a sibling store of this deployment would be a near miss (minting refused).
      const elsewhere = path.join(tmp.dir, `${name}-elsewhere`, 'store');
      mkdirSync(elsewhere, { recursive: true, mode: 0o700 });
      expect((await runBaton([...args(b, elsewhere), 'sync', '--first-controller', '--yes'])).exitCode).toBe(
        0,
      );
    }
    return { a, b, store };
  }

  async function fingerprintOf(stateDir: string): Promise<string | undefined> {
    const local = await readLocalAuthority(stateDir, DEPLOYMENT);
    return local.state === 'whole' ? local.current.fingerprint : undefined;
  }

  /** `ssh -tt` to the test sshd, running the built CLI there; inside tmux at 80×24. */
  async function overSsh(batonArgs: string[]): Promise<TmuxSession> {
    const session = await TmuxSession.start({ command: batonOverSsh(sshd, batonArgs) });
    sessions.push(session);
    figures.sessions += 1;
    return session;
  }

  /** A key that must be taken (re-sent only if the screen did not change; see tmux-input). */
  async function press(
    session: TmuxSession,
    key: string,
    expected: string | ((screen: string) => boolean),
  ): Promise<string> {
    figures.keysSent += 1;
    return pressUntil(session, key, expected);
  }

  const exited = (screen: string) => /\[exit \d+\]/.test(screen);

  /**
   * The ssh client and the remote baton whose argv mentions `needle` (not tmux or the pane's
   * shell, which carry the whole command line too).
   */
  function processesMentioning(needle: string): { pid: number; argv: string }[] {
    const out: { pid: number; argv: string }[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      try {
        const argv = readFileSync(`/proc/${entry}/cmdline`, 'latin1').split('\0').join(' ');
        if (argv.includes(needle) && /^(ssh|node) /.test(argv)) out.push({ pid: Number(entry), argv });
      } catch {
        // exited meanwhile
      }
    }
    return out;
  }

  it('the status view renders at 80×24 over ssh and takes r and q through the pty', async () => {
    const { a, b, store } = await controllers('status');
    const s = await overSsh([...args(b, store), 'status', '--watch', '--interval', '3600']);
    const screen = await s.waitFor('action needed');
    expect(screen).toContain((await fingerprintOf(a))!);
    for (const line of screen.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    // Another process adopts; the remote view learns it only when r is pressed over ssh.
    expect((await runBaton([...args(b, store), 'sync'])).exitCode).toBe(0);
    await press(s, 'r', '✓ in sync');
    await press(s, 'q', exited);
    expect(await s.exitCode()).toBe(0);
  });

  it('the status view of a diverged host shows both fingerprints in full within 80 columns, exit 3 through ssh', async () => {
    const { a, b, store } = await controllers('status-diverged', true);
    const s = await overSsh([...args(b, store), 'status']);
    expect(await s.exitCode()).toBe(3);
    // A plain report (it exits): read whole, its top may have scrolled above a 24-row pane.
    const screen = await s.capture(false, true);
    expect(screen).toContain((await fingerprintOf(a))!);
    expect(screen).toContain((await fingerprintOf(b))!);
    for (const line of screen.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
  });

  it('the failover walk adopts on a fresh host with Enter, Enter over ssh', async () => {
    const { a, b, store } = await controllers('adopt');
    const s = await overSsh([...args(b, store), 'failover']);
    await s.waitFor('Adopt the published authority');
    await press(s, 'Enter', 'Confirm: Adopt');
    await press(s, 'Enter', (screen) => screen.includes('Read again:') && screen.includes('in sync'));
    await press(s, 'q', exited);
    expect(await s.exitCode()).toBe(0);
    expect(await fingerprintOf(b)).toBe(await fingerprintOf(a));
  });

  it('a connection dropped mid-walk leaves no lock held and nothing half-written', async () => {
    const { a, b, store } = await controllers('drop', true);
    const local = (await fingerprintOf(b))!;
    const before = snapshotDir(b);
    const s = await overSsh([...args(b, store), 'failover']);
    const raw = path.join(tmp.dir, 'drop-pane.raw');
    await s.record(raw);
    await s.waitFor('Replace the local authority (force)');
    await press(s, 'j', '› Replace the local authority');
    await press(s, 'Enter', 'marked "type these"');
    await typeUntilEchoed(s, local.slice(7, 15), '[ Replace ] enabled');
    // What crossed the wire to the operator's screen holds no key material of either side.
    const keyFiles = [
      ...keyMaterial('host key', readFileSync(path.join(b, 'ca', 'ca.key'))),
      ...keyMaterial('published key', readFileSync(path.join(a, 'ca', 'ca.key'))),
    ];
    expect(
      scanForSecrets(
        [
          { name: 'pane bytes', data: readFileSync(raw) },
          { name: 'screen', data: await s.capture() },
        ],
        keyFiles,
      ),
    ).toEqual([]);

    // The operator's link dies: the ssh client is killed outright, mid-walk.
    const remoteBefore = processesMentioning(b).filter((p) => p.argv.includes('failover'));
    const client = remoteBefore.find((p) => p.argv.startsWith('ssh '));
    expect(client, JSON.stringify(remoteBefore)).toBeDefined();
    expect(remoteBefore.some((p) => p.argv.startsWith('node '))).toBe(true);
    process.kill(client!.pid, 'SIGKILL');
    figures.droppedConnections += 1;

    // The far side loses its terminal: the remote baton must not linger holding anything.
    await vi.waitFor(
      () => {
        const left = processesMentioning(b).filter((p) => p.argv.includes('failover'));
        if (left.length > 0) throw new Error(`still running: ${JSON.stringify(left)}`);
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(snapshotDir(b)).toEqual(before);
    const sync = await runBaton([...args(b, store), 'sync']);
    expect(sync.exitCode, sync.all).not.toBe(5);
    expect(sync.exitCode, sync.all).toBe(3); // still diverged: refused, naming both
    expect(sync.all).toContain(local);
    expect(snapshotDir(b)).toEqual(before);
    expect(await fingerprintOf(b)).toBe(local);
  });

  it('a connection dropped while status --watch runs leaves nothing behind', async () => {
    const { b, store } = await controllers('drop-status');
    mkdirSync(b, { recursive: true, mode: 0o700 });
    const before = snapshotDir(b);
    const s = await overSsh([...args(b, store), 'status', '--watch', '--interval', '3600']);
    await s.waitFor('action needed');
    const client = processesMentioning(b).find((p) => p.argv.startsWith('ssh ') && p.argv.includes('status'));
    expect(client).toBeDefined();
    process.kill(client!.pid, 'SIGKILL');
    figures.droppedConnections += 1;
    await vi.waitFor(
      () => {
        const left = processesMentioning(b).filter((p) => p.argv.includes('status'));
        if (left.length > 0) throw new Error(`still running: ${JSON.stringify(left)}`);
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(snapshotDir(b)).toEqual(before);
  });
});
