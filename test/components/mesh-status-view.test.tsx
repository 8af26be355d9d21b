import { afterEach, describe, expect, it, vi } from 'vitest';
import { MeshStatusApp } from '../../components/mesh-status/MeshStatusApp.js';
import { meshStatusLayout, summaryLines, visibleRows } from '../../components/mesh-status/MeshStatusView.js';
import { lastRotationCell } from '../../components/mesh-status/MeshStatusTable.js';
import { initialMeshStatusView } from '../../src/app/mesh-status-view-state.js';
import { secretDigest, type SecretDigest } from '../../src/mesh/digest.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import {
  leftoverOfReading,
  meshStatusExitCode,
  PAIR_STATES,
  pairStatus,
  type EndReading,
  type PairReading,
  type PairStatus,
} from '../../src/mesh/mesh-status.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { suggester, type Suggester } from '../../src/suggest-command.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { KEY, linesFit, renderAt, type Rendered } from './render-at.js';

const mounted: Rendered[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) m.unmount();
});
const strip = (s: string) => s.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
const NOW = Date.parse('2026-11-30T12:00:00Z');
const d = (n: number) => secretDigest(`secret-${n}`);
const end = (live: SecretDigest | undefined, next?: SecretDigest): EndReading => ({
  read: true,
  live,
  next,
  liveModifiedMs: NOW - 86_400_000 * 3,
});

/** 31 pairs (15 web consumers of two providers, plus backup); every sixth in each state. */
function statuses(): PairStatus[] {
  const plan = planRotation(meshInventory(15), { by: 'all' });
  return plan.pairs.map((pair, i) => {
    const readings: PairReading[] = [
      {
        provider: end(d(i)),
        consumer: end(d(i)),
        receipt: { role: pair.role, digest: d(i), applied_at: '' },
      },
      { provider: end(d(i)), consumer: end(d(i)), receipt: undefined },
      {
        provider: end(d(i)),
        consumer: end(d(1000 + i)),
        receipt: { role: pair.role, digest: d(i), applied_at: '' },
      },
      {
        provider: end(d(i), d(2000 + i)),
        consumer: end(d(i)),
        receipt: { role: pair.role, digest: d(i), applied_at: '' },
      },
      {
        provider: { read: false, reason: 'ssh failed: No route to host' },
        consumer: end(d(i)),
        receipt: undefined,
      },
      {
        provider: end(d(i)),
        consumer: end(d(i)),
        receipt: {
          role: pair.role,
          digest: d(i),
          applied_at: '',
          database: { found: 'nologin', since: '2026-11-30T11:59:00.000Z' },
        },
      },
    ];
    const reading = readings[i % 6]!;
    const history = journalHistory([]);
    return pairStatus(
      pair,
      reading,
      history,
      NOW,
      undefined,
      undefined,
      leftoverOfReading(pair, reading, history),
    );
  });
}

function mount(columns = 80, rows = 24, suggester?: Suggester) {
  let code: number | undefined;
  const all = statuses();
  const view = renderAt(
    <MeshStatusApp
      selectorText="every pair"
      machines={17}
      read={async () => all}
      columns={columns}
      rows={rows}
      color={false}
      {...(suggester ? { suggester } : {})}
      onExit={(c) => (code = c)}
    />,
    columns,
  );
  mounted.push(view);
  return { view, exitCode: () => code, all };
}

