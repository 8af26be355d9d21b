/**
 * Every screen at the smallest supported terminal (60×20) and after a resize: what the
 * operator acts on is inside the frame, no frame is taller or wider than the terminal, and
 * paths, ids and commands are whole. In-process renders at a given size; the real terminal
 * (scrollback, SIGWINCH) is test/e2e/drill-tmux.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FailoverApp } from '../../components/FailoverApp.js';
import { StatusApp } from '../../components/StatusApp.js';
import { MeshStatusApp } from '../../components/mesh-status/MeshStatusApp.js';
import { DrillTaskFrame } from '../../components/drill/DrillTaskFrame.js';
import { commandLines, commandSpans, layoutWithCommands, wrapWords } from '../../components/layout.js';
import { drillFlow, initialDrillState, type DrillState } from '../../src/app/drill/drill-flow.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';
import { useTerminalSize } from '../../components/hooks/use-columns.js';
import { Text } from 'ink';
import { utcStamp } from '../../src/authority/index.js';
import { secretDigest } from '../../src/mesh/digest.js';
import { journalHistory } from '../../src/mesh/journal-history.js';
import type { JournalRecord } from '../../src/mesh/journal.js';
import { leftoverOfReading, pairStatus, type PairStatus } from '../../src/mesh/mesh-status.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { suggester } from '../../src/suggest-command.js';
import { leftBehindB, makeHosts, type Hosts } from '../app/failover-hosts.js';
import { READS } from '../app/status-fixtures.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { KEY, linesFit, renderAt, type Rendered } from './render-at.js';

const AT = new Date('2026-11-30T10:31:02.000Z');
const mounted: Rendered[] = [];
afterEach(() => {
  for (const view of mounted.splice(0)) view.unmount();
});

const strip = (frame: string) => frame.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
/** Lines joined with their indentation and any shell continuation taken out: what a copy of them pastes as. */
const joined = (frame: string) =>
  frame
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/ \\\n/g, ' ')
    .replace(/\n/g, '');

/** Within the terminal: never wider, and never taller than its rows less the cursor's line. */
function expectWithin(frame: string, columns: number, rows: number) {
  expect(linesFit(frame, columns), `wider than ${columns}:\n${frame}`).toEqual([]);
  expect(frame.split('\n').length, `taller than ${rows} rows:\n${frame}`).toBeLessThanOrEqual(rows - 1);
}

/** The drill at step 3's last task (ctl-a's failover): the rail and task line above the view. */
function drillAtForce(): DrillState {
  const events = [{ type: 'ready' }, { type: 'enter', at: 1 }] as const;
  return events.reduce((state, event) => drillFlow(state, event).state, initialDrillState(3));
}

describe('at 60×20 under the drill rail', () => {
  let hosts: Hosts;
  afterEach(() => hosts.cleanup());

  it('the failover menu scrolls to the selection, and the force gate shows the marks, the field and what was typed', async () => {
    hosts = makeHosts();
    await leftBehindB(hosts);
    const b = hosts.ctx('b').stateDir;
    const view = renderAt(
      <DrillTaskFrame state={drillAtForce()} onWrongTurn={() => {}} onInterrupt={() => {}}>
        <FailoverApp ports={hosts.ports('b')} baton="baton" now={() => AT} onExit={() => {}} />
      </DrillTaskFrame>,
      60,
      20,
    );
    mounted.push(view);
    let frame = await view.waitFor(
      (f) => f.includes('Choose:') || f.includes('› Leave it as it is'),
      'the choices',
    );
    expectWithin(frame, 60, 20);
    expect(frame).toContain('baton drill');
    expect(frame).toContain('› Leave it as it is');
    await view.press(KEY.down);
    frame = await view.waitFor(
      (f) => f.includes('› Replace the local authority (force)'),
      'the selection scrolled into view',
    );
    expectWithin(frame, 60, 20);
    expect(frame.split('\n')[0]).toContain('baton drill');

    await view.press(KEY.enter);
    frame = await view.waitFor((f) => f.includes('type these'), 'the force gate');
    expectWithin(frame, 60, 20);
    expect(frame).toMatch(/^>/m);
    const local = /LOCAL\s+SHA256:(\S{8})/.exec(frame)?.[1];
    expect(local).toBeDefined();
    await view.press(local!);
    frame = await view.waitFor((f) => f.includes(`> ${local}`), 'the typed characters');
    expectWithin(frame, 60, 20);
    expect(frame).toContain('type these');
    expect(frame).toContain('[ Replace ] enabled');
    // The path ca/ goes to, whole: wrapped, never cut in the middle.
    await view.press('\u001b[6~');
    frame = await view.waitFor((f) => f.includes('moved to'), 'the paths below the field');
    expect(joined(frame)).toContain(`${b}/ca.superseded-${utcStamp(AT)}`.replace(/ /g, ''));
    expect(frame).not.toContain('…/');
  });
});

/** A view that says the rows it was given under the drill's frame. */
function RowsProbe() {
  const { rows } = useTerminalSize();
  return <Text>{`view rows ${rows}`}</Text>;
}

