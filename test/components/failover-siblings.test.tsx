/**
 * Siblings (this host and the published document each rotated the same parent): the decision
 * table allows three things — leave, replace this host's (force), or keep this host's rotation
 * over the published one (`sync --push --confirm <PUBLISHED 8>`). The walk offers all three;
 * keeping this host's has its own gate, bound to the PUBLISHED fingerprint's first 8 characters
 * after `SHA256:`, its consequences said before the field, and Esc lands on Leave.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FailoverApp } from '../../components/FailoverApp.js';
import { FailoverScreen } from '../../components/FailoverScreen.js';
import { snapshotLocalAuthority } from '../../src/authority/index.js';
import { offeredActions, type FailoverState } from '../../src/app/failover-flow.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { DEPLOYMENT, makeHosts, siblingsB, type Hosts } from '../app/failover-hosts.js';
import { FP_A, FP_B, FP_OLD, local, published, READS, report } from '../app/status-fixtures.js';
import { KEY, linesFit, renderAt, type Rendered } from './render-at.js';

const siblings = () => report(local.whole(FP_B, FP_OLD), published.present(FP_A, FP_OLD));
const flat = (frame: string) => frame.replace(/ \\\n\s*/g, ' ').replace(/\s+/g, ' ');
const PASTE = (text: string) => `\u001b[200~${text}\u001b[201~`;

async function fingerprintOf(stateDir: string): Promise<string> {
  const local = await snapshotLocalAuthority(stateDir, DEPLOYMENT);
  if (local.state !== 'whole') throw new Error(`expected a whole authority in ${stateDir}`);
  return local.current.fingerprint;
}

describe('failover with siblings: the choices', () => {
  it("offers leave, force and keeping this host's authority, the cursor on Leave", () => {
    const reading = siblings();
    expect(reading.verdict.kind === 'refuse' && reading.verdict.lineage.kind).toBe('siblings');
    expect(offeredActions(reading)).toEqual(['leave', 'force', 'push-over']);
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
      expect(frame).toContain('› Leave it as it is');
      expect(frame).toContain('Replace the local authority (force)');
      expect(frame).toContain("Keep this host's authority (push over the store's)");
      expect(flat(frame)).toContain('asks for the PUBLISHED 8 first.');
    }
  });

  it('is offered wherever a push over is bound (unrelated, a claimed left-behind), never to an ahead host (a plain publish) nor elsewhere', () => {
    const claimed = READS.leftBehind();
    expect(claimed.verdict).toMatchObject({ lineage: { kind: 'left-behind', proof: { kind: 'claimed' } } });
    for (const read of [READS.unrelated(), claimed]) expect(offeredActions(read)).toContain('push-over');
    for (const read of [READS.ahead, READS.adopt, READS.publish, READS.inSync, READS.unreachable])
      expect(offeredActions(read())).not.toContain('push-over');
  });
});