describe('the mesh status table', () => {
  it("a rotation id is never cut in the middle: the cell keeps the outcome, the selected row's detail the whole id", () => {
    const id = '20261201T195012Z-1a2b3c';
    const row = { ...statuses()[0]!, lastRotation: { id, outcome: 'rolled-back' } };
    expect(lastRotationCell(row, 80)).toBe('rolled-back');
    expect(lastRotationCell(row, 200)).toBe(`rolled-back ${id}`);
    for (const columns of [60, 80]) {
      const { detail } = meshStatusLayout({ ...initialMeshStatusView, statuses: [row] }, columns, 24);
      expect(detail.join('\n')).toContain(`last rotation: rolled-back ${id}`);
    }
    const { detail: wide } = meshStatusLayout({ ...initialMeshStatusView, statuses: [row] }, 200, 24);
    expect(wide.join('\n')).not.toContain('last rotation:');
  });

  it('a summary that fits keeps one line and the table every row; a longer one wraps onto a second line, which the table gives up, and never a third', () => {
    expect(summaryLines('2 pairs: 2 applied.', 79)).toEqual(['2 pairs: 2 applied.']);
    expect(visibleRows(24, 1)).toBe(16);
    const long =
      '131 pairs: 25 unreachable, 25 drifted, 25 changed-in-db, 25 staged, 25 pending, 6 applied; 12 older than --max-age.';
    const wrapped = summaryLines(long, 79);
    expect(wrapped).toHaveLength(2);
    expect(wrapped.join(' ')).toBe(long);
    expect(wrapped.every((l) => l.length <= 79)).toBe(true);
    expect(visibleRows(24, 2)).toBe(15);
    const huge = summaryLines(long.repeat(3), 79);
    expect(huge).toHaveLength(2);
    expect(huge[1]!.endsWith('…')).toBe(true);
  });

  it('fits 80×24, one line per pair with its mark and word, worst first', async () => {
    const { view, all } = mount();
    const frame = strip(await view.waitFor((f) => strip(f).includes('31 pairs:'), 'the first reading'));
    expect(linesFit(frame, 80)).toEqual([]);
    expect(frame.split('\n').length).toBeLessThanOrEqual(24);
    const rows = frame.split('\n').filter((l) => /^(› | {2})[✓!✗…] /.test(l));
    // 24 rows less title, a two-line summary, header, the selected pair's three-line detail, the window line and the keys.
    expect(rows.length).toBe(14);
    const order = rows.map((r) =>
      PAIR_STATES.indexOf(r.slice(2).split(/\s+/)[1] as (typeof PAIR_STATES)[number]),
    );
    expect(order[0]).toBe(0);
    expect(order.every((rank, i) => rank >= 0 && (i === 0 || rank >= order[i - 1]!))).toBe(true);
    // States no pair is in are not named (app-behind here).
    const counts = PAIR_STATES.map((s) => [s, all.filter((x) => x.state === s).length] as const)
      .filter(([, n]) => n > 0)
      .map(([s, n]) => `${n} ${s}`)
      .join(', ');
    // With all six states at once the summary is longer than 80 columns: it wraps (never cut),
    // and the table gives up one row for it.
    const summary = frame
      .split('\n')
      .slice(1, 3)
      .map((l) => l.trim())
      .join(' ');
    expect(summary).toBe(`31 pairs: ${counts}.`);
    expect(frame).toContain('rows 1–14 of 31');
    expect(frame).toContain('3d 0h (mtime)');
  });

  it('a reading that breaks as a whole is shown as a failure (never stuck on "Reading"); r reads again, q then exits with that reading', async () => {
    let code: number | undefined;
    const all = statuses();
    let calls = 0;
    const read = async () => {
      calls += 1;
      if (calls === 1) throw new Error('the inventory changed while reading');
      return all;
    };
    const view = renderAt(
      <MeshStatusApp
        selectorText="every pair"
        machines={17}
        read={read}
        columns={80}
        rows={24}
        color={false}
        onExit={(c) => (code = c)}
      />,
      80,
    );
    mounted.push(view);
    const failed = strip(await view.waitFor((f) => strip(f).includes('Reading failed'), 'the failure'));
    expect(failed).toContain(
      '✗ Reading failed (r reads again, q quits): the inventory changed while reading',
    );
    expect(linesFit(failed, 80)).toEqual([]);
    await view.press('r');
    await view.waitFor((f) => strip(f).includes('31 pairs:'), 'the second reading');
    expect(calls).toBe(2);
    await view.press('q');
    await vi.waitFor(() => expect(code).toBe(meshStatusExitCode(all)), { timeout: 10_000 });
  });

  it('suggests next commands with the flags the operator gave', async () => {
    const flags = suggester({ stateDir: '/srv/baton state', inventory: '/etc/baton/mesh.yaml' }, true);
    const { view } = mount(160, 24, flags);
    // Worst first: the selected row is an unreachable pair, then a drifted one further down.
    let frame = strip(await view.waitFor((f) => strip(f).includes('31 pairs:'), 'the first reading'));
    expect(frame).toContain(
      "then run baton --state-dir '/srv/baton state' mesh status --inventory /etc/baton/mesh.yaml again",
    );
    await view.press('/');
    await view.press('drifted');
    await view.press(KEY.enter);
    frame = strip(
      await view.waitFor((f) => strip(f).includes('next: rotate it:'), 'a drifted pair selected'),
    );
    expect(frame).toMatch(
      /next: rotate it: baton --state-dir '\/srv\/baton state' mesh rotate --pair [a-z0-9-]+:[a-z0-9-]+ --inventory \/etc\/baton\/mesh\.yaml$/m,
    );
  });

  it('scrolls with the arrow keys, filters with /, shows help on ?, and Esc never quits', async () => {
    const { view, exitCode } = mount();
    await view.waitFor((f) => strip(f).includes('31 pairs:'), 'the first reading');
    for (let i = 0; i < 20; i++) await view.press(KEY.down);
    // The 21st row is selected and in the window (its height gives way to the selected pair's
    // wrapped detail), and the window says how many rows are hidden.
    const followed = (f: string) => {
      const m = /rows (\d+)–(\d+) of 31, (\d+) hidden/.exec(strip(f));
      return (
        m !== null &&
        Number(m[1]) <= 21 &&
        Number(m[2]) >= 21 &&
        Number(m[3]) === 31 - (Number(m[2]) - Number(m[1]) + 1)
      );
    };
    let frame = strip(await view.waitFor(followed, 'the window to follow the selection'));
    const selected = /^(\S+ \(\S+\)) \S+ → /m.exec(frame)?.[1];
    expect(selected).toBeDefined();
    // The selection is marked by a `›` column, not by inverse video alone (NO_COLOR keeps it).
    const marked = frame.split('\n').filter((line) => /^› [✓!✗…] /.test(line));
    expect(marked).toHaveLength(1);
    expect(marked[0]).toContain(selected!.split(' ')[0]!.slice(0, 20));
    await view.press('/');
    await view.waitFor((f) => strip(f).includes('filter: ▏ 31 of 31 match'), 'the filter field');
    await view.press('web12 ');
    await view.press('q'); // typed into the filter, never a quit
    await view.press('\u007f');
    frame = strip(
      await view.waitFor((f) => strip(f).includes('filter: web12 ▏ 2 of 31 match'), 'the filtered rows'),
    );
    expect(exitCode()).toBeUndefined();
    const rows = frame.split('\n').filter((l) => /^(› | {2})[✓!✗…] /.test(l));
    expect(rows.map((r) => r.includes('web12-app'))).toEqual([true, true]);
    await view.press(KEY.enter);
    await view.waitFor(
      (f) => strip(f).includes('filter "web12 ": 2 of 31 match (Esc clears)'),
      'Enter to end typing',
    );
    await view.press(KEY.escape);
    await view.waitFor((f) => strip(f).includes('rows 1–14 of 31'), 'Esc to clear the filter');
    await view.press('?');
    frame = strip(await view.waitFor((f) => strip(f).includes('Keys'), 'the help'));
    expect(frame).toContain('filter: provider, consumer, role, machine or state');
    expect(frame).toContain('Every pair by digest, worst first. This view only reads.');
    expect(linesFit(frame, 80)).toEqual([]);
    expect(frame.split('\n').length).toBeLessThanOrEqual(24);
    await view.press(KEY.escape);
    await view.waitFor(
      (f) => !strip(f).includes('Keys') && strip(f).includes('rows 1–14'),
      'Esc to close the help',
    );
    expect(exitCode()).toBeUndefined();
    await view.press('q');
    await view.waitFor(() => exitCode() !== undefined, 'q to quit');
    // An unreachable holder: the answer is incomplete.
    expect(exitCode()).toBe(1);
  });
  it('a row the table cuts with … is read in full with d or Enter, wrapped, and Esc goes back to the table (never quits)', async () => {
    const { view, exitCode, all } = mount();
    let frame = strip(await view.waitFor((f) => strip(f).includes('31 pairs:'), 'the first reading'));
    expect(frame).toContain('d row in full');
    const selected = frame.split('\n').find((line) => line.startsWith('› '))!;
    // At 80 columns the selected row's pair is cut to its column.
    expect(selected).toContain('…');
    const first = all.find(
      (s) => selected.includes(s.pair.key.slice(0, 12)) && s.state === selected.slice(4).split(' ')[0],
    )!;
    const whole = `pair (role): ${first.pair.key} (${first.pair.role})`;
    expect(frame).not.toContain(whole);
    await view.press('d');
    frame = strip(await view.waitFor((f) => strip(f).includes('in full (Esc back'), 'the row in full'));
    expect(frame).toContain(whole);
    expect(frame).toContain(`state: `);
    expect(frame).toMatch(/^age: /m);
    expect(frame).toMatch(/^last rotation: /m);
    expect(frame).toContain('Esc back');
    expect(frame.split('\n').filter((line) => /^(› | {2})[✓!✗…] /.test(line))).toEqual([]);
    expect(linesFit(frame, 80)).toEqual([]);
    expect(frame.split('\n').length).toBeLessThanOrEqual(24);
    await view.press(KEY.escape);
    frame = strip(await view.waitFor((f) => strip(f).includes('rows 1–14 of 31'), 'Esc back to the table'));
    expect(frame).not.toContain('in full (Esc back');
    expect(exitCode()).toBeUndefined();
    await view.press(KEY.enter);
    await view.waitFor((f) => strip(f).includes(whole), 'Enter opens the row in full too');
    await view.press(KEY.escape);
    await view.waitFor((f) => strip(f).includes('rows 1–14 of 31'), 'Esc back again');
    expect(exitCode()).toBeUndefined();
  });

  /** The table (NO_COLOR) with `row` first, worst-first selected, and five applied pairs below it. */
  const rowFirstAt = (row: PairStatus, columns: number, rows: number) => {
    const view = renderAt(
      <MeshStatusApp
        selectorText="every pair"
        machines={2}
        read={async () => [
          row,
          ...statuses()
            .filter((s) => s.state === 'applied')
            .slice(1, 6),
        ]}
        columns={columns}
        rows={rows}
        color={false}
        onExit={() => undefined}
      />,
      columns,
      rows,
    );
    mounted.push(view);
    return view;
  };

  it('sessions left open on the login the consumer left, and a revoke still armed, show under the selected row at 80×24 and 60×20 (NO_COLOR); d adds which steps were confirmed', async () => {
    const base = statuses()[0]!;
    expect(base.state).toBe('applied');
    const oldest = new Date(Date.now() - 9 * 3_600_000).toISOString();
    const row: PairStatus = {
      ...base,
      // The oldest, so worst-first selects it.
      ageMs: (base.ageMs ?? 0) + 86_400_000,
      logins: { live: 'web1_app_a', other: { login: 'web1_app_b', state: 'valid' } },
      app: {
        takes: 'not-known',
        detail: 'not known',
        newSessions: 'not-confirmed',
        leftOpen: { login: 'web1_app_b', open: 2, oldest },
      },
      armedRevoke: { login: 'web1_app_b', endSessions: true },
      confirmed: {
        file: 'confirmed',
        testLogin: 'confirmed',
        reload: 'not-configured',
        sessions: 'not-confirmed',
      },
    };
    for (const [columns, rows] of [
      [80, 24],
      [60, 20],
    ] as const) {
      const view = rowFirstAt(row, columns, rows);
      let frame = strip(await view.waitFor((f) => strip(f).includes('armed:'), `the detail at ${columns}`));
      expect(linesFit(frame, columns), `${columns}×${rows}`).toEqual([]);
      expect(frame.split('\n').length, `${columns}×${rows}`).toBeLessThanOrEqual(rows);
      const flat = frame.replace(/\s+/g, ' ');
      expect(flat).toContain('sessions: 2 still open on web1_app_b, the login its file left');
      expect(flat).toContain('(9 h ago)');
      expect(flat).toContain(
        "armed: the provisioner on db1 will refuse web1_app_b's old password and END its 2 open sessions (--end-sessions) when it next applies",
      );
      await view.press('d');
      frame = strip(await view.waitFor((f) => strip(f).includes('in full'), `the row in full at ${columns}`));
      expect(linesFit(frame, columns), `${columns}×${rows} in full`).toEqual([]);
      expect(frame.split('\n').length, `${columns}×${rows} in full`).toBeLessThanOrEqual(rows);
      const full = frame.replace(/\s+/g, ' ');
      // The row in full has the table's room: the armed request is never what gives way.
      expect(full).toContain('until then the old password may still work');
      // At 80 columns every mark fits; at 60×20 the marks give way, saying so, and the next step stays.
      if (columns === 80)
        expect(full).toContain('confirmed: ✓ file; ✓ test login; · reload none (no reload:)');
      else expect(full).toMatch(/confirmed: ✓ file|… more than fits: widen the terminal/);
    }
  });

  it('a revoke that never went live shows as "not revoked" under the selected row, with the rotate that revokes, at 80×24 and 60×20 (NO_COLOR)', async () => {
    const base = statuses()[0]!;
    const row: PairStatus = {
      ...base,
      ageMs: (base.ageMs ?? 0) + 86_400_000,
      logins: { live: 'web1_app_a', other: { login: 'web1_app_b', state: 'valid' } },
      lastRotation: { id: 'rot-cut', outcome: 'revoking' },
      revokeNotDone: { login: 'web1_app_b', staged: true, endSessions: false },
    };
    for (const [columns, rows] of [
      [80, 24],
      [60, 20],
    ] as const) {
      const view = rowFirstAt(row, columns, rows);
      await view.waitFor((f) => strip(f).includes('not revoked:'), `the detail at ${columns}`);
      await view.press('d');
      const frame = strip(
        await view.waitFor((f) => strip(f).includes('in full'), `the row in full at ${columns}`),
      );
      expect(linesFit(frame, columns), `${columns}×${rows}`).toEqual([]);
      expect(frame.split('\n').length, `${columns}×${rows}`).toBeLessThanOrEqual(rows);
      const full = frame.replace(/\s+/g, ' ');
      expect(full).toContain(
        'not revoked: the --revoke-previous of rotation rot-cut did not take effect: its fresh password never went live, so web1_app_b keeps its old password, which MAY STILL WORK',
      );
      // A command too long for the line is wrapped as a shell would take it (a backslash between words).
      expect(full.replace(/ \\ /g, ' ')).toContain(
        `baton mesh rotate --pair ${base.pair.provider}:${base.pair.consumer} --revoke-previous`,
      );
    }
  });
});