describe('the task line above a real view', () => {
  it('wraps the longest task whole at 60 columns (no `…`), and the view below is given the rows it leaves', async () => {
    const longest = DRILL_STEPS.flatMap((step) =>
      step.tasks.map((task, index) => ({ step: step.number, index, label: task.label })),
    ).reduce((a, b) => (b.label.length > a.label.length ? b : a));
    expect(`▸ ${longest.label}`.length).toBeGreaterThan(60);
    const opened = [{ type: 'ready' }, { type: 'enter', at: 1 }] as const;
    const state: DrillState = {
      ...opened.reduce((s, event) => drillFlow(s, event).state, initialDrillState(longest.step)),
      task: longest.index,
    };
    const view = renderAt(
      <DrillTaskFrame state={state} columns={60} onWrongTurn={() => {}} onInterrupt={() => {}}>
        <RowsProbe />
      </DrillTaskFrame>,
      60,
      20,
    );
    mounted.push(view);
    const frame = strip(await view.waitFor((f) => f.includes('view rows'), 'the view under the frame'));
    expectWithin(frame, 60, 20);
    const lines = frame.split('\n');
    const first = lines.findIndex((line) => line.startsWith('▸ '));
    const probe = lines.findIndex((line) => line.startsWith('view rows'));
    const task = lines.slice(first, probe);
    expect(task.length).toBeGreaterThan(1);
    expect(task.some((line) => /\S…\s*$/.test(line))).toBe(false);
    expect(task.map((line) => line.trim()).join(' ')).toBe(`▸ ${longest.label}`);
    // The rail's two lines and the task's own: what is left is the view's.
    expect(lines[probe]).toBe(`view rows ${20 - 2 - task.length}`);
  });

  const afterOneCheck = () =>
    drillFlow(
      drillFlow(drillFlow(drillAtForce(), { type: 'opened' }).state, { type: 'enter', at: 2 }).state,
      { type: 'task-finished' },
    ).state;

  it('says the last task passed its one check in words that count, and leaves it out where it would be cut', async () => {
    const state = drillFlow(afterOneCheck(), {
      type: 'checks-done',
      results: [{ label: 'ok', ok: true }],
      at: 3,
    }).state;
    const wide = renderAt(
      <DrillTaskFrame state={state} columns={120} onWrongTurn={() => {}} onInterrupt={() => {}}>
        <></>
      </DrillTaskFrame>,
      120,
      40,
    );
    mounted.push(wide);
    const frame = await wide.waitFor((f) => f.includes('▸ '), 'the task line');
    expect(frame).toContain('✓ the last task passed its check');
    expect(frame).not.toContain('1 checks');
    const narrow = renderAt(
      <DrillTaskFrame state={state} columns={60} onWrongTurn={() => {}} onInterrupt={() => {}}>
        <></>
      </DrillTaskFrame>,
      60,
      20,
    );
    mounted.push(narrow);
    const cut = await narrow.waitFor((f) => f.includes('▸ '), 'the task line');
    expect(cut).not.toMatch(/the last…|✓ the l/);
  });
});