describe.each([60, 80])("keeping this host's authority at %i columns", (columns) => {
  let hosts: Hosts;
  let view: Rendered | undefined;
  let exitCode: number | undefined;
  beforeEach(() => {
    hosts = makeHosts();
    exitCode = undefined;
  });
  afterEach(() => {
    view?.unmount();
    view = undefined;
    hosts.cleanup();
  });
  const mount = () => {
    view = renderAt(
      <FailoverApp ports={hosts.ports('b')} columns={columns} baton="baton" onExit={(c) => (exitCode = c)} />,
      columns,
    );
    return view;
  };
  const storeFile = () => path.join(hosts.root, 'store', 'authority.json');

  it('a wrong code is refused naming what differs, the LOCAL one by name, a paste types and presses nothing; Esc lands on Leave; nothing is written', async () => {
    await siblingsB(hosts);
    const localFp = await fingerprintOf(hosts.ctx('b').stateDir);
    const publishedFp = await fingerprintOf(hosts.ctx('a').stateDir);
    const want = publishedFp.slice(7, 15);
    const before = snapshotDir(hosts.root);
    const v = mount();
    await v.waitFor((f) => f.includes('› Leave it as it is'), 'the list, on the safe choice');
    await v.press(KEY.down);
    await v.press(KEY.down);
    await v.waitFor((f) => f.includes("› Keep this host's authority"), 'the cursor on keeping this host');
    await v.press(KEY.enter);
    const gate = await v.waitFor((f) => f.includes('[ Publish ] disabled'), 'the push-over gate');
    expect(linesFit(gate, columns)).toEqual([]);
    expect(gate.split('\n').length).toBeLessThanOrEqual(24);
    expect(gate).toContain('[ Publish ] disabled');
    expect(gate).toContain(localFp);
    expect(gate).toContain(publishedFp);
    // The one to type is PUBLISHED, marked under its own 8 characters.
    const lines = gate.split('\n');
    const at = lines.findIndex((line) => line.includes(publishedFp));
    expect(lines[at + 1]).toMatch(/^type these\s+\^{8} replaced in the store/);
    expect(lines[at + 1]!.indexOf('^')).toBe(lines[at]!.indexOf(publishedFp) + 7);
    expect(gate).toContain('Esc back');

    // The consequences, below the field: PgDn shows them (the frame keeps the field in view).
    await v.press('\u001b[6~');
    const below = flat(await v.waitFor((f) => f.includes('sync --push'), 'the rest of the gate'));
    // A path longer than the column is broken inside it by the layout: compared without spaces.
    const solid = (text: string) => text.replace(/\s+/g, '');
    expect(solid(below)).toContain(
      solid(
        `Writes LOCAL to ${storeFile()} in place of PUBLISHED, only if the document is unchanged since this read`,
      ),
    );
    expect(solid(below)).toContain(
      solid(`Nothing on this host changes: ${path.join(hosts.ctx('b').stateDir, 'ca')} stays as it is.`),
    );
    expect(below).toContain(
      'Hosts that hold PUBLISHED are then refused by sync until each is forced onto LOCAL.',
    );
    expect(below).toContain('The same without a screen: baton sync --push --confirm <PUBLISHED 8>');

    // The LOCAL prefix (what the force gate asks for) is named as the wrong side.
    await v.press(localFp.slice(7, 15));
    await v.waitFor((f) => f.includes(`> ${localFp.slice(7, 15)}`), 'the LOCAL prefix typed');
    await v.press(KEY.enter);
    expect(flat(await v.waitFor((f) => f.includes('not accepted'), 'the refusal'))).toContain(
      'That is the LOCAL fingerprint. Type the PUBLISHED one',
    );
    // Eight characters with one wrong: the refusal says which. A digit, never a letter: for a
    // fingerprint with 'X' there, 'x' is the "same letters, another case" refusal (1 in 64 runs).
    const wrong = `${want.slice(0, 3)}${want[3] === '0' ? '1' : '0'}${want.slice(4)}`;
    await v.press('\u0015');
    await v.press(wrong);
    await v.waitFor((f) => f.includes(`> ${wrong}`), 'the wrong code typed');
    await v.press(KEY.enter);
    const refused = flat(await v.waitFor((f) => f.includes('not accepted'), 'the refusal of the wrong code'));
    expect(refused).toContain(
      `"${wrong}" does not match the PUBLISHED fingerprint: the right number of characters, but character 4 differs`,
    );
    expect(refused).toContain('[ Publish ] disabled');
    expect(snapshotDir(hosts.root)).toEqual(before);

    // A paste of the right value with a line break: the field holds it, nothing is pressed.
    await v.press('\u0015');
    await v.press(PASTE(`${want}\r`));
    const pasted = await v.waitFor((f) => f.includes(`> ${want}`), 'the pasted value in the field');
    expect(pasted).toContain('[ Publish ] enabled');
    expect(snapshotDir(hosts.root)).toEqual(before);

    // Esc backs out onto Leave, the safe choice; Enter there writes nothing.
    await v.press(KEY.escape);
    await v.waitFor((f) => f.includes('Choose:') && f.includes('› Leave it as it is'), 'back on Leave');
    expect(snapshotDir(hosts.root)).toEqual(before);
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('left as it is'), 'left');
    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(3), { timeout: 10_000 });
    expect(snapshotDir(hosts.root)).toEqual(before);
  });

  it("the right code publishes this host's authority over the store's and leaves this host as it was", async () => {
    await siblingsB(hosts);
    const b = hosts.ctx('b').stateDir;
    const localFp = await fingerprintOf(b);
    const publishedFp = await fingerprintOf(hosts.ctx('a').stateDir);
    const caBefore = snapshotDir(path.join(b, 'ca'));
    const v = mount();
    await v.waitFor((f) => f.includes('› Leave it as it is'), 'the list');
    await v.press('j');
    await v.press('j');
    await v.waitFor((f) => f.includes("› Keep this host's authority"), 'the cursor on keeping this host');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('[ Publish ] disabled'), 'the gate');
    await v.press(publishedFp.slice(7, 15));
    await v.waitFor((f) => f.includes('[ Publish ] enabled'), 'the gate open');
    await v.press(KEY.enter);
    const done = await v.waitFor((f) => f.includes('Read again:') && f.includes('in sync'), 'the result');
    expect(linesFit(done, columns)).toEqual([]);
    expect(flat(done)).toContain(`Published ${localFp} to the store.`);
    expect(readFileSync(storeFile(), 'utf8')).toContain(localFp);
    expect(snapshotDir(path.join(b, 'ca'))).toEqual(caBefore);
    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(0), { timeout: 10_000 });
  });
});
