import { afterEach, describe, expect, it } from 'vitest';
import { StatusApp } from '../../components/StatusApp.js';
import { READS } from '../app/status-fixtures.js';
import { linesFit, renderAt, type Rendered } from './render-at.js';

// The host left behind is the one an operator watches at 3 a.m. on an 80×24 console: what
// the published side is sealed with and whether the store enforces conditional writes must
// be on the first screen, not behind PgDn.

const mounted: Rendered[] = [];
afterEach(() => {
  for (const view of mounted.splice(0)) view.unmount();
});

describe('status --watch of a host left behind at 80×24', () => {
  it('shows sealed and cond. writes without scrolling, each panel titled on its rule', async () => {
    const view = renderAt(
      <StatusApp
        read={async () => READS.leftBehind()}
        baton="baton"
        watchSeconds={5}
        interactive
        onExit={() => {}}
      />,
      80,
      24,
    );
    mounted.push(view);
    const frame = await view.waitFor((f) => f.includes('PUBLISHED'), 'the read');
    expect(frame).toMatch(/^sealed {7}no$/m);
    expect(frame).toMatch(/^cond\. writes not checked: run baton store check$/m);
    expect(frame).not.toContain('PgDn');
    expect(frame).toMatch(/^── LOCAL {2}\/var\/lib\/baton\/d1\/ca ─+$/m);
    expect(frame).toMatch(/^── PUBLISHED {2}\S+ ─+$/m);
    expect(linesFit(frame, 80)).toEqual([]);
    expect(frame.split('\n').length).toBeLessThanOrEqual(24);
  });
});
