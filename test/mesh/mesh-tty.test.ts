import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTempDir, snapshotDir } from '../helpers/fs-snapshot.js';
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
  [process.execPath, BATON, '--state-dir', path.join(tmp.dir, 'state'), 'mesh', 'rotate', '--provider', 'pg-main', '--inventory', path.join(tmp.dir, 'mesh.yaml'), '--wait', '10', ...args]
    .map(shellQuote)
    .join(' ');

describe('baton mesh rotate in a real 80×24 terminal', () => {
  it('walks resolve → typed confirm → summary, and the summary stays on screen after q', async () => {
    session = await TmuxSession.start({ command: command(), cwd: tmp.dir, env: { NO_COLOR: '1' } });
    let screen = await session.waitFor('Type 2 (the number of credentials)', 'the confirm prompt');
    expect(screen).toContain('✓ db1');
    expect(screen).toContain('Window: from pg-main applying the new password for web1_app');
    for (const line of screen.split('\n')) expect([...line].length).toBeLessThanOrEqual(80);
    await session.type('2');
    await session.waitFor('> 2  (Enter rotates)', 'the typed count');
    await session.keys('Enter');
    screen = await session.waitFor('Rotated 2 credentials:', 'the summary');
    await session.type('q');
    expect(await session.exitCode()).toBe(0);
    screen = await session.capture();
    expect(screen).toContain('Rotated 2 credentials (rotation');
    const secret = readFileSync(path.join(tmp.dir, 'machines/web1/var/lib/baton/mesh/consumes/pg-main/web1_app'), 'utf8');
    expect(secret).toHaveLength(43);
    expect(screen).not.toContain(secret);
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
});