describe('the status view at 60×20', () => {
  it('shows the whole read time, ? help over it, and Esc closes the help, then the view where it may', async () => {
    let code: number | undefined;
    const view = renderAt(
      <StatusApp
        read={async () => READS.adopt()}
        baton="baton"
        watchSeconds={3600}
        interactive
        escCloses
        onExit={(c) => (code = c)}
      />,
      60,
      20,
    );
    mounted.push(view);
    let frame = await view.waitFor((f) => f.includes('action needed'), 'the read');
    expectWithin(frame, 60, 20);
    expect(frame.split('\n')[0]).toMatch(/^baton status {2}read \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    expect(frame).toContain('? help');
    await view.press('?');
    frame = await view.waitFor((f) => f.includes('Keys on this screen'), 'the help');
    expectWithin(frame, 60, 20);
    expect(frame).toContain('read both sides again now');
    await view.press(KEY.escape);
    await view.waitFor(
      (f) => f.includes('action needed') && !f.includes('Keys on this screen'),
      'the help closed',
    );
    expect(code).toBeUndefined();
    await view.press(KEY.escape);
    await view.waitFor(() => code !== undefined, 'Esc to close the view');
    expect(code).toBe(3);
  });

  it('outside the drill Esc never quits', async () => {
    let code: number | undefined;
    const view = renderAt(
      <StatusApp
        read={async () => READS.adopt()}
        baton="baton"
        watchSeconds={3600}
        interactive
        onExit={(c) => (code = c)}
      />,
      60,
      20,
    );
    mounted.push(view);
    await view.waitFor((f) => f.includes('action needed'), 'the read');
    await view.press(KEY.escape);
    await view.press('r');
    await view.waitFor((f) => f.includes('action needed'), 'still open');
    expect(code).toBeUndefined();
  });
});

describe('mesh status', () => {
  const ID = '20261201T145100Z-4f3a9c';
  const NOW = Date.parse('2026-12-01T15:00:00Z');
  const d = (n: number) => secretDigest(`secret-${n}`);

  function staged(): PairStatus[] {
    const plan = planRotation(meshInventory(3), { by: 'all' });
    const records: JournalRecord[] = plan.pairs.map(
      (pair, i) =>
        ({
          id: ID,
          at: '2026-12-01T14:51:00Z',
          operator: 'op',
          phase: 'prepared',
          selector: 'all',
          holders: [],
          results: [],
          pairs: [{ ...pair, digest: d(2000 + i) }],
        }) as unknown as JournalRecord,
    );
    const history = journalHistory(records);
    return plan.pairs.map((pair, i) => {
      const reading = {
        provider: { read: true, live: d(i), next: d(2000 + i), liveModifiedMs: NOW },
        consumer: { read: true, live: d(i), next: undefined, liveModifiedMs: NOW },
        receipt: { role: pair.role, digest: d(i), applied_at: '' },
      } as const;
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

  it.each([
    [80, 24],
    [60, 20],
  ])('at %i×%i shows the whole resume command to copy, with the flags given', async (columns, rows) => {
    const statuses = staged();
    expect(statuses[0]!.resumeId).toBe(ID);
    const s = suggester({ stateDir: '/var/lib/baton/state' }, true);
    const inventory = { ...s, inventory: '/etc/baton/mesh-inventory.yaml' };
    const view = renderAt(
      <MeshStatusApp
        selectorText="every pair"
        machines={5}
        read={async () => statuses}
        color={false}
        suggester={inventory}
        onExit={() => {}}
      />,
      columns,
      rows,
    );
    mounted.push(view);
    const frame = strip(
      await view.waitFor((f) => strip(f).includes('next: finish it:'), 'the selected pair'),
    );
    expectWithin(frame, columns, rows);
    expect(joined(frame)).toContain(
      `baton --state-dir /var/lib/baton/state mesh resume ${ID} --inventory /etc/baton/mesh-inventory.yaml`,
    );
    expect(frame).not.toMatch(/resume 2026\S*…/);
  });
});

describe('text laid out for a narrow terminal', () => {
  it('wraps at words with no line opening on a space, and carries a long path on rather than cutting it', () => {
    const lines = wrapWords(
      'ctl-a minted the node-wire authority and published it to the S3 store; ctl-b has never held it.',
      60,
    );
    expect(lines).toEqual([
      'ctl-a minted the node-wire authority and published it to the',
      'S3 store; ctl-b has never held it.',
    ]);
    const path = '/tmp/baton-drill-QsgYFA/ctl-a/ca.superseded-20261201T145100Z';
    const wrapped = wrapWords(`${path} and its marker`, 30, 2);
    expect(wrapped.every((line) => line.length <= 30 && !line.startsWith('   '))).toBe(true);
    expect(
      wrapped
        .map((line) => line.trim())
        .join('')
        .replace(/andits/, ' and its '),
    ).toContain(path);
  });

  it('breaks a command only between arguments, each continued line ending in a backslash', () => {
    const command =
      "baton --state-dir '/srv/baton state' mesh resume 20261201T145100Z-4f3a --inventory /etc/baton/mesh.yaml";
    const lines = commandLines(command, 50);
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.slice(0, -1).every((line) => line.endsWith(' \\'))).toBe(true);
    expect(lines.every((line) => line.length <= 50)).toBe(true);
    expect(lines.join('\n').replace(/ \\\n\s*/g, ' ')).toBe(command);
    expect(commandLines('baton sync', 50)).toEqual(['baton sync']);
  });

  it('ends a command where a placeholder\'s note begins ("; <ETAG 8>: …"), so the note is never continued with a backslash', () => {
    const text =
      'Run baton --store s3://b/p sync --replace-unreadable --confirm <ETAG 8>; <ETAG 8>: the first 8 characters of the etag in the PUBLISHED panel';
    expect(commandSpans(text).map((span) => text.slice(span.start, span.end))).toEqual([
      'baton --store s3://b/p sync --replace-unreadable --confirm <ETAG 8>',
    ]);
    const lines = layoutWithCommands(text, 50);
    expect(lines.filter((line) => line.endsWith(' \\')).every((line) => !line.includes('characters'))).toBe(
      true,
    );
  });

  it('finds the commands in a sentence and keeps the prose around them', () => {
    const text = 'make worker1 reachable, then run baton mesh status --inventory /tmp/inventory.yaml again';
    expect(commandSpans(text).map((span) => text.slice(span.start, span.end))).toEqual([
      'baton mesh status --inventory /tmp/inventory.yaml',
    ]);
    const lines = layoutWithCommands(text, 40);
    expect(lines.every((line) => line.length <= 40)).toBe(true);
    expect(lines.join('\n').replace(/ \\\n\s*/g, ' ')).toContain(
      'baton mesh status --inventory /tmp/inventory.yaml',
    );
    // Only a command's continuation is indented; no prose line opens on a space.
    expect(lines.filter((line, i) => line.startsWith(' ') && !lines[i - 1]?.endsWith('\\'))).toEqual([]);
  });
});
