import { render } from 'ink-testing-library';
import { describe, expect, it, vi } from 'vitest';
import {
  drillFlow,
  initialDrillState,
  type DrillEvent,
  type DrillState,
} from '../../src/app/drill/drill-flow.js';
import { DRILL_STEPS } from '../../src/app/drill/scenario.js';
import { ColorContext } from '../../components/color-context.js';
import { DrillScreen } from '../../components/drill/DrillScreen.js';
import { DrillRoot } from '../../components/drill/DrillRoot.js';
import type { DrillIntent } from '../../components/drill/use-drill-keys.js';
import { DrillTaskFrame } from '../../components/drill/DrillTaskFrame.js';
import { Text, useInput } from 'ink';
import { useState } from 'react';
import { useTurnReport } from '../../components/hooks/use-turn-report.js';
import { passEveryTask } from '../helpers/drill-walk.js';

function walk(events: readonly DrillEvent[], first: 1 | 2 | 3 | 4 | 5 = 1): DrillState {
  return events.reduce((state, event) => drillFlow(state, event).state, initialDrillState(first));
}

const ready = (first: 1 | 2 | 3 | 4 | 5 = 1) =>
  walk([{ type: 'progress', text: 'starting S3 (s3rver on 127.0.0.1)…' }, { type: 'ready' }], first);

function frame(state: DrillState, columns: number, color = false): string {
  const { lastFrame, unmount } = render(
    <ColorContext.Provider value={color}>
      <DrillScreen state={state} columns={columns} />
    </ColorContext.Provider>,
  );
  const out = lastFrame() ?? '';
  unmount();
  return out;
}

function fitsIn(text: string, columns: number): void {
  for (const line of text.split('\n')) expect([...line].length, line).toBeLessThanOrEqual(columns);
}

describe('leaving the drill', () => {
  it('asks once, naming what is removed and the --step N that comes back, at 80 and 60 columns', () => {
    const asked = walk([{ type: 'progress', text: 'x' }, { type: 'ready' }, { type: 'quit' }], 3);
    for (const columns of [80, 60]) {
      const text = frame(asked, columns);
      fitsIn(text, columns);
      expect(text).toContain('Leave the drill?');
      expect(text).toContain('The sandbox is removed');
      expect(text).toMatch(/^\s*baton drill --step 3\s*$/m);
      expect(text).toContain('q leaves · Esc or Enter stays');
    }
    expect(frame(ready(3), 80)).not.toContain('Leave the drill?');
  });
});

/** A walk through every task of every step, each passing: the summary at the end. */
const completed = (wrongTurns: readonly string[] = []): DrillState =>
  passEveryTask(ready(), { checksMs: 65_000, wrongTurns });

