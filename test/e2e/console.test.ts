/**
 * The real `baton` binary (built by `npm run build`) in a real terminal (tmux, 80×24) against
 * a directory store and temp state dirs: what an operator sees over SSH, end to end.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createHash } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { withAuthorityLock } from '../../src/authority/index.js';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';
import { pressUntil, typeUntilEchoed } from '../helpers/tmux-input.js';
import { ifSet } from '../helpers/if-set.js';

let root: { dir: string; cleanup: () => void };
let sessions: TmuxSession[] = [];
let hostCount = 0;

beforeAll(() => {
  assertBuilt();
  root = makeTempDir('baton-e2e-');
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.kill()));
  sessions = [];
});
afterAll(() => ifSet(root)?.cleanup());

/** A fresh state dir; each test has its own deployment (32 hex, from its name) and its own directory store. */
function newHost(deployment: string): { stateDir: string; args: string[] } {
  const stateDir = path.join(root.dir, `host-${++hostCount}`);
  const id = createHash('md5').update(deployment).digest('hex');
  return {
    stateDir,
    args: [
      '--deployment',
      id,
      '--no-seal',
      '--state-dir',
      stateDir,
      '--store',
      `file://${path.join(root.dir, `store-${deployment}`)}`,
    ],
  };
}

async function baton(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = await runBaton(args, { env: env });
  return { code: run.exitCode, stdout: run.stdout, stderr: run.stderr };
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function fingerprint(args: string[]): Promise<string> {
  const { stdout } = await baton([...args, 'status', '--json']);
  return JSON.parse(stdout).local.fingerprint as string;
}

async function inTmux(args: string[], env: Record<string, string> = {}): Promise<TmuxSession> {
  const command = ['node', BIN, ...args].map(shellQuote).join(' ');
  const session = await TmuxSession.start({ command, env: { NO_COLOR: '', ...env } });
  sessions.push(session);
  return session;
}

function mkStore(deployment: string): void {
  mkdirSync(path.join(root.dir, `store-${deployment}`), { recursive: true, mode: 0o700 });
}

/** Controller a publishes its authority; b is fresh. */
async function onePublished(deployment: string) {
  mkStore(deployment);
  const a = newHost(deployment);
  const b = newHost(deployment);
  expect((await baton([...a.args, 'ca', 'init', '--yes'])).code).toBe(0);
  expect((await baton([...a.args, 'sync'])).code).toBe(0);
  return { a, b };
}

/**
 * Both controllers minted their own: b diverges from what a published (unrelated). `ca init`
 * refuses to mint while the store holds an authority, so b mints against an empty store of its
 * own first — the wrong-store mistake the lineage diagnosis exists to name.
 */
async function diverged(deployment: string) {
  const { a, b } = await onePublished(deployment);
  // A parent of its own: a sibling of a's store would be a near miss (a typo'd store), and minting there is refused.
  const elsewhere = path.join(root.dir, `elsewhere-${deployment}`, 'store');
  mkdirSync(elsewhere, { recursive: true, mode: 0o700 });
  expect(
    (await baton([...b.args.slice(0, -2), '--store', `file://${elsewhere}`, 'ca', 'init', '--yes'])).code,
  ).toBe(0);
  return { a, b };
}

describe('baton status in a real terminal', () => {
  it('shows both fingerprints in full, stacked at 80 columns, with the verdict and next step', async () => {
    const { a, b } = await diverged('status-diverged');
    const [fa, fb] = [await fingerprint(a.args), await fingerprint(b.args)];
    expect(fa).not.toBe(fb);
    const s = await inTmux([...b.args, 'status']);
    expect(await s.exitCode()).toBe(3);
    // A plain report (it exits): read whole, its top may have scrolled above a 24-row pane.
    const screen = await s.capture(false, true);
    expect(screen).toContain(fa);
    expect(screen).toContain(fb);
    expect(screen).toContain('✗ refused');
    expect(screen.replace(/\s+/g, ' ')).toContain('Nothing links the two authorities');
    expect(screen).toContain('^');
  });

  it('prints no escape sequences with NO_COLOR=1 in a terminal, nor when piped', async () => {
    const { a } = await onePublished('status-plain');
    const s = await inTmux([...a.args, 'status'], { NO_COLOR: '1' });
    expect(await s.exitCode()).toBe(0);
    const withEscapes = await s.capture(true);
    expect(withEscapes).toContain('✓ in sync');
    expect(withEscapes).not.toMatch(/\u001b\[/);

    const piped = await baton([...a.args, 'status']);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toContain('✓ in sync');
    expect(piped.stdout).not.toMatch(/\u001b/);
    const noColor = await baton([...a.args, 'status'], { NO_COLOR: '1', FORCE_COLOR: '1' });
    expect(noColor.stdout).not.toMatch(/\u001b/);
    const json = await baton([...a.args, 'status', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      format: 'baton.status/1',
      exit_code: 0,
      verdict: { kind: 'in-sync' },
    });
  });
});

describe('baton status changes nothing', () => {
  it('answers while another process holds the lock, and leaves the state dirs and the store byte-identical', async () => {
    const { a, b } = await onePublished('status-read-only');
    const before = snapshotDir(root.dir);
    let release!: () => void;
    const held = withAuthorityLock(a.stateDir, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    try {
      const synced = await baton([...a.args, 'status']);
      expect(synced.code).toBe(0);
      expect(synced.stdout).toContain('✓ in sync');
      const fresh = await baton([...b.args, 'status', '--json']);
      expect(fresh.code).toBe(3);
      expect(JSON.parse(fresh.stdout).local.state).toBe('fresh');
    } finally {
      release();
      await held;
    }
    expect(snapshotDir(root.dir)).toEqual(before);
    expect(existsSync(b.stateDir)).toBe(false);
  });
});

describe('baton status when the store cannot be reached', () => {
  it('exits 1, shows the local side and names the store with what to check', async () => {
    const { a } = await onePublished('status-unreachable');
    const port = await closedPort();
    const store = `s3://baton-e2e/prefix?endpoint=http://127.0.0.1:${port}&path_style=true&region=us-east-1`;
    const args = [...a.args.slice(0, -2), '--store', store];
    const env = {
      AWS_ACCESS_KEY_ID: 'e2e',
      AWS_SECRET_ACCESS_KEY: 'e2e-secret',
      AWS_EC2_METADATA_DISABLED: 'true',
    };
    const plain = await baton([...args, 'status'], env);
    expect(plain.code).toBe(1);
    expect(plain.stdout).toContain(await fingerprint(a.args));
    expect(plain.stdout).toContain('s3://baton-e2e/prefix/authority.json');
    expect(plain.stdout).toMatch(/could not read/);
    expect(plain.stdout).not.toMatch(/\n\s+at /);
    const json = await baton([...args, 'status', '--json'], env);
    expect(json.code).toBe(1);
    // A monitor tells "cannot reach" from "denied" or "no bucket" by the reason, not the words.
    expect(JSON.parse(json.stdout)).toMatchObject({
      exit_code: 1,
      could_not_read: true,
      published: { state: 'unreadable', error: { code: 'failed', reason: 'unreachable' } },
    });
  });
});

describe('baton status --watch in a real terminal', () => {
  it("re-reads on r without clearing the screen, ignores Esc, and q quits with the last read's code", async () => {
    const { a, b } = await onePublished('status-watch');
    const raw = path.join(root.dir, 'watch.raw');
    const s = await inTmux([...b.args, 'status', '--watch', '--interval', '3600']);
    await s.waitFor('action needed');
    await s.record(raw);
    // Another process adopts meanwhile; the view only learns of it by reading again.
    expect((await baton([...b.args, 'sync'])).code).toBe(0);
    await s.keys('r');
    await s.waitFor('✓ in sync');
    // The published authority moves on meanwhile (a rotates and pushes). Only a read taken
    // AFTER Esc can show it, and keys are handled in order: its showing proves Esc neither quit
    // the view nor stopped its keys (waiting for "in sync" again would pass either way).
    expect((await baton([...a.args, 'ca', 'rotate'])).code).toBe(0);
    expect((await baton([...a.args, 'sync', '--push'])).code).toBe(0);
    const rotated = await fingerprint(a.args);
    const expected = (await baton([...b.args, 'status'])).code;
    expect(expected).not.toBe(0);
    await s.keys('Escape');
    // Under load the r can land in the Escape's read, where it is dropped by design (Esc ends a
    // read): pressed again only if nothing changed.
    await pressUntil(s, 'r', (x) => x.includes(rotated.slice(0, 20)) && !x.includes('✓ in sync'));
    expect(await s.capture()).not.toMatch(/\[exit \d+\]/);
    await s.keys('q');
    expect(await s.exitCode()).toBe(expected);
    // Redraws rewrite the frame in place: no clear-screen (it flickers over SSH).
    const written = readFileSync(raw, 'latin1');
    expect(written.length).toBeGreaterThan(0);
    expect(written).not.toMatch(/\u001b\[2J|\u001b\[3J|\u001bc/);
  });
});

describe('baton failover in a real terminal', () => {
  it('adopts the published authority on a fresh host', async () => {
    const { a, b } = await onePublished('failover-adopt');
    const s = await inTmux([...b.args, 'failover']);
    await s.waitFor('Adopt the published authority');
    await pressUntil(s, 'Enter', 'Confirm: Adopt');
    expect(existsSync(path.join(b.stateDir, 'ca'))).toBe(false);
    await s.keys('Enter');
    await s.waitFor((screen) => screen.includes('Read again:') && screen.includes('in sync'), 'the result');
    await s.keys('q');
    expect(await s.exitCode()).toBe(0);
    expect(await fingerprint(b.args)).toBe(await fingerprint(a.args));
    expect(statSync(path.join(b.stateDir, 'ca', 'ca.key')).mode & 0o777).toBe(0o600);
  });

  it('forces on a diverged host only after the LOCAL prefix is typed, leaving a ca.superseded-* directory', async () => {
    const { a, b } = await diverged('failover-force');
    const local = await fingerprint(b.args);
    const oldKey = readFileSync(path.join(b.stateDir, 'ca', 'ca.key'));
    const s = await inTmux([...b.args, 'failover']);
    await s.waitFor('Replace the local authority (force)');
    await pressUntil(s, 'j', '› Replace the local authority');
    await pressUntil(s, 'Enter', 'marked "type these"');
    const before = snapshotDir(b.stateDir);
    // A view's keys activate in the effect after the frame that draws it: under load a key
    // typed the moment the field shows can be lost, so typing waits for its echo.
    await typeUntilEchoed(s, 'wrongpfx', '> wrongpfx');
    // Enter with the wrong prefix is refused, saying so; a key typed in the same read as an Enter
    // is dropped on purpose, so the next key waits for the refusal.
    await s.keys('Enter');
    await s.waitFor('does not match', 'the refused Enter');
    await s.type('z');
    const refused = await s.waitFor('> wrongpfxz', 'a key typed after the refused Enter');
    expect(refused).toContain('[ Replace ] disabled');
    expect(snapshotDir(b.stateDir)).toEqual(before);
    await s.keys('Escape');
    // Back on the safe choice: force is chosen again on purpose.
    await s.waitFor('› Leave it as it is', 'back at the choice, on the safe one');
    await pressUntil(s, 'j', '› Replace the local authority');
    await pressUntil(s, 'Enter', 'marked "type these"');
    await typeUntilEchoed(s, local.slice(7, 15), '[ Replace ] enabled');
    await s.keys('Enter');
    await s.waitFor((screen) => screen.includes('Read again:') && screen.includes('in sync'), 'the result');
    await s.keys('q');
    expect(await s.exitCode()).toBe(0);
    const superseded = readdirSync(b.stateDir).filter((name) => /^ca\.superseded-\d{8}T\d{6}Z$/.test(name));
    expect(superseded).toHaveLength(1);
    expect(readFileSync(path.join(b.stateDir, superseded[0]!, 'ca.key'))).toEqual(oldKey);
    expect(await fingerprint(b.args)).toBe(await fingerprint(a.args));
  });

  it('refuses to start without a terminal and points at baton sync, writing nothing', async () => {
    const { b } = await onePublished('failover-no-tty');
    mkdirSync(b.stateDir, { recursive: true });
    const before = snapshotDir(b.stateDir);
    const result = await baton([...b.args, 'failover']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('needs a terminal');
    // The suggested sync keeps the global flags this run was given.
    expect(result.stderr).toMatch(/`baton --deployment \S+ --state-dir \S+ --store \S+ --no-seal sync`/);
    expect(result.stderr).toContain('Nothing was written.');
    expect(snapshotDir(b.stateDir)).toEqual(before);
  });
});
