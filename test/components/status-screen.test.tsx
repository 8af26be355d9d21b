import { afterEach, describe, expect, it, vi } from 'vitest';

// Colour escapes only appear when chalk thinks the terminal has colour; decide before Ink loads.
vi.hoisted(() => {
  process.env.FORCE_COLOR = '1';
});

import { StatusScreen } from '../../components/StatusScreen.js';
import { StatusApp } from '../../components/StatusApp.js';
import { FailoverScreen } from '../../components/FailoverScreen.js';
import { failover, initialFailover, type FailoverState } from '../../src/app/failover-flow.js';
import { ColorContext } from '../../components/color-context.js';
import { statusExitCode, type StatusReport } from '../../src/app/status-report.js';
import { BatonError } from '../../src/errors.js';
import { FP_A, FP_B, FP_OLD, READS } from '../app/status-fixtures.js';
import { linesFit, renderAt, type Rendered } from './render-at.js';

const COLOUR = /\u001b\[(3[0-7]|9[0-7]|38;)/;
const strip = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
});

function show(report: StatusReport, columns: number, color = true): string {
  view = renderAt(
    <ColorContext.Provider value={color}>
      <StatusScreen
        state={{ step: 'showing', report, refreshing: false }}
        columns={columns}
        baton="baton"
        watchSeconds={5}
      />
    </ColorContext.Provider>,
    columns,
  );
  return view.lastFrame();
}

/** The row of the frame that holds `text`, and the column it starts at. */
function locate(frame: string, text: string): { row: number; col: number } {
  const lines = strip(frame).split('\n');
  const row = lines.findIndex((line) => line.includes(text));
  return { row, col: row < 0 ? -1 : lines[row]!.indexOf(text) };
}

describe.each([80, 120])('the status screen at %i columns', (columns) => {
  it.each(Object.keys(READS) as (keyof typeof READS)[])('fits the terminal for the "%s" read', (name) => {
    const frame = strip(show(READS[name](), columns));
    expect(linesFit(frame, columns), frame).toEqual([]);
    if (columns === 80) expect(frame.split('\n').length, frame).toBeLessThanOrEqual(24);
  });

  it('shows both fingerprints in full and marks the characters that differ', () => {
    const frame = strip(show(READS.unrelated(), columns));
    expect(frame).toContain(FP_B);
    expect(frame).toContain(FP_A);
    // The caret line under each fingerprint points exactly at the differing characters.
    const lines = frame.split('\n');
    const at = locate(frame, FP_B);
    const carets = lines[at.row + 1]!;
    const marked = [...carets].flatMap((c, i) =>
      c === '^' && i >= at.col && i < at.col + FP_B.length ? [i - at.col] : [],
    );
    const differing = [...FP_B].flatMap((c, i) => (c !== FP_A[i] ? [i] : []));
    expect(marked).toEqual(differing);
  });

  it('lays LOCAL and PUBLISHED side by side from 100 columns and stacks them below', () => {
    const frame = show(READS.inSync(), columns);
    const local = locate(frame, 'LOCAL');
    const published = locate(frame, 'PUBLISHED');
    if (columns >= 100) {
      expect(published.row).toBe(local.row);
      expect(published.col).toBeGreaterThan(local.col);
    } else {
      expect(published.row).toBeGreaterThan(local.row);
    }
  });

  it('says the verdict in words with its mark, and the next step', () => {
    const frame = strip(show(READS.leftBehind(), columns)).replace(/\s+/g, ' ');
    expect(frame).toContain('✗ refused');
    expect(frame).toContain("claims to replace this host's (by a rotation) — NOT PROVED");
    expect(frame).toContain('Next: baton failover');
    expect(frame).toContain(FP_OLD);
    const synced = strip(show(READS.inSync(), columns)).replace(/\s+/g, ' ');
    expect(synced).toContain('✓ in sync');
    expect(synced).toContain('enforced (checked 2026-11-30 09:45 UTC)');
  });

  it('shows the rotation overlap with its previous fingerprint, and a sealed document', () => {
    const frame = strip(show(READS.ahead(), columns)).replace(/\s+/g, ' ');
    // The time `--json` gives as overlap_since (side by side the sentence wraps inside its panel).
    expect(frame).toContain('since 2026-11-30 09:00 UTC (the NotBefore,');
    expect(frame).toContain('backdated 1 h');
    // Ahead is this host's own rotation, not yet pushed: an action, with the push as the next step.
    expect(frame).toContain('! not published yet');
    expect(frame).not.toContain('✗ refused');
    expect(frame).toContain('sync --push');
    const sealed = strip(show(READS.sealed(), columns)).replace(/\s+/g, ' ');
    expect(sealed).toContain('sealed yes; this host has no seal key');
    expect(sealed).toContain('unknown (sealed; no key to open it)');
  });

  it('carries its meaning in words without colour (NO_COLOR), and colours only on top', () => {
    const plain = show(READS.leftBehind(), columns, false);
    expect(plain).not.toMatch(COLOUR);
    expect(plain).toContain('✗ refused');
    expect(plain).toContain('^');
    view?.unmount();
    const coloured = show(READS.leftBehind(), columns, true);
    expect(coloured).toMatch(COLOUR);
  });
});