describe('the drill screens', () => {
  it('start-up shows each part as it starts, the current one marked busy', () => {
    const state = walk([
      { type: 'progress', text: 'starting S3 (s3rver on 127.0.0.1)…' },
      { type: 'progress', text: 'starting PostgreSQL (embedded, scram-sha-256)…' },
    ]);
    const out = frame(state, 80);
    expect(out).toContain('✓ starting S3');
    expect(out).toContain('… starting PostgreSQL');
    fitsIn(out, 80);
  });

  it('a failed start-up shows the three-part message and says q quits', () => {
    const state = walk([
      { type: 'progress', text: 'starting PostgreSQL (embedded, scram-sha-256)…' },
      {
        type: 'setup-failed',
        lines: [
          "The drill's PostgreSQL could not start: Permission denied",
          'Where: /tmp/x',
          'Next: make $TMPDIR traversable',
        ],
      },
    ]);
    const out = frame(state, 80);
    expect(out).toContain('✗ starting PostgreSQL');
    expect(out).toContain('Permission denied');
    expect(out).toContain('Next: make $TMPDIR traversable');
    expect(out).toContain('q quits');
  });

  it.each([80, 120])(
    "a step's explanation, its tasks and the rail fit %i columns, in words without colour",
    (columns) => {
      const out = frame(ready(), columns);
      expect(out).toContain('baton drill  ▸1 ·2 ·3 ·4 ·5');
      expect(out).toContain('Step 1 of 5: status: ctl-a holds and has published; ctl-b is empty');
      expect(out.replace(/\s+/g, ' ')).toContain(
        "The status view compares this host's authority with the published one and changes nothing.",
      );
      expect(out).toContain('Read the status on ctl-a');
      expect(out).toContain('Enter begins the step');
      expect(out).not.toMatch(/\u001b\[/);
      fitsIn(out, columns);
    },
  );

  it('an action task says what Enter will do and the command it stands for', () => {
    const out = frame(walk([{ type: 'ready' }, { type: 'enter', at: 0 }, { type: 'opened' }], 3), 80);
    expect(out).toContain('▸ Press Enter to rotate the authority on ctl-b.');
    expect(out).toContain('the real night: baton ca rotate');
    expect(out).toContain('Enter: rotate the authority on ctl-b.');
  });

  it('a failed check names what must be true and what was found, and offers to try again', () => {
    const state = walk(
      [
        { type: 'ready' },
        { type: 'enter', at: 0 },
        { type: 'opened' },
        { type: 'task-finished' },
        {
          type: 'checks-done',
          at: 1,
          results: [{ label: 'ctl-b now holds a whole authority', ok: false, detail: 'ctl-b is fresh' }],
        },
      ],
      2,
    );
    const out = frame(state, 80);
    expect(out).toContain('✗ Not yet: On ctl-b, walk the failover and choose adopt.');
    expect(out).toContain('✗ ctl-b now holds a whole authority — ctl-b is fresh');
    expect(out).toContain('Enter tries this task again');
    fitsIn(out, 80);
  });

  it("? shows the step's explanation, the drill's keys and the rail's marks; Esc is named as never quitting", () => {
    const state = drillFlow(ready(), { type: 'help' }).state;
    const out = frame(state, 80);
    expect(out).toContain('Step 1: status');
    expect(out).toContain('close this (never quits)');
    expect(out).toContain('quit the drill; the sandbox is removed');
    expect(out).toContain('Rail: ✓ passed');
    fitsIn(out, 80);
  });

  it("after step 5's rotation the check screen shows mesh status with the checks, cut to 80×24", () => {
    let state = ready(5);
    let at = 0;
    const step = DRILL_STEPS[4]!;
    const meshStatus = [
      'Mesh status (--provider pg-main), read-only: digests only, no secret was read.',
      ...['web1-app', 'web2-app', 'worker1-jobs'].map(
        (c) =>
          `✓ applied       pg-main:${c} (role ${c.replace('-', '_')}, db1 → ${c.split('-')[0]}) rotated 1s ago; last rotation 20261130T175500Z-abc123 done`,
      ),
      '3 pairs: 3 applied.',
    ];
    state = drillFlow(state, { type: 'enter', at: (at += 1000) }).state;
    for (const [index, task] of step.tasks.entries()) {
      state = drillFlow(state, { type: 'opened' }).state;
      if (task.where.kind === 'action') state = drillFlow(state, { type: 'enter', at }).state;
      state = drillFlow(state, { type: 'task-finished' }).state;
      const last = index === step.tasks.length - 1;
      const results = Array.from({ length: 6 }, (_, i) => ({
        label: `check ${i} of the rotation`,
        ok: true,
      }));
      state = drillFlow(state, {
        type: 'checks-done',
        results,
        at: (at += 1000),
        ...(last ? { meshStatus } : {}),
      }).state;
      if (!last) state = drillFlow(state, { type: 'enter', at }).state;
    }
    expect(state.phase).toBe('step-passed');
    const out = frame(state, 80);
    expect(out).toContain('Step 5 passed every check');
    expect(out).toContain('$ baton mesh status (after the rotation)');
    expect(out).toContain('✓ applied       pg-main:worker1-jobs');
    expect(out).toContain('3 pairs: 3 applied.');
    fitsIn(out, 80);
    expect(out.split('\n').length).toBeLessThanOrEqual(24);
  });

  it("step 4's first task shows its own checks (the web1-app window) before the next task opens", () => {
    const state = walk(
      [
        { type: 'ready' },
        { type: 'enter', at: 0 },
        { type: 'opened' },
        { type: 'task-finished' },
        {
          type: 'checks-done',
          at: 1,
          results: [
            { label: 'the preview lists exactly db1 and web1', ok: true },
            {
              label:
                "web1-app's window was measured: 23 ms when new connections with the OLD password could fail",
              ok: true,
            },
          ],
        },
      ],
      4,
    );
    expect(state.phase).toBe('task-passed');
    const out = frame(state, 80);
    expect(out).toContain('✓ Task 1 of 2 passed every check: Preview and rotate web1-app');
    expect(out.replace(/\s+/g, ' ')).toContain("✓ web1-app's window was measured: 23 ms");
    expect(out).toContain('Next (Enter): now the same for web2-app, alternating: window none.');
    expect(out).toContain('Enter: next task · q quits');
    fitsIn(out, 80);
  });

  it('the summary shows time per step and every wrong turn, within 80×24', () => {
    const out = frame(completed(['Esc backed out in the failover on ctl-a']), 80);
    expect(out).toContain('Drill complete');
    // 65 s per task: steps 1 and 4 have two tasks, step 5 four (12 tasks, one wrong turn each).
    expect(out).toMatch(/step 1\s+2:10/);
    expect(out).toMatch(/step 4\s+2:10/);
    expect(out).toMatch(/step 5\s+4:20/);
    expect(out).toContain('Wrong turns (12):');
    expect(out).toContain('! step 5: Esc backed out in the failover on ctl-a');
    fitsIn(out, 80);
    expect(out.split('\n').length).toBeLessThanOrEqual(24);
  });

  it('a summary without wrong turns says so', () => {
    expect(frame(completed(), 80)).toContain('No wrong turns.');
  });
});

describe("the drill's keys", () => {
  async function press(keys: readonly string[]): Promise<DrillIntent[]> {
    const seen: DrillIntent[] = [];
    const { stdin, lastFrame, unmount } = render(
      <DrillRoot state={ready()} columns={80} onIntent={(intent) => seen.push(intent)} />,
    );
    await vi.waitFor(() => expect(lastFrame()).toContain('Enter begins the step'), { timeout: 10_000 });
    for (let i = 0; i < 3; i += 1) await new Promise((resolve) => setImmediate(resolve));
    for (const key of keys) {
      const before = seen.length;
      stdin.write(key);
      await vi.waitFor(() => expect(seen.length).toBe(before + 1), { timeout: 10_000 });
    }
    unmount();
    return seen;
  }

  it("Enter, ?, Esc and q become the drill's intents; Ctrl-C interrupts through the drill", async () => {
    expect(await press(['\r', '?', '\u001b', 'q', '\u0003'])).toEqual([
      'enter',
      'help',
      'escape',
      'quit',
      'interrupt',
    ]);
  });
});

/** A stand-in view that reports turns the way the real ones do: Esc closing its help is none. */
function ReportingView() {
  const report = useTurnReport();
  const [help, setHelp] = useState(false);
  useInput((input, key) => {
    if (input === '?') setHelp(true);
    else if (key.escape && help) setHelp(false);
    else if (key.escape) report({ kind: 'backed-out' });
    else if (key.return) report({ kind: 'refused-entry', typed: 'zzzzzzzz' });
  });
  return <Text>the real view{help ? ' (help)' : ''}</Text>;
}

describe('the frame around a real view', () => {
  /** Step 3's last task: the failover on ctl-a, where the force gate asks for a prefix. */
  const atForce = () =>
    walk(
      [
        { type: 'ready' },
        { type: 'enter', at: 0 },
        { type: 'opened' },
        { type: 'enter', at: 0 },
        { type: 'task-finished' },
        { type: 'checks-done', results: [], at: 1 },
        { type: 'enter', at: 1 },
        { type: 'opened' },
        { type: 'task-finished' },
        { type: 'checks-done', results: [], at: 2 },
        { type: 'enter', at: 2 },
        { type: 'opened' },
      ],
      3,
    );

  async function drive(keys: readonly string[]) {
    const wrong: string[] = [];
    let interrupted = false;
    const { stdin, lastFrame, unmount } = render(
      <DrillTaskFrame
        state={atForce()}
        columns={80}
        onWrongTurn={(what) => wrong.push(what)}
        onInterrupt={() => (interrupted = true)}
      >
        <ReportingView />
      </DrillTaskFrame>,
    );
    await vi.waitFor(() => expect(lastFrame()).toContain('the real view'), { timeout: 10_000 });
    // The frame is drawn; a few turns more and the input hook's effect is committed too.
    for (let i = 0; i < 3; i += 1) await new Promise((resolve) => setImmediate(resolve));
    for (const key of keys) {
      stdin.write(key);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const frameText = lastFrame() ?? '';
    unmount();
    return { wrong, interrupted, frameText };
  }

  it('shows the rail and the task above the view, and says the view has the keys', async () => {
    const { frameText } = await drive([]);
    expect(frameText).toContain("the view's keys apply · q closes it");
    expect(frameText).toContain('▸ ctl-a returns: walk its failover, read the refusal, then force.');
  });

  it('counts what the view reports as a back-out or a refused entry, and nothing for Esc that closed its help', async () => {
    const { wrong } = await drive(['?', '\u001b', '\u001b', 'x', '\r']);
    expect(wrong).toEqual([
      'Esc backed out of a confirm in the failover on ctl-a',
      'typed a wrong prefix "zzzzzzzz" at the force gate',
    ]);
  });

  it('Ctrl-C asks the drill to quit (the view alone would only close itself)', async () => {
    const { interrupted } = await drive(['\u0003']);
    expect(interrupted).toBe(true);
  });
});
