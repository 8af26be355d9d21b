/**
 * Siblings (this host and the published document each rotated the same parent): the decision
 * table allows three things — leave, replace this host's (force), or keep this host's rotation
 * over the published one (`sync --push --confirm <PUBLISHED 8>`). The walk offers the first
 * two and names the third with its bound value; no other verdict names it.
 */
import { describe, expect, it } from 'vitest';
import { FailoverScreen } from '../../components/FailoverScreen.js';
import { byCommandChoices } from '../../src/app/failover-actions.js';
import { offeredActions, type FailoverState } from '../../src/app/failover-flow.js';
import { FP_A, FP_B, FP_OLD, local, published, READS, report } from '../app/status-fixtures.js';
import { linesFit, renderAt } from './render-at.js';

const siblings = () => report(local.whole(FP_B, FP_OLD), published.present(FP_A, FP_OLD));

describe('failover with siblings', () => {
  it("offers leave and force, and names keeping this host's rotation with its bound value", () => {
    const reading = siblings();
    expect(reading.verdict.kind === 'refuse' && reading.verdict.lineage.kind).toBe('siblings');
    const state: FailoverState = { step: 'deciding', reading, actions: offeredActions(reading), cursor: 0 };
    for (const columns of [60, 80]) {
      const view = renderAt(
        <FailoverScreen
          state={state}
          columns={columns}
          rows={60}
          baton="baton --deployment d1"
          help={false}
          onTyped={() => {}}
          onConfirm={() => {}}
        />,
        columns,
        60,
      );
      const frame = view.lastFrame();
      view.unmount();
      expect(linesFit(frame, columns)).toEqual([]);
      const flat = frame.replace(/ \\\n\s*/g, ' ').replace(/\s+/g, ' ');
      expect(flat).toContain('Leave it as it is');
      expect(flat).toContain('Replace the local authority (force)');
      expect(flat).toContain(
        `Or keep this host's rotation (${FP_B}) and replace the published one, by command: baton --deployment d1 sync --push --confirm <PUBLISHED 8>`,
      );
      expect(flat).toMatch(
        /<PUBLISHED 8> ?; <PUBLISHED 8>: the 8 characters after "SHA256:" of the PUBLISHED fingerprint/,
      );
    }
  });

  it('no other verdict names it', () => {
    for (const read of Object.values(READS)) expect(byCommandChoices(read(), 'baton')).toEqual([]);
    expect(byCommandChoices(siblings(), 'baton')).toHaveLength(1);
  });
});
