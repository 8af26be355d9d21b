/**
 * Several keys in ONE read (a laggy link, a loaded host, a paste): each view takes them as
 * those keys in order. Every write below is one `stdin.write`, and each test asserts what the
 * keys did — files on disk, the flow's state — not only the frame.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FailoverApp } from '../../components/FailoverApp.js';
import { DrillRoot } from '../../components/drill/DrillRoot.js';
import type { DrillIntent } from '../../components/drill/use-drill-keys.js';
import { drillFlow, initialDrillState } from '../../src/app/drill/drill-flow.js';
import { MeshStatusApp } from '../../components/mesh-status/MeshStatusApp.js';
import { RotationApp } from '../../components/rotation/RotationApp.js';
import { snapshotLocalAuthority, utcStamp } from '../../src/authority/index.js';
import { rotationFlow, startRotation, type RotationFlow } from '../../src/app/rotation-flow.js';
import { rotationRunner } from '../../src/app/rotation-run-effect.js';
import { planRotation } from '../../src/mesh/rotation-plan.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { fakeMesh, provisionerOn } from '../mesh/fake-transport.js';
import { meshInventory } from '../mesh/mesh-fixture.js';
import { DEPLOYMENT, leftBehindB, makeHosts, type Hosts } from '../app/failover-hosts.js';
import { KEY, renderAt, type Rendered } from './render-at.js';

const AT = new Date('2026-11-30T10:31:02.000Z');
const strip = (s: string) => s.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '');
const PASTE = (text: string) => `\u001b[200~${text}\u001b[201~`;
const swapCase = (s: string) =>
  [...s].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');

const mounted: Rendered[] = [];
afterEach(() => {
  for (const m of mounted.splice(0)) m.unmount();
});

async function fingerprintOf(stateDir: string): Promise<string | undefined> {
  const local = await snapshotLocalAuthority(stateDir, DEPLOYMENT);
  return local.state === 'whole' ? local.current.fingerprint : undefined;
}

describe('the failover walk, keys in one read', () => {
  let hosts: Hosts;
  beforeEach(() => {
    hosts = makeHosts();
  });
  afterEach(() => hosts.cleanup());

  function mount() {
    const exits: number[] = [];
    const view = renderAt(
      <FailoverApp
        ports={hosts.ports('b')}
        columns={80}
        baton="baton"
        now={() => AT}
        onExit={(code) => exits.push(code)}
      />,
      80,
    );
    mounted.push(view);
    return { view, exits };
  }

  it('`j⏎` opens the force gate, `<prefix>⏎` forces: ca/ is set aside and the host is in sync', async () => {
    await leftBehindB(hosts);
    const b = hosts.ctx('b').stateDir;
    const local = (await fingerprintOf(b))!;
    const oldKey = readFileSync(path.join(b, 'ca', 'ca.key'));
    const { view } = mount();
    await view.waitFor((f) => f.includes('› Leave it as it is'), 'the list, on the safe choice');
    await view.press('j\r');
    await view.waitFor((f) => f.includes('marked "type these"'), 'the force gate');
    await view.press(`${local.slice(7, 15)}\r`);
    await view.waitFor((f) => f.includes('Read again:') && f.includes('in sync'), 'the result');
    expect(readFileSync(path.join(b, `ca.superseded-${utcStamp(AT)}`, 'ca.key'))).toEqual(oldKey);
    expect(await fingerprintOf(b)).toBe(await fingerprintOf(hosts.ctx('a').stateDir));
  });

  it('keys after the Enter that opened the gate are dropped; a wrong case is refused by name; a paste types; Esc then Enter does not reopen the gate', async () => {
    await leftBehindB(hosts);
    const b = hosts.ctx('b').stateDir;
    const prefix = (await fingerprintOf(b))!.slice(7, 15);
    const before = snapshotDir(hosts.root);
    const { view, exits } = mount();
    await view.waitFor((f) => f.includes('› Leave it as it is'), 'the list');
    await view.press('jj');
    await view.waitFor(
      (f) => f.includes('› Replace the local authority'),
      'the cursor on force (the list has two entries: jj stops at the last)',
    );
    // Enter, then the prefix and Enter in the same read: the gate opens EMPTY, nothing is forced.
    await view.press(`\r${prefix}\r`);
    let frame = await view.waitFor((f) => f.includes('marked "type these"'), 'the force gate');
    expect(strip(frame)).toMatch(/^>\s*$/m);
    expect(frame).toContain('[ Replace ] disabled');

    await view.press(`${swapCase(prefix)}\r`);
    frame = await view.waitFor((f) => f.includes('not accepted'), 'the refusal');
    expect(strip(frame).replace(/\s+/g, ' ')).toContain(
      'same letters as the LOCAL fingerprint but not the same case',
    );
    expect(snapshotDir(hosts.root)).toEqual(before);

    // Ctrl-U clears; a bracketed paste types the prefix and does not submit.
    await view.press(`\u0015${PASTE(prefix)}`);
    await view.waitFor(
      (f) => f.includes(`> ${prefix}`) && f.includes('[ Replace ] enabled'),
      'the pasted prefix',
    );
    expect(snapshotDir(hosts.root)).toEqual(before);

    await view.press(KEY.escape);
    await view.waitFor((f) => f.includes('› Leave it as it is'), 'back on the safe choice');
    await view.press(KEY.enter);
    await view.waitFor((f) => f.includes('Left as it is'), 'Enter leaves; the gate stays shut');
    expect(snapshotDir(hosts.root)).toEqual(before);
    await view.press('q');
    await vi.waitFor(() => expect(exits[0]).toBe(3), { timeout: 10_000 });
  });
});

describe('the rotation gate, keys in one read', () => {
  const dirs: string[] = [];
  const flows: RotationFlow[] = [];
  afterEach(async () => {
    await Promise.all(flows.splice(0).map((f) => f.idle()));
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function mount() {
    const inv = meshInventory(2);
    const plan = planRotation(inv, { by: 'provider', name: 'pg-main' });
    const mesh = fakeMesh(
      inv.machines.map((m) => m.name),
      plan,
    );
    provisionerOn(mesh.machines.db1!);
    const journalDir = mkdtempSync(path.join(os.tmpdir(), 'baton-keys-'));
    dirs.push(journalDir);
    const flow = rotationFlow(
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
    flows.push(flow);
    const view = renderAt(<RotationApp flow={flow} columns={80} color={false} onExit={() => {}} />, 80);
    mounted.push(view);
    return { view, flow, mesh, count: String(plan.pairs.length) };
  }

  it('`<count>⏎` rotates once the count is checked; a wrong count in one read is refused and sends nothing', async () => {
    const { view, flow, mesh, count } = mount();
    await view.waitFor((f) => f.includes('Gate open'), 'the gate');
    await view.press(`9${count}\r`);
    await view.waitFor((f) => f.includes('not accepted'), 'the refused count');
    expect(flow.getState().step).toBe('confirming');
    expect(mesh.writes()).toBe(0);
    // A held Backspace (two DEL bytes), then the count and Enter: all one read.
    await view.press(`\u007f\u007f${count}\r`);
    await vi.waitFor(() => expect(flow.getState().step).toBe('done'), { timeout: 10_000 });
    expect(mesh.writes()).toBeGreaterThan(0);
  });

  it('a pasted count is typed, not submitted', async () => {
    const { view, flow, mesh, count } = mount();
    await view.waitFor((f) => f.includes('Gate open'), 'the gate');
    await view.press(PASTE(`${count}\r`));
    await view.waitFor((f) => f.includes(`> ${count}  (Enter rotates)`), 'the pasted count');
    const state = flow.getState();
    expect(state.step === 'confirming' && state.typed).toBe(count);
    expect(mesh.writes()).toBe(0);
  });
});

describe('the mesh status filter, keys in one read', () => {
  it('`/web1` opens the filter and types into it: q in the same read is text, not a quit', async () => {
    let code: number | undefined;
    const plan = planRotation(meshInventory(12), { by: 'all' });
    const view = renderAt(
      <MeshStatusApp
        selectorText="every pair"
        machines={14}
        read={async () => []}
        columns={80}
        rows={24}
        color={false}
        onExit={(c) => (code = c)}
      />,
      80,
    );
    mounted.push(view);
    expect(plan.pairs.length).toBeGreaterThan(0);
    await view.waitFor(
      (f) => strip(f).includes('0 pairs') || strip(f).includes('pairs'),
      'the first reading',
    );
    await view.press('/web1q');
    await view.waitFor((f) => strip(f).includes('filter: web1q'), 'the typed filter');
    expect(code).toBeUndefined();
  });
});

describe('the drill rail, keys in one read', () => {
  it('takes the keys up to the first Enter; the Enter after it (a double press) is dropped, the next read is taken', async () => {
    const seen: DrillIntent[] = [];
    const state = [{ type: 'progress', text: 'starting…' } as const, { type: 'ready' } as const].reduce(
      (s, e) => drillFlow(s, e).state,
      initialDrillState(1),
    );
    const view = renderAt(
      <DrillRoot state={state} columns={80} onIntent={(intent) => seen.push(intent)} />,
      80,
    );
    mounted.push(view);
    await view.waitFor((f) => f.includes('Enter begins the step'), 'the drill screen');
    await view.press('??\r\r?');
    expect(seen).toEqual(['help', 'help', 'enter']);
    await view.press('q');
    expect(seen).toEqual(['help', 'help', 'enter', 'quit']);
  });
});
