/**
 * The console on the terminals operators really have (docs/cli.md, "Terminals"), with the real `baton` binary:
 * tmux at 80×24 resized live, TERM=dumb, a pty that reports 0×0 (`script`), and the typed
 * gates' line editing and refusal reasons.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
import { assertBuilt, BIN, runBaton } from '../helpers/run-baton.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';
import { pressUntil, typeUntilEchoed } from '../helpers/tmux-input.js';
import { ifSet } from '../helpers/if-set.js';

const run = promisify(execFile);
let root: { dir: string; cleanup: () => void };
let sessions: TmuxSession[] = [];
let hostCount = 0;

/** Any cursor movement, erase, scroll-region or synchronized-output code (colour is SGR `m`, also absent here). */
const CURSOR_CODES = /\u001b\[[0-9;?]*[A-HJKSTfhlsu]|\u001b[78c]/;
const FULL_CLEAR = /\u001b\[2J|\u001b\[3J|\u001bc/;

beforeAll(async () => {
  assertBuilt();
  root = makeTempDir('baton-terminal-');
  // An explicit check, never a skip: without tmux and script these promises are unproved.
  await run('tmux', ['-V']);
  await run('script', ['--version']);
});
afterEach(async () => {
  await Promise.all(sessions.map((s) => s.kill()));
  sessions = [];
});
afterAll(() => ifSet(root)?.cleanup());

/** Each test has its own deployment: 32 hex characters derived from its name. */
function deploymentId(name: string): string {
  return createHash('md5').update(name).digest('hex');
}

function newHost(
  deployment: string,
  store = `store-${deployment}`,
): { stateDir: string; store: string; args: string[] } {
  const stateDir = path.join(root.dir, `host-${++hostCount}`);
  const dir = path.join(root.dir, store);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    stateDir,
    store: dir,
    args: [
      '--deployment',
      deploymentId(deployment),
      '--no-seal',
      '--state-dir',
      stateDir,
      '--store',
      `file://${dir}`,
    ],
  };
}

async function fingerprint(args: string[]): Promise<string> {
  const { stdout } = await runBaton([...args, 'status', '--json']);
  return JSON.parse(stdout).local.fingerprint as string;
}

/** b minted against a store of its own, then points at a's: refused, unrelated. */
async function diverged(deployment: string) {
  const a = newHost(deployment);
  const b = newHost(deployment, `store-${deployment}-elsewhere`);
  expect((await runBaton([...a.args, 'ca', 'init', '--yes'])).exitCode).toBe(0);
  expect((await runBaton([...a.args, 'sync'])).exitCode).toBe(0);
  expect((await runBaton([...b.args, 'ca', 'init', '--yes'])).exitCode).toBe(0);
  return { a, b: { ...b, store: a.store, args: [...b.args.slice(0, -1), `file://${a.store}`] } };
}

async function inTmux(
  args: string[],
  options: { env?: Record<string, string>; columns?: number; rows?: number } = {},
): Promise<TmuxSession> {
  const command = ['node', BIN, ...args].map(shellQuote).join(' ');
  const session = await TmuxSession.start({
    command,
    env: { NO_COLOR: '', ...options.env },
    columns: options.columns,
    rows: options.rows,
  });
  sessions.push(session);
  return session;
}

function count(screen: string, text: string): number {
  return screen.split(text).length - 1;
}

function rowsUsed(screen: string): number {
  return screen.replace(/\n+$/, '').split('\n').length;
}

describe('the walk never mints by default', () => {
  it('Enter, Enter, Enter on a fresh host with nothing published mints nothing and publishes nothing', async () => {
    const host = newHost('fresh-enters');
    const before = snapshotDir(root.dir);
    const s = await inTmux([...host.args, 'failover']);
    const screen = await s.waitFor('Choose:');
    expect(screen).toContain('› Leave it as it is');
    await s.keys('Enter');
    await s.waitFor('Nothing was written.');
    await s.keys('Enter');
    await s.keys('Enter');
    // A key that arrives in the same read as an Enter is dropped on purpose (it must never reach a
    // screen the operator has not seen yet), so under load the q may need a second press.
    await pressUntil(s, 'q', (x) => /\[exit \d+\]/.test(x));
    expect(await s.exitCode()).toBe(3);
    expect(existsSync(path.join(host.stateDir, 'ca'))).toBe(false);
    expect(readdirSync(host.store)).toEqual([]);
    expect(snapshotDir(root.dir)).toEqual(before);
  });

  it('minting asks for the deployment id: a bare Enter and a wrong id are refused with the reason', async () => {
    const host = newHost('payments-eu');
    const s = await inTmux([...host.args, 'failover']);
    await s.waitFor('Choose:');
    await pressUntil(s, 'Up', '› Become the first controller');
    await pressUntil(s, 'Enter', 'Confirm: Become the first controller');
    await s.keys('Enter');
    const screen = await s.waitFor('not accepted');
    expect(screen.replace(/\s+/g, ' ')).toContain('Type the first 8 characters of the deployment id first.');
    const prefix = deploymentId('payments-eu').slice(0, 8);
    const wrong = `${prefix.slice(0, 7)}${prefix[7] === '0' ? '1' : '0'}`;
    await typeUntilEchoed(s, wrong, `> ${wrong}`);
    await s.keys('Enter');
    await s.waitFor(`"${wrong}" is not the first 8`);
    expect(existsSync(path.join(host.stateDir, 'ca'))).toBe(false);
    expect(readdirSync(host.store)).toEqual([]);
    await s.keys('C-u');
    await s.waitFor((x) => /^>\s*$/m.test(x), 'the field cleared by Ctrl-U');
    await typeUntilEchoed(s, prefix, `> ${prefix}`);
    await s.keys('Enter');
    await s.waitFor((x) => x.includes('Read again:') && x.includes('in sync'), 'the mint');
    await s.keys('q');
    expect(await s.exitCode()).toBe(0);
    expect(readdirSync(host.store)).toContain('authority.json');
  });
});

describe('layout follows the terminal, live', () => {
  it('status --watch re-lays out at 80×24 → 60×20 → 120×40 with one header and within the rows', async () => {
    const { a, b } = await diverged('resize-status');
    const local = await fingerprint(b.args);
    const published = await fingerprint(a.args);
    const raw = path.join(root.dir, 'resize-status.raw');
    const s = await inTmux([...b.args, 'status', '--watch', '--interval', '3600']);
    await s.waitFor('refused');
    await s.record(raw);
    for (const [columns, rows] of [
      [60, 20],
      [120, 40],
      [80, 24],
    ] as const) {
      await s.resize(columns, rows);
      const screen = await s.waitFor(
        (x) =>
          x.includes('r read now · ? help · q quit') &&
          count(x, 'baton status') === 1 &&
          x.split('\n').every((line) => [...line].length <= columns) &&
          (columns < 100 || (x.includes(local.slice(7)) && x.includes(published.slice(7)))),
        `one frame at ${columns}×${rows}`,
      );
      expect(count(screen, 'baton status'), screen).toBe(1);
      // The verdict survives narrowing; the key hints stay on the last line of the frame.
      expect(screen).toContain('✗ refused');
      expect(rowsUsed(screen)).toBeLessThanOrEqual(rows);
      if (columns >= 100) {
        expect(screen).toContain(local.slice(7));
        expect(screen).toContain(published.slice(7));
      }
    }
    await s.keys('q');
    expect(await s.exitCode()).toBe(3);
    expect(readFileSync(raw, 'latin1')).not.toMatch(FULL_CLEAR);
  });

  it('the force gate keeps the LOCAL fingerprint to type visible through 60×20 and 120×40, with one header', async () => {
    const { b } = await diverged('resize-force');
    const local = await fingerprint(b.args);
    const raw = path.join(root.dir, 'resize-force.raw');
    const s = await inTmux([...b.args, 'failover']);
    await s.record(raw);
    await s.waitFor('Choose:');
    await pressUntil(s, 'j', '› Replace the local authority');
    await pressUntil(s, 'Enter', 'marked "type these"');
    for (const [columns, rows] of [
      [60, 20],
      [120, 40],
      [80, 24],
    ] as const) {
      await s.resize(columns, rows);
      const screen = await s.waitFor(
        (x) => count(x, 'baton failover') === 1 && x.includes('type these') && x.includes(local.slice(7)),
        `the gate at ${columns}×${rows}`,
      );
      expect(rowsUsed(screen)).toBeLessThanOrEqual(rows);
      // Wrapped, never cut: the body after SHA256: is whole on one line.
      expect(screen.split('\n').some((line) => line.includes(local.slice(7)))).toBe(true);
    }
    await s.keys('C-c');
    await s.exitCode();
    expect(readFileSync(raw, 'latin1')).not.toMatch(FULL_CLEAR);
  });
});

describe('the force gate edits like a shell and says why it refuses', () => {
  it('takes Backspace in one burst, Ctrl-U and Ctrl-W, and names the PUBLISHED prefix and a wrong count of characters', async () => {
    const { a, b } = await diverged('gate-editing');
    const published = await fingerprint(a.args);
    const before = snapshotDir(b.stateDir);
    const s = await inTmux([...b.args, 'failover']);
    await s.waitFor('Choose:');
    await pressUntil(s, 'j', '› Replace the local authority');
    await pressUntil(s, 'Enter', 'marked "type these"');
    await typeUntilEchoed(s, 'abcdefgh', '> abcdefgh');
    // Three DEL bytes in ONE write: what a held Backspace sends over SSH.
    await s.bytes('7f', '7f', '7f');
    await s.waitFor(
      (x) => x.includes('> abcde') && !x.includes('> abcdef'),
      'three characters erased by one burst',
    );
    await s.type(' xyz');
    await s.waitFor('> abcde xyz');
    await s.keys('C-w');
    await s.waitFor((x) => x.includes('> abcde') && !x.includes('xyz'), 'the last word erased by Ctrl-W');
    await s.keys('C-u');
    // Cleared, and no literal "u" or "w" typed into it.
    await s.waitFor((x) => /^>\s*$/m.test(x), 'the field cleared by Ctrl-U');

    await typeUntilEchoed(s, published.slice(7, 15), `> ${published.slice(7, 15)}`);
    await s.keys('Enter');
    let screen = await s.waitFor('not accepted');
    expect(screen.replace(/\s+/g, ' ')).toContain('That is the PUBLISHED fingerprint');
    await s.keys('C-u');
    await typeUntilEchoed(s, 'abcd', '> abcd');
    await s.keys('Enter');
    screen = await s.waitFor('you typed 4');
    expect(screen.replace(/\s+/g, ' ')).toContain('Expected 8 characters, you typed 4');
    expect(snapshotDir(b.stateDir)).toEqual(before);
    await s.keys('Escape');
    await s.waitFor('Choose:');
    await s.keys('q');
    expect(await s.exitCode()).toBe(3);
  });
});

describe('terminals without cursor addressing get the plain renderer', () => {
  it('TERM=dumb: status is plain text and the walk is a line dialogue, with no cursor codes', async () => {
    const { b } = await diverged('term-dumb');
    const raw = path.join(root.dir, 'dumb.raw');
    const status = await inTmux([...b.args, 'status'], { env: { TERM: 'dumb' } });
    expect(await status.exitCode()).toBe(3);
    expect(await status.capture()).toContain('✗ refused');

    const s = await inTmux([...b.args, 'failover'], { env: { TERM: 'dumb' } });
    await s.record(raw);
    await s.waitFor('Choose 1-');
    await s.keys('Enter');
    await s.waitFor('Nothing was written.');
    expect(await s.exitCode()).toBe(3);
    const written = readFileSync(raw, 'latin1');
    expect(written).toContain('Left as it is');
    expect(written).not.toMatch(CURSOR_CODES);
  });

  it('a pty that reports 0×0 (script): status and the walk print no cursor codes, and Enter mints nothing', async () => {
    const host = newHost('zero-size');
    const quoted = (args: string[]) => ['node', BIN, ...args].map(shellQuote).join(' ');
    const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm-256color', NO_COLOR: '' };
    delete env.CI;
    delete env.CONTINUOUS_INTEGRATION;
    const status = await run('script', ['-qc', quoted([...host.args, 'status']), '/dev/null'], { env }).catch(
      (error: { stdout: string }) => error,
    );
    expect(status.stdout).toContain('it can be the first controller');
    expect(status.stdout).not.toMatch(CURSOR_CODES);

    const walk = await new Promise<string>((resolve, reject) => {
      const child = execFile(
        'script',
        ['-qc', quoted([...host.args, 'failover']), '/dev/null'],
        { env },
        (error, stdout) => (stdout ? resolve(stdout) : reject(error ?? new Error('script printed nothing'))),
      );
      child.stdin!.end('\n\n\n');
    });
    expect(walk).toContain('(default)');
    expect(walk).toContain('Nothing was written.');
    expect(walk).not.toMatch(CURSOR_CODES);
    expect(existsSync(path.join(host.stateDir, 'ca'))).toBe(false);
    expect(readdirSync(host.store)).toEqual([]);
  });
});

describe('what a script reads', () => {
  it('status --json with a config error prints one JSON error object and exits with the same code', async () => {
    const missing = path.join(root.dir, 'no-such-baton.yaml');
    const result = await runBaton(['--config', missing, 'status', '--json']);
    expect(result.exitCode).toBe(2);
    const json = JSON.parse(result.stdout);
    expect(json).toMatchObject({
      format: 'baton.status/1',
      exit_code: 2,
      error: { code: 'config', where: missing },
    });
    expect(result.stderr).toContain('does not exist');
  });

  it('--help lists the exit codes', async () => {
    const result = await runBaton(['--help']);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Exit codes:');
    expect(result.stdout).toMatch(/^ {2}4 {2}aborted by the all-or-nothing gate/m);
    expect(result.stdout).toMatch(/^ {2}6 {2}the store changed underneath/m);
  });
});
