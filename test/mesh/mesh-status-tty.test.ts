/**
 * `baton mesh status` in a real terminal: the resume command of a leftover pair shown whole at
 * 80×24 (it was cut to `baton mesh resume 2026120…`), and after live resizes exactly one
 * frame on screen — no second header, no stale "Reading holders…" line.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { assertBuilt } from '../helpers/run-baton.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';
import { shellQuote, TmuxSession } from '../helpers/tmux.js';
import { writeLocalMesh } from './mesh-fixture.js';

const BATON = path.resolve(import.meta.dirname, '../../bin/baton.js');

let tmp: { dir: string; cleanup: () => void };
let session: TmuxSession | undefined;
beforeEach(() => {
  assertBuilt();
  tmp = makeTempDir('baton-mesh-status-tty-');
  writeLocalMesh(tmp.dir);
});
afterEach(async () => {
  await session?.kill();
  session = undefined;
  tmp.cleanup();
});

/** The pane's lines with indentation and shell continuations joined: what a copy pastes as. */
const pasted = (screen: string) =>
  screen
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/ \\\n/g, ' ');

/** The pane once two captures 150 ms apart agree. */
async function settled(s: TmuxSession): Promise<string> {
  let last = await s.capture();
  await vi.waitFor(
    async () => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      const now = await s.capture();
      const same = now === last;
      last = now;
      if (!same) throw new Error('the pane is still changing');
    },
    { timeout: 5_000, interval: 10 },
  );
  return last;
}

describe('baton mesh status in a real terminal', () => {
  it('shows the whole resume command at 80×24, and one frame only after each resize', async () => {
    const flags = ['--state-dir', path.join(tmp.dir, 'state')];
    const inventory = ['--inventory', path.join(tmp.dir, 'mesh.yaml')];
    // baton killed (SIGKILL) between the provider commit and the consumer commit, with no
    // provisioner answering: the one leftover a rotation can leave, shown with the id to resume.
    const child = spawn(
      process.execPath,
      [BATON, ...flags, 'mesh', 'rotate', '--provider', 'pg-main', ...inventory, '--yes', '--wait', '60'],
      { stdio: 'ignore' },
    );
    const journal = path.join(tmp.dir, 'state', 'mesh-journal.jsonl');
    const committed = () =>
      existsSync(journal)
        ? readFileSync(journal, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line) as { id: string; phase: string })
            .find((r) => r.phase === 'committed')
        : undefined;
    await vi.waitFor(
      () => {
        if (!committed()) throw new Error('waiting for the provider commit');
      },
      { timeout: 20_000, interval: 20 },
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const resumeId = committed()!.id;
    expect(resumeId).toMatch(/^\d{8}T\d{6}Z-\w+$/);
    const command = [process.execPath, BATON, ...flags, 'mesh', 'status', ...inventory]
      .map(shellQuote)
      .join(' ');
    session = await TmuxSession.start({
      command,
      cwd: tmp.dir,
      env: { NO_COLOR: '1' },
      columns: 80,
      rows: 24,
    });
    const s = session;
    let screen = await s.waitFor('next: finish it', 'the leftover pair');
    expect(pasted(screen)).toContain(
      `baton --state-dir ${path.join(tmp.dir, 'state')} mesh resume ${resumeId} --inventory ${path.join(tmp.dir, 'mesh.yaml')}`,
    );
    expect(screen).not.toMatch(/resume \S*…/);

    for (const [columns, rows] of [
      [60, 20],
      [100, 30],
      [80, 24],
    ] as const) {
      await s.resize(columns, rows);
      await s.waitFor(
        (x) =>
          x.split('\n').every((line) => [...line].length <= columns) &&
          x.includes('q quit') &&
          x.includes('next:'),
        `the frame at ${columns}×${rows}`,
      );
      // Counted once the pane has stopped changing: a late redraw lands first.
      screen = await settled(s);
      expect(
        screen.match(/Mesh status — /g),
        `after resizing to ${columns}×${rows}:\n${screen}`,
      ).toHaveLength(1);
      expect(screen).not.toContain('Reading holders');
      expect(pasted(screen)).toContain(`mesh resume ${resumeId} --inventory`);
    }
    await s.type('q');
    expect(await s.exitCode()).toBe(3);
  }, 60_000);
});