describe('the status app', () => {
  it('reads once and exits with the status code when not watching', async () => {
    let code: number | undefined;
    view = renderAt(
      <StatusApp
        read={async () => READS.adopt()}
        columns={80}
        baton="baton"
        watchSeconds={undefined}
        interactive
        onExit={(c) => (code = c)}
      />,
      80,
    );
    await vi.waitFor(() => expect(code).toBe(3), { timeout: 10_000 });
    expect(view.lastFrame()).toContain('action needed');
  });

  it('reads again on r under --watch, and q quits with the code of the last read', async () => {
    let code: number | undefined;
    const reads = [READS.adopt(), READS.inSync(), READS.adopt()];
    let calls = 0;
    const read = vi.fn(async () => reads[Math.min(calls++, reads.length - 1)]!);
    view = renderAt(
      <StatusApp
        read={read}
        columns={80}
        baton="baton"
        watchSeconds={3600}
        interactive
        onExit={(c) => (code = c)}
      />,
      80,
    );
    await view.waitFor((f) => f.includes('action needed'), 'the first read');
    await view.press('r');
    await view.waitFor((f) => f.includes('in sync'), 'the second read');
    expect(read).toHaveBeenCalledTimes(2);
    await view.press('\u001b');
    // Esc never quits: the r after it still reads, and its different answer shows (keys are
    // handled in order, so this frame comes after Esc was handled).
    await view.press('r');
    await view.waitFor(
      (f) => f.includes('action needed') && !f.includes('in sync'),
      'the third read, after Esc',
    );
    expect(read).toHaveBeenCalledTimes(3);
    expect(code).toBeUndefined();
    await view.press('q');
    await vi.waitFor(() => expect(code).toBe(statusExitCode(READS.adopt())), { timeout: 10_000 });
    expect(code).not.toBe(statusExitCode(READS.inSync()));
  });

  it('shows a read that failed as its three parts, never a stack trace', async () => {
    view = renderAt(
      <StatusApp
        read={async () => {
          throw new Error('EIO: i/o error');
        }}
        columns={80}
        baton="baton"
        watchSeconds={3600}
        interactive
        onExit={() => {}}
      />,
      80,
    );
    const frame = await view.waitFor((f) => f.includes('failed'), 'the failure');
    expect(frame).toContain('EIO: i/o error');
    expect(frame).toContain('Next: Press r to read again');
    expect(frame).not.toMatch(/\n\s+at /);
  });
});

describe('the failover screens without colour', () => {
  it('carry every state in words and marks, with no colour escape', () => {
    const at = new Date('2026-11-30T10:31:02Z');
    const steps: FailoverState[] = [];
    let state = failover(initialFailover.state, { type: 'read', reading: READS.leftBehind() }).state;
    steps.push(state);
    state = failover(failover(state, { type: 'move', by: 1 }).state, { type: 'select', at }).state;
    steps.push(state);
    const expected = ['✗ refused', '[ Replace ] disabled'];
    steps.forEach((step, i) => {
      for (const color of [false, true]) {
        view?.unmount();
        view = renderAt(
          <ColorContext.Provider value={color}>
            <FailoverScreen
              state={step}
              columns={80}
              baton="baton"
              help={false}
              onTyped={() => {}}
              onConfirm={() => {}}
            />
          </ColorContext.Provider>,
          80,
        );
        const frame = view.lastFrame();
        expect(strip(frame)).toContain(expected[i]);
        if (!color) expect(frame).not.toMatch(COLOUR);
        else expect(frame).toMatch(COLOUR);
      }
    });
  });
});

describe('the failover choice at 80×24', () => {
  it.each(Object.keys(READS) as (keyof typeof READS)[])(
    'fits for the "%s" read, lock busy or not',
    (name) => {
      for (const busy of [false, true]) {
        const reading = busy
          ? {
              ...READS[name](),
              lock: {
                state: 'busy' as const,
                error: new BatonError('lock-busy', {
                  what: 'The authority lock is held by another baton (or another operation in this one).',
                  where: '/var/lib/baton/d1/ca.lock',
                }),
              },
            }
          : READS[name]();
        const state = failover(initialFailover.state, { type: 'read', reading }).state;
        view?.unmount();
        view = renderAt(
          <FailoverScreen
            state={state}
            columns={80}
            baton="baton"
            help={false}
            onTyped={() => {}}
            onConfirm={() => {}}
          />,
          80,
        );
        const frame = strip(view.lastFrame());
        expect(linesFit(frame, 80), frame).toEqual([]);
        expect(frame.split('\n').length, frame).toBeLessThanOrEqual(24);
      }
    },
  );
});

describe('the hanging indent of a marked line', () => {
  it('wraps at word boundaries with no leading space, and splits a word longer than the width', async () => {
    const { wrapWords } = await import('../../components/MarkedLine.js');
    expect(wrapWords('one two three four', 9)).toEqual(['one two', 'three', 'four']);
    expect(wrapWords('a /very/long/path/name b', 6)).toEqual(['a', '/very/', 'long/p', 'ath/na', 'me b']);
    expect(wrapWords('', 10)).toEqual(['']);
    for (const line of wrapWords(
      'The local and published authorities differ. This host was left behind by a rotation.',
      20,
    )) {
      expect(line.length).toBeLessThanOrEqual(20);
      expect(line.startsWith(' ')).toBe(false);
    }
  });
});
