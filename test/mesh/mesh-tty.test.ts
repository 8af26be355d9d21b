import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JOURNAL_FILE } from '../../src/mesh/journal.js';
import { makeTempDir, snapshotDir, withoutLockHolder } from '../helpers/fs-snapshot.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';
import { writeLocalMesh } from './mesh-fixture.js';
import { startReceiptWriter } from './receipt-writer.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');

let tmp: { dir: string; cleanup: () => void };
let session: TmuxSession | undefined;
let provisioner: { stop(): void };
beforeEach(() => {
  tmp = makeTempDir('baton-mesh-tty-');
  writeLocalMesh(tmp.dir);
  provisioner = startReceiptWriter(path.join(tmp.dir, 'machines/db1/var/lib/baton/mesh/provides/pg-main'));
});
afterEach(async () => {
  provisioner.stop();
  await session?.kill();
  session = undefined;
  tmp.cleanup();
});

const command = (...args: string[]) =>
  [
    process.execPath,
    BATON,
    '--state-dir',
    path.join(tmp.dir, 'state'),
    'mesh',
    'rotate',
    '--provider',
    'pg-main',
    '--inventory',
    path.join(tmp.dir, 'mesh.yaml'),
    '--wait',
    '10',
    ...args,
  ]
    .map(shellQuote)
    .join(' ');

describe('baton mesh rotate in a real 80×24 terminal', () => {
  it('walks resolve → typed confirm → summary, and the summary stays on screen after q', async () => {
    session = await TmuxSession.start({ command: command(), cwd: tmp.dir, env: { NO_COLOR: '1' } });
    let screen = await session.waitFor('Type 2 (the number of credentials)', 'the confirm prompt');
    expect(screen).toContain('✓ db1');
    expect(screen).toContain('pg-main:web1-app: window from pg-main applying the new password for web1_app');
    for (const line of screen.split('\n')) expect([...line].length).toBeLessThanOrEqual(80);
    await session.type('2');
    await session.waitFor('> 2  (Enter rotates)', 'the typed count');
    await session.keys('Enter');
    await session.waitFor('Rotated 2 credentials:', 'the summary');
    await session.type('q');
    expect(await session.exitCode()).toBe(0);
    screen = await session.capture();
    expect(screen).toContain('Rotated 2 credentials (rotation');
    const secret = readFileSync(
      path.join(tmp.dir, 'machines/web1/var/lib/baton/mesh/consumes/pg-main/web1_app'),
      'utf8',
    );
    expect(secret).toHaveLength(43);
    expect(screen).not.toContain(secret);
  });

  it('a wrong typed count says what was expected and what was typed, and sends nothing', async () => {
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    session = await TmuxSession.start({ command: command(), cwd: tmp.dir, env: { NO_COLOR: '1' } });
    await session.waitFor('Type 2 (the number of credentials)', 'the confirm prompt');
    await session.type('3');
    await session.waitFor('> 3', 'the typed count');
    await session.keys('Enter');
    const screen = await session.waitFor('not accepted', 'the refusal');
    expect(screen.replace(/\s+/g, ' ')).toContain('Expected 2, you typed 3');
    // Waiting at its confirm, the rotation holds the provider's lock: its words are the only new file.
    expect(withoutLockHolder(snapshotDir(path.join(tmp.dir, 'machines')))).toEqual(before);
    await session.keys('C-u');
    await session.waitFor(
      (x) => /^>\s*$/m.test(x) && !x.includes('not accepted'),
      'the field cleared by Ctrl-U',
    );
    await session.keys('Escape');
    await session.waitFor('Cancelled before anything was generated', 'the cancel');
    await session.type('q');
    expect(await session.exitCode()).toBe(3);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it('Esc at the confirm cancels and never quits; q then leaves with exit 3 and nothing written', async () => {
    const before = snapshotDir(path.join(tmp.dir, 'machines'));
    session = await TmuxSession.start({ command: command(), cwd: tmp.dir, env: { NO_COLOR: '1' } });
    await session.waitFor('Type 2 (the number of credentials)', 'the confirm prompt');
    await session.keys('Escape');
    await session.waitFor('Cancelled before anything was generated', 'the cancel');
    await session.type('q');
    expect(await session.exitCode()).toBe(3);
    expect(snapshotDir(path.join(tmp.dir, 'machines'))).toEqual(before);
  });

  it('a journal that fails after prepare: every staged file is taken back, the screen names the journal, q exits 1', async () => {
    const machines = path.join(tmp.dir, 'machines');
    // Old credentials at both ends of both pairs: they must be exactly as they were afterwards.
    const old = [
      'db1/var/lib/baton/mesh/provides/pg-main/web1_app',
      'db1/var/lib/baton/mesh/provides/pg-main/web2_app',
      'web1/var/lib/baton/mesh/consumes/pg-main/web1_app',
      'web2/var/lib/baton/mesh/consumes/pg-main/web2_app',
    ].map((f) => path.join(machines, f));
    for (const file of old) {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      writeFileSync(file, `old ${path.basename(file)}\n`, { mode: 0o600 });
    }
    const state = path.join(tmp.dir, 'state');
    session = await TmuxSession.start({ command: command(), cwd: tmp.dir, env: { NO_COLOR: '1' } });
    await session.waitFor('Type 2 (the number of credentials)', 'the confirm prompt');
    await vi.waitFor(
      () => expect(readFileSync(path.join(state, JOURNAL_FILE), 'utf8')).toContain('"phase":"resolved"'),
      { timeout: 10_000 },
    );
    // The journal's directory becomes a file: the 'prepared' record after staging cannot be written.
    renameSync(state, `${state}.moved`);
    writeFileSync(state, 'not a directory\n');
    await session.type('2');
    await session.waitFor('> 2  (Enter rotates)', 'the typed count');
    await session.keys('Enter');
    const screen = await session.waitFor(
      (x) => x.includes('could not be written') && x.includes('Every staged file was removed'),
      'the journal failure',
    );
    expect(screen.replace(/\s+/g, ' ')).toContain(`Journal: ${path.join(state, JOURNAL_FILE)}`);
    expect(
      (readdirSync(machines, { recursive: true }) as string[]).filter((f) => f.endsWith('.next')),
    ).toEqual([]);
    for (const file of old) expect(readFileSync(file, 'utf8')).toBe(`old ${path.basename(file)}\n`);
    await session.type('q');
    expect(await session.exitCode()).toBe(1);
    expect((await session.capture()).replace(/\s+/g, ' ')).toContain('Then run the rotation again.');
  });
});
