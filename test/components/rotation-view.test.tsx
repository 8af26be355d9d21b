import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { render as renderLib } from 'ink-testing-library';
import { RotationApp } from '../../components/rotation/RotationApp.js';
import { RotationView } from '../../components/rotation/RotationView.js';
import {
  rotationFlow,
  startRotation,
  type RotationFlow,
  type RotationState,
} from '../../src/app/rotation-flow.js';
import { rotationRunner } from '../../src/app/rotation-run-effect.js';
import { emptyLog } from '../../src/app/rotation-log.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { waitBegun } from '../../src/mesh/receipt-wait-machine.js';
import { fakeMesh, provisionerOn } from '../mesh/fake-transport.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { KEY, linesFit, renderAt, type Rendered } from './render-at.js';

const dirs: string[] = [];
const mounted: Rendered[] = [];
const stores: RotationFlow[] = [];
afterEach(async () => {
  for (const m of mounted.splice(0)) m.unmount();
  // The last journal record may still be landing: let every effect finish before removing its dir.
  await Promise.all(stores.splice(0).map((s) => s.idle()));
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const strip = (s: string) => s.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');

function appFor(columns: number, consumers: number, unreachable?: string) {
  const inv = meshInventory(consumers);
  const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
  const mesh = fakeMesh(
    inv.machines.map((m) => m.name),
    plan,
  );
  if (unreachable)
    mesh.machines[unreachable]!.unreachable = 'ssh: connect to host web2.internal port 22: No route to host';
  provisionerOn(mesh.machines.db1!);
  const journalDir = mkdtempSync(path.join(os.tmpdir(), 'baton-view-'));
  dirs.push(journalDir);
  const store = rotationFlow(
    startRotation('20261130T000000Z-abc123', plan),
    rotationRunner({
      transportFor: mesh.transportFor,
      journalDir,
      operator: 't',
      resolve: { concurrency: 8 },
      concurrency: 8,
      waitMs: 2000,
      pollMs: 10,
    }),
  );
  stores.push(store);
  const exits: number[] = [];
  const element = (
    <RotationApp flow={store} columns={columns} color={false} onExit={(code) => exits.push(code)} />
  );
  return { element, mesh, exits, plan };
}

function mount(columns: number, consumers: number, unreachable?: string) {
  const { element, ...rest } = appFor(columns, consumers, unreachable);
  const view = renderAt(element, columns);
  mounted.push(view);
  return { view, ...rest };
}

function fits(frame: string, columns: number) {
  const plain = strip(frame);
  expect(linesFit(plain, columns)).toEqual([]);
  expect(plain.split('\n').length).toBeLessThanOrEqual(24);
}

describe.each([80, 120])('the rotation view at %i columns', (columns) => {
  it('d shows every holder in full where the table cuts STATUS with …; Esc goes back, Enter confirms nothing there', async () => {
    const { view, exits, mesh } = mount(columns, 3, 'web2');
    let frame = strip(await view.waitFor((f) => f.includes('Gate closed'), 'the closed gate'));
    const whole = 'ssh: connect to host web2.internal port 22: No route to host';
    expect(frame).toContain('d in full');
    // At 80 columns the table's row cuts the status.
    if (columns === 80) expect(frame).toMatch(/✗ web2 +ssh +consumes\/pg-main\/web2_app +ssh: connect.*…/);
    await view.press('d');
    frame = strip(
      await view.waitFor((f) => strip(f).includes('Every holder in full'), 'the holders in full'),
    );
    // The status whole, its words wrapped (never cut), for the machine that failed.
    expect(frame.replace(/\n\s*/g, ' ')).toContain(
      `✗ web2 via ssh, receives consumes/pg-main/web2_app: ${whole}`,
    );
    fits(frame, columns);
    await view.press(KEY.enter);
    frame = strip(await view.waitFor((f) => !strip(f).includes('Every holder in full'), 'Enter closes it'));
    expect(frame).toContain('Gate closed');
    await view.press('d');
    await view.waitFor((f) => strip(f).includes('Every holder in full'), 'the holders in full again');
    await view.press(KEY.escape);
    frame = strip(await view.waitFor((f) => strip(f).includes('Gate closed'), 'Esc back'));
    expect(frame).not.toContain('Every holder in full');
    expect(exits).toEqual([]);
    expect(mesh.writes()).toBe(0);
  });

  it('fills the holder table, opens the gate, takes the typed count and shows what changed where', async () => {
    const { view, mesh, exits, plan } = mount(columns, 30);
    const n = String(plan.pairs.length);
    let frame = await view.waitFor((f) => f.includes('Gate open'), 'the gate');
    fits(frame, columns);
    expect(frame).toContain(`--provider pg-main: ${n} credentials on 31 machines`);
    // db1's deliveries are wider than the cell: its row continues on a second line, whole.
    expect(frame).toMatch(/✓ db1 +ssh +provides\/pg-main \(31 roles\), .*resolved\n {18}\S/);
    expect(frame).toContain('backup');
    // The page is counted in lines: the two db1 takes leave room for 5 more holders in 7.
    expect(frame).toContain('25 more hidden · rows 1–6 of 31');
    expect(frame).toContain('pg-main:web1-app: window from pg-main applying the new password');
    expect(
      strip(frame)
        .replace(/ \\\n\s*/g, ' ')
        .replace(/\s+/g, ' '),
    ).toMatch(/…and \d+ more pairs \(\d+ with a window\), each listed by baton mesh plan --provider pg-main/);
    expect(frame).toContain(`Type ${n} (the number of credentials)`);

    await view.press('j');
    await view.press(KEY.down);
    frame = await view.waitFor((f) => f.includes('rows 3–9 of 31'), 'scrolling down two rows');
    expect(frame).toContain('24 more hidden');
    expect(frame).not.toMatch(/✓ db1 /);

    // q is not a digit and does nothing while typing; Enter with the wrong count says why and sends nothing.
    await view.press('q');
    await view.press('9');
    await view.press('9');
    await view.press(KEY.enter);
    frame = await view.waitFor((f) => f.includes('> 99') && f.includes('not accepted'), 'the refused 99');
    expect(strip(frame).replace(/\s+/g, ' ')).toContain(`Expected ${n}, you typed 99`);
    fits(frame, columns);
    expect(mesh.writes()).toBe(0);
    expect(exits).toEqual([]);
    // Two DEL bytes in one read (a held Backspace over SSH) erase two digits, and the reason goes.
    await view.press('\u007f\u007f');
    frame = await view.waitFor((f) => /^> *$/m.test(strip(f)), 'erased');
    expect(frame).not.toContain('not accepted');
    for (const digit of n) await view.press(digit);
    await view.waitFor((f) => f.includes(`> ${n}  (Enter rotates)`), 'the full count');
    await view.press(KEY.enter);
    frame = await view.waitFor((f) => f.includes(`Rotated ${n} credentials:`), 'the summary');
    expect(frame).toMatch(/window ≤ \d+ ms/);
    fits(frame, columns);
    expect(frame).toContain(`prepared ${plan.holders.reduce((a, h) => a + h.receives.length, 0)}/`);
    expect(frame).toMatch(/✓ web3 +ssh +consumes\/pg-main\/web3_app +replaced/);
    expect(mesh.writes()).toBeGreaterThan(0);
    await view.press('q');
    await view.waitFor(() => exits.length === 1, 'the exit');
    expect(exits).toEqual([0]);
  });

  it('shows the closed gate naming the unresolved machine; Esc does not quit, q quits with 4', async () => {
    const { view, mesh, exits } = mount(columns, 3, 'web2');
    const frame = await view.waitFor((f) => f.includes('Gate closed'), 'the closed gate');
    fits(frame, columns);
    expect(frame).toContain('Gate closed: 1 of 4 machines could not be resolved.');
    expect(frame).toContain('Nothing was generated and nothing was sent');
    expect(frame).toMatch(/✗ web2 +ssh +consumes\/pg-main\/web2_app +ssh: connect to host/);
    // Esc changes nothing here; the help that ? opens after it shows it was handled.
    await view.press(KEY.escape);
    await view.press('?');
    await view.waitFor(
      (f) => f.includes('Esc or ? closes this help.'),
      'the help (so the Esc before it was handled)',
    );
    expect(exits).toEqual([]);
    await view.press('?');
    await view.waitFor(
      (f) => f.includes('Gate closed') && !f.includes('Esc or ? closes this help.'),
      'the gate again',
    );
    await view.press('q');
    await view.waitFor(() => exits.length === 1, 'the exit');
    expect(exits).toEqual([4]);
    expect(mesh.writes()).toBe(0);
  });
});

describe('the rotation view at 60 columns', () => {
  it('wraps a RECEIVES cell that does not fit, between the names of its path, and cuts none', async () => {
    const { view, plan } = mount(60, 3);
    const frame = strip(await view.waitFor((f) => f.includes('Gate open'), 'the gate'));
    fits(frame, 60);
    const lines = frame.split('\n');
    const header = lines.findIndex((line) => line.includes('RECEIVES'));
    const table = lines
      .slice(
        header + 1,
        lines.findIndex((line) => line.includes('Gate open')),
      )
      .filter((line) => line.trim() !== '');
    expect(table.filter((line) => /\S…\s*$/.test(line))).toEqual([]);
    // web1's delivery, too wide for its cell, continues on the next line under RECEIVES.
    const row = table.findIndex((line) => /^✓ web1 +ssh +consumes\/pg-main\/ /.test(line));
    expect(row, frame).toBeGreaterThanOrEqual(0);
    const column = lines[header]!.indexOf('RECEIVES');
    expect(table[row + 1]!.indexOf('web1_app')).toBe(column);
    expect(table[row + 1]!.trim()).toBe('web1_app');
    // The holders shown are shown whole (db1's three lines among them), within the page's 7 lines.
    expect(table.join('\n')).toMatch(
      /provides\/pg-main \(4 +resolved\n +roles\), consumes\/\n +pg-main\/backup\n/,
    );
    expect(table.join('\n')).toContain('web2_app');
    expect(table.at(-1)).toBe(
      `  ${plan.holders.length - 3} more hidden · rows 1–3 of ${plan.holders.length} · j/k or ↑/↓ to scroll`,
    );
  });
});

describe('the rotation view', () => {
  it('Esc at the confirm cancels: nothing generated, nothing sent, exit 3 on q', async () => {
    const { view, mesh, exits } = mount(80, 2);
    await view.waitFor((f) => f.includes('Gate open'), 'the gate');
    await view.press(KEY.escape);
    await view.waitFor((f) => f.includes('Cancelled before anything was generated'), 'the cancel');
    await view.press('q');
    await view.waitFor(() => exits.length === 1, 'the exit');
    expect(exits).toEqual([3]);
    expect(mesh.writes()).toBe(0);
    for (const m of Object.values(mesh.machines)) expect(m.calls.every((c) => c === 'resolve')).toBe(true);
  });

  it('? shows the keys and Esc closes them without cancelling the rotation behind', async () => {
    const { view, mesh, exits, plan } = mount(80, 2);
    await view.waitFor((f) => f.includes('Gate open'), 'the gate');
    await view.press('?');
    const help = await view.waitFor((f) => f.includes('Keys on this screen'), 'the help');
    fits(help, 80);
    // The count gate's own keys, not the failover's (no r, no "move").
    expect(help).toContain('cancel: nothing is generated (never quits)');
    expect(help).toContain('type the number of credentials');
    expect(help).not.toContain('read again');
    await view.press(KEY.escape);
    const back = await view.waitFor(
      (f) => f.includes('Gate open') && !f.includes('Keys on this screen'),
      'the gate again, the help gone',
    );
    expect(back).toContain(`Type ${plan.pairs.length} (the number of credentials)`);
    expect(back).not.toContain('Cancelled');
    expect(exits).toEqual([]);
    expect(mesh.writes()).toBe(0);
  });

  it('batches hundreds of resolution updates into a few frames', async () => {
    // ink-testing-library keeps every frame written (its stdout is 100 columns).
    const { stdout, lastFrame, unmount } = renderLib(appFor(100, 300).element);
    await vi.waitFor(
      () => {
        if (!lastFrame()?.includes('Gate open')) throw new Error('waiting for the gate');
      },
      { timeout: 10_000 },
    );
    unmount();
    expect(stdout.frames.length).toBeLessThan(40);
  });
});

describe('the rotation view after a failure', () => {
  const inv = meshInventory(12);
  const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
  const resolutions = Object.fromEntries(
    plan.holders.map((h) => [h.machine, { status: 'resolved' as const }]),
  );
  const base = { id: 'rot-9', plan, resolutions };

  it.each([80, 120])(
    'at %i columns, an interrupted commit says which files are live, which are staged, and the resume command',
    async (columns) => {
      const state: RotationState = {
        ...base,
        step: 'commit-failed',
        digests: {},
        committed: plan.holders[0]!.receives.map((d) => `db1\0${d.path}`),
        failures: [{ machine: 'web3', reason: 'ssh failed: Connection reset by peer' }],
        applied: [],
        windows: {},
      };
      const view = renderAt(
        <RotationView state={state} columns={columns} offset={0} color={false} tick={0} />,
        columns,
      );
      mounted.push(view);
      const frame = await view.waitFor((f) => f.includes('Commit interrupted'), 'the failure');
      fits(frame, columns);
      expect(frame).toMatch(/✓ db1 +ssh +provides\/pg-main \(13 roles\).* replaced/);
      expect(frame).toMatch(/· web1 +ssh +consumes\/pg-main\/web1_app +still staged \(1\)/);
      expect(frame).toMatch(/✗ web3 +ssh +consumes\/pg-main\/web3_app +ssh failed: Connection reset/);
      expect(frame).toContain('Next: fix the machine, then run: baton mesh resume rot-9');
    },
  );

  it('the resume command the view prints is the one the command built, with its flags, wrapped and never cut', async () => {
    const state: RotationState = {
      ...base,
      step: 'commit-failed',
      digests: {},
      committed: [],
      failures: [{ machine: 'web3', reason: 'ssh failed: Connection reset by peer' }],
      applied: [],
      windows: {},
    };
    const resume = 'baton --state-dir /srv/baton/state mesh resume rot-9 --inventory /etc/baton/mesh.yaml';
    const view = renderAt(
      <RotationView state={state} columns={80} offset={0} color={false} tick={0} resumeCommand={resume} />,
      80,
    );
    mounted.push(view);
    const frame = await view.waitFor((f) => f.includes('Commit interrupted'), 'the failure');
    fits(frame, 80);
    // Too long for one line: broken only between arguments, each continued line ending in
    // ` \`, so the lines pasted into a shell are the one command.
    const lines = frame.split('\n').map((l) => l.trimEnd());
    const first = lines.findIndex((l) => l.includes('baton --state-dir'));
    expect(lines[first]).toMatch(/ \\$/);
    expect(
      lines
        .slice(first)
        .join('\n')
        .replace(/ \\\n\s*/g, ' '),
    ).toContain(resume);
    expect(frame.replace(/ \\\n\s*/g, ' ').replace(/\s+/g, ' ')).toContain(
      `Next: fix the machine, then run: ${resume}`,
    );
  });

  it('a journal that failed after prepare: the view names the journal, says every staged file was removed, and what to do next', async () => {
    const journal = {
      what: 'The rotation journal could not be written (EACCES).',
      where: '/var/lib/baton/mesh-journal.jsonl',
      next: 'Set journal_dir in baton.yaml to a writable directory, or pass --state-dir.',
    };
    const before: RotationState = {
      ...base,
      step: 'committing',
      digests: {},
      committed: emptyLog(),
      wait: waitBegun(base.plan.pairs, {}),
    };
    const unstaging: RotationState = { ...base, step: 'unstaging', phase: 'prepared', journal, before };
    const busy = renderAt(
      <RotationView state={unstaging} columns={80} offset={0} color={false} tick={0} />,
      80,
    );
    mounted.push(busy);
    const removing = await busy.waitFor((f) => f.includes('removing every staged file'), 'the taking back');
    fits(removing, 80);
    expect(removing).toContain('removing staged files… · Ctrl-C interrupts');
    const state: RotationState = {
      ...base,
      step: 'journal-failed',
      phase: 'prepared',
      journal,
      before,
      files: 'unstaged',
      unstageFailures: [],
    };
    const view = renderAt(<RotationView state={state} columns={80} offset={0} color={false} tick={0} />, 80);
    mounted.push(view);
    const frame = await view.waitFor((f) => f.includes('could not be written'), 'the failure');
    fits(frame, 80);
    const text = frame.replace(/\s+/g, ' ');
    expect(text).toContain('✗ The rotation journal could not be written (EACCES).');
    expect(text).toContain('Journal: /var/lib/baton/mesh-journal.jsonl');
    expect(text).toContain(
      'Every staged file was removed: nothing took effect, the old credentials keep working.',
    );
    expect(text).toContain(
      'Next: Set journal_dir in baton.yaml to a writable directory, or pass --state-dir. Then run the rotation again.',
    );
    expect(frame).toMatch(/· web1 +ssh +consumes\/pg-main\/web1_app +staged files removed/);
  });

  it('a failed prepare says nothing took effect and that every staged file was removed', async () => {
    const state: RotationState = {
      ...base,
      step: 'prepare-failed',
      failures: [{ machine: 'web2', reason: 'staging failed: ENOSPC' }],
      unstageFailures: [],
    };
    const view = renderAt(<RotationView state={state} columns={80} offset={0} color={false} tick={0} />, 80);
    mounted.push(view);
    const frame = await view.waitFor((f) => f.includes('Prepare failed'), 'the failure');
    fits(frame, 80);
    expect(frame).toContain('Prepare failed: nothing took effect, the old credentials keep working.');
    expect(frame).toContain('web2: staging failed: ENOSPC');
    expect(frame).toContain('Every staged file was removed.');
  });
});

describe('the rotation view with --revoke-previous', () => {
  it.each([1, 12])(
    'the gate says what will be revoked, and still fits 80×24 (%i consumers)',
    async (consumers) => {
      const inv = meshInventory(consumers);
      const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
      const resolutions = Object.fromEntries(
        plan.holders.map((h) => [h.machine, { status: 'resolved' as const }]),
      );
      const state: RotationState = { id: 'rot-r', plan, resolutions, step: 'confirming', typed: '' };
      const view = renderAt(
        <RotationView
          state={state}
          columns={80}
          offset={0}
          color={false}
          tick={0}
          revoke={{ endSessions: false }}
        />,
        80,
      );
      mounted.push(view);
      const frame = await view.waitFor((f) => f.includes('Gate open'), 'the gate');
      fits(frame, 80);
      expect(strip(frame).replace(/\s+/g, ' ')).toContain(
        'Revoke: no pair of this selection alternates, so nothing is revoked.',
      );
      expect(frame).toContain('Type ');
    },
  );
});
