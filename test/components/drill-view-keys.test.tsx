import { afterEach, describe, expect, it } from 'vitest';
import { FailoverScreen } from '../../components/FailoverScreen.js';
import { StatusApp } from '../../components/StatusApp.js';
import type { FailoverState } from '../../src/app/failover-flow.js';
import { READS } from '../app/status-fixtures.js';
import { renderAt, type Rendered } from './render-at.js';

// Inside the drill, q closes the view it opened and the drill goes on: a hint saying "quit"
// there is a key that disagrees with its words. Outside the drill q quits, and says so.

const mounted: Rendered[] = [];
afterEach(() => {
  for (const view of mounted.splice(0)) view.unmount();
});

const flat = (frame: string) => frame.replace(/\s+/g, ' ');

function statusWatch(escCloses: boolean): Rendered {
  const view = renderAt(
    <StatusApp
      read={async () => READS.adopt()}
      baton="baton"
      watchSeconds={3600}
      interactive
      escCloses={escCloses}
      onExit={() => {}}
    />,
    80,
    24,
  );
  mounted.push(view);
  return view;
}

describe('q in a view the drill opened says close', () => {
  it.each([
    [true, 'q close', 'close this view (not while typing)', 'q quit'],
    [false, 'q quit', 'quit (not while typing)', 'q close'],
  ] as const)(
    'status --watch (escCloses %s): its help and footer',
    async (escCloses, footer, help, never) => {
      const view = statusWatch(escCloses);
      await view.waitFor((f) => f.includes('action needed'), 'the read');
      await view.press('?');
      const frame = flat(await view.waitFor((f) => f.includes('Keys on this screen'), 'the help'));
      expect(frame).toContain(`Esc or ? closes this help · ${footer}`);
      expect(frame).toContain(`q ${help}`);
      expect(frame).not.toContain(never);
    },
  );

  const done: FailoverState = {
    step: 'done',
    before: READS.inSync(),
    action: 'leave',
    outcome: { kind: 'left', why: "Left as it is at the operator's choice." },
    after: READS.inSync(),
    afterError: undefined,
  };

  it.each([
    [true, 'r read again · q close', 'close this view (not while typing)', 'q quit'],
    [false, 'r read again · q quit', 'quit (not while typing)', 'q close'],
  ] as const)('the failover result (closes %s): its footer and help', (closes, footer, help, never) => {
    const result = renderAt(
      <FailoverScreen
        state={done}
        columns={80}
        rows={24}
        baton="baton"
        help={false}
        onTyped={() => {}}
        onConfirm={() => {}}
        closes={closes}
      />,
      80,
    );
    mounted.push(result);
    expect(result.lastFrame()).toContain(footer);
    expect(result.lastFrame()).not.toContain(never);
    const overlay = renderAt(
      <FailoverScreen
        state={done}
        columns={80}
        rows={24}
        baton="baton"
        help
        onTyped={() => {}}
        onConfirm={() => {}}
        closes={closes}
      />,
      80,
    );
    mounted.push(overlay);
    expect(flat(overlay.lastFrame())).toContain(`q ${help}`);
    expect(overlay.lastFrame()).not.toContain(never);
  });
});
