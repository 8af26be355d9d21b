/**
 * A suggested command on a screen wraps only between its arguments: a placeholder
 * like `<PREVIOUS 8>` is one argument, each broken line ends in ` \`, and the placeholder's note
 * ("<PREVIOUS 8>: the 8 characters after…") is on a line of its own, never the command's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { StatusScreen } from '../../components/StatusScreen.js';
import { FailoverResult } from '../../components/FailoverResult.js';
import { ColorContext } from '../../components/color-context.js';
import type { FailoverState } from '../../src/app/failover-flow.js';
import { FP_A, FP_OLD, local, published, report } from '../app/status-fixtures.js';
import { linesFit, renderAt, type Rendered } from './render-at.js';

const strip = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, '');

// A state dir long enough that the command cannot sit on one line at 60 columns.
const BATON = 'baton --state-dir /var/lib/baton/controllers/ctl-b/state';
const COMMAND = `${BATON} ca retire --confirm <PREVIOUS 8>`;

let view: Rendered | undefined;
afterEach(() => {
  view?.unmount();
  view = undefined;
});

const overlap = () => report(local.whole(FP_A, FP_OLD), published.present(FP_A, FP_OLD));

function statusFrame(columns: number): string {
  view = renderAt(
    <ColorContext.Provider value={false}>
      <StatusScreen
        state={{ step: 'showing', report: overlap(), refreshing: false }}
        columns={columns}
        baton={BATON}
        watchSeconds={5}
      />
    </ColorContext.Provider>,
    columns,
    60,
  );
  return strip(view.lastFrame());
}

function failoverFrame(columns: number): string {
  const reading = overlap();
  const state: Extract<FailoverState, { step: 'done' }> = {
    step: 'done',
    before: reading,
    action: 'leave',
    outcome: { kind: 'left', why: "Left as it is at the operator's choice." },
    after: reading,
    afterError: undefined,
  };
  view = renderAt(
    <ColorContext.Provider value={false}>
      <FailoverResult state={state} columns={columns} baton={BATON} />
    </ColorContext.Provider>,
    columns,
    60,
  );
  return strip(view.lastFrame());
}

/** The lines the retire command takes: its last (with the placeholder) and the continued ones before. */
function commandBlock(frame: string): string[] {
  const lines = frame.split('\n').map((line) => line.trimEnd());
  const end = lines.findIndex(
    (line) => line.endsWith('--confirm <PREVIOUS 8>') || line.endsWith(' <PREVIOUS 8>'),
  );
  expect(end, frame).toBeGreaterThanOrEqual(0);
  let start = end;
  while (start > 0 && lines[start - 1]!.endsWith(' \\')) start--;
  return lines.slice(start, end + 1);
}

describe.each([80, 60])('a suggested command at %i columns', (columns) => {
  it.each([
    ['status', statusFrame],
    ['failover result', failoverFrame],
  ] as const)('on the %s screen breaks only between arguments, the note apart', (_, draw) => {
    const frame = draw(columns);
    expect(linesFit(frame, columns), frame).toEqual([]);
    const block = commandBlock(frame);
    // Joined again as a shell joins continued lines, it is the command, every argument whole.
    const joined = block
      .join('\n')
      .replace(/ \\\n\s*/g, ' ')
      .slice(block[0]!.indexOf('baton'));
    expect(joined, frame).toBe(COMMAND);
    // No line of the command ends or begins inside an argument: the placeholder is on one line.
    expect(
      block.some((line) => line.includes('<PREVIOUS 8>')),
      frame,
    ).toBe(true);
    for (const line of block) expect(line, frame).not.toMatch(/<PREVIOUS$|^\s*8>/);
    // The note starts a line of its own, after the command, without the "; ".
    const lines = frame.split('\n').map((line) => line.trimEnd());
    const noteAt = lines.findIndex((line) => line.startsWith('<PREVIOUS 8>: the 8 characters'));
    expect(noteAt, frame).toBe(lines.indexOf(block.at(-1)!) + 1);
    expect(frame).not.toContain('; <PREVIOUS 8>');
    // A backticked name in the prose is never split across lines either.
    expect(frame, frame).not.toMatch(/`ca\s*\n\s*(show|rotate)`/);
    expect(frame).toContain('`ca show`');
  });
});
