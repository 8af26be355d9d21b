import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FailoverApp } from '../../components/FailoverApp.js';
import { snapshotLocalAuthority, utcStamp, withAuthorityLock } from '../../src/authority/index.js';
import { BatonError } from '../../src/errors.js';
import type { FailoverPorts } from '../../src/app/failover-run-effect.js';
import { failoverPorts } from '../../src/operations/failover-ports.js';
import { firstController } from '../../src/share/actions.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import {
  DEPLOYMENT,
  leftBehindB,
  makeHosts,
  publishedByA,
  rotateAndPublishA,
  type Hosts,
} from '../app/failover-hosts.js';
import { FP_A, READS } from '../app/status-fixtures.js';
import { KEY, linesFit, renderAt, type Rendered } from './render-at.js';

const AT = new Date('2026-11-30T10:31:02.000Z');

async function fingerprintOf(stateDir: string): Promise<string | undefined> {
  const local = await snapshotLocalAuthority(stateDir, DEPLOYMENT);
  return local.state === 'whole' ? local.current.fingerprint : undefined;
}

/** A frame's words with line wraps and padding folded, for sentences that wrap at 80. */
function flat(frame: string): string {
  return frame.replace(/\s+/g, ' ');
}

function expectFits(frame: string, columns: number) {
  expect(linesFit(frame, columns), `lines wider than ${columns}:\n${frame}`).toEqual([]);
  if (columns <= 80)
    expect(frame.split('\n').length, `taller than 24 rows:\n${frame}`).toBeLessThanOrEqual(24);
}

describe.each([80, 120])('the failover walk at %i columns', (columns) => {
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

  const mount = (ports: FailoverPorts) => {
    view = renderAt(
      <FailoverApp
        ports={ports}
        columns={columns}
        baton="baton"
        now={() => AT}
        onExit={(code) => (exitCode = code)}
      />,
      columns,
    );
    return view;
  };

  it('adopts on a fresh host only after select and confirm, Esc backing out first without a write', async () => {
    await publishedByA(hosts);
    const b = hosts.ctx('b').stateDir;
    const v = mount(hosts.ports('b'));
    const deciding = await v.waitFor((f) => f.includes('Adopt the published authority'), 'the action list');
    expectFits(deciding, columns);
    expect(deciding).toContain('action needed');
    expect(deciding).toContain('Leave it as it is');
    expect(deciding).not.toContain('force');

    await v.press(KEY.enter);
    const confirm = await v.waitFor((f) => f.includes('Confirm: Adopt'), 'the confirm screen');
    expectFits(confirm, columns);
    expect(confirm).toContain('Nothing has been written yet.');
    expect(existsSync(path.join(b, 'ca'))).toBe(false);

    await v.press(KEY.escape);
    // Back lands on the safe choice (Leave), not on the Adopt just backed out of.
    await v.waitFor((f) => f.includes('Choose:') && f.includes('› Leave it as it is'), 'back on Leave');
    expect(existsSync(path.join(b, 'ca'))).toBe(false);

    await v.press(KEY.up);
    await v.waitFor((f) => f.includes('› Adopt the published authority'), 'up onto Adopt');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Adopt'), 'the confirm screen again');
    await v.press(KEY.enter);
    const done = await v.waitFor(
      (f) => f.includes('Read again:') && f.includes('in sync'),
      'the result, read again',
    );
    expectFits(done, columns);
    expect(done).toContain('Installed the published authority');
    expect(await fingerprintOf(b)).toBe(await fingerprintOf(hosts.ctx('a').stateDir));

    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(0), { timeout: 10_000 });
  });

  it('makes a fresh host the first controller when nothing is published, then publishes from a whole one', async () => {
    const first = mount(hosts.ports('a'));
    const offer = await first.waitFor(
      (f) => f.includes('Become the first controller'),
      'the first-controller offer',
    );
    expectFits(offer, columns);
    expect(flat(offer)).toContain('publishes it create-only');
    // Minting is never the default: the cursor starts on "leave", and the confirm asks for the deployment id.
    expect(offer).toContain('› Leave it as it is');
    await first.press(KEY.up);
    await first.waitFor((f) => f.includes('› Become the first controller'), 'the cursor on minting');
    await first.press(KEY.enter);
    const confirm = await first.waitFor(
      (f) => f.includes('Confirm: Become the first controller'),
      'the confirm',
    );
    expect(flat(confirm)).toContain('first 2 characters of the deployment id');
    // The gate names where it publishes and never prints the answer it asks for.
    expect(flat(confirm)).toContain('Publishes to:');
    expect(flat(confirm)).toContain('not shown here');
    expect(flat(confirm)).not.toContain('(d1');
    await first.press(KEY.enter);
    const refused = await first.waitFor((f) => f.includes('not accepted'), 'the refusal of a bare Enter');
    expect(flat(refused)).toContain('Type the first 2 characters of the deployment id first.');
    expect(await fingerprintOf(hosts.ctx('a').stateDir)).toBeUndefined();
    await first.press('d1');
    await first.waitFor((f) => f.includes('> d1'), 'the typed id');
    await first.press(KEY.enter);
    const done = await first.waitFor((f) => f.includes('Read again:') && f.includes('in sync'), 'the result');
    expect(flat(done)).toContain('First controller: minted');
    const minted = await fingerprintOf(hosts.ctx('a').stateDir);
    expect(minted).toBeDefined();
    first.unmount();

    // c holds a whole authority and its store is empty (the document removed behind its back):
    // publish is what the table offers.
    mkdirSync(path.join(hosts.root, 'c-parent', 'store'), { recursive: true, mode: 0o700 });
    const c = { ...hosts.ctx('c'), store: new DirectoryStore(path.join(hosts.root, 'c-parent', 'store')) };
    await firstController(c);
    await rm(path.join(hosts.root, 'c-parent', 'store', 'authority.json'));
    view = renderAt(
      <FailoverApp
        ports={failoverPorts(c, `file://${path.join(hosts.root, 'c-parent', 'store')}`, undefined)}
        columns={columns}
        baton="baton"
        onExit={(code) => (exitCode = code)}
      />,
      columns,
    );
    const v = view;
    await v.waitFor((f) => f.includes('Publish this host'), 'the publish offer');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Publish'), 'the confirm');
    await v.press(KEY.enter);
    const published = await v.waitFor(
      (f) => f.includes('Read again:') && f.includes('in sync'),
      'the result',
    );
    expectFits(published, columns);
    expect(published).toContain('Published');
    expect(existsSync(path.join(hosts.root, 'c-parent', 'store', 'authority.json'))).toBe(true);
  });

  it('keeps the force gate disabled for a wrong prefix and leaves the disk untouched on Esc', async () => {
    await leftBehindB(hosts);
    const b = hosts.ctx('b').stateDir;
    const localFp = (await fingerprintOf(b))!;
    const publishedFp = (await fingerprintOf(hosts.ctx('a').stateDir))!;
    const before = snapshotDir(hosts.root);

    // A wrong prefix confirmed with Enter once drove a render loop that React reported on the
    // console ("Maximum update depth exceeded") while the frame still looked right.
    const consoleErrors = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const v = mount(hosts.ports('b'));
    const deciding = await v.waitFor(
      (f) => f.includes('Replace the local authority (force)'),
      'the action list',
    );
    expectFits(deciding, columns);
    expect(flat(deciding)).toContain('left behind by a rotation');
    expect(deciding).not.toContain('Adopt');

    await v.press(KEY.down);
    await v.waitFor((f) => f.includes('› Replace the local authority'), 'the cursor on force');
    await v.press(KEY.enter);
    const gate = await v.waitFor((f) => f.includes('marked "type these"'), 'the force gate');
    expectFits(gate, columns);
    expect(gate).toContain(localFp);
    // The LOCAL fingerprint is the one to type: labelled so, its 8 characters marked beneath it.
    const lines = gate.split('\n');
    const localLine = lines.findIndex((line) => line.includes(localFp));
    expect(lines[localLine + 1]).toMatch(/^type these\s+\^{8} set aside/);
    expect(lines[localLine + 1]!.indexOf('^')).toBe(lines[localLine]!.indexOf(localFp) + 7);
    expect(gate).toContain(publishedFp);
    expect(gate).toContain(path.join(b, `ca.superseded-${utcStamp(AT)}`));
    expect(flat(gate)).toContain('left behind by a rotation');
    expect(gate).toContain('[ Replace ] disabled');

    // The PUBLISHED prefix, a short one, the prefix with SHA256: — none opens the gate; q is typed, not quit.
    await v.press(publishedFp.slice(7, 15));
    await v.waitFor((f) => f.includes(`> ${publishedFp.slice(7, 15)}`), 'the typed text');
    await v.press(KEY.enter);
    const stillShut = await v.waitFor((f) => f.includes('not accepted'), 'the reason it was refused');
    expect(stillShut).toContain('[ Replace ] disabled');
    expect(flat(stillShut)).toContain('That is the PUBLISHED fingerprint');
    await v.press('q');
    const typedQ = await v.waitFor(
      (f) => f.includes(`> ${publishedFp.slice(7, 15)}q`),
      'q typed into the field after the refused Enter',
    );
    expect(typedQ).toContain('[ Replace ] disabled');
    expect(exitCode).toBeUndefined();

    await v.press(KEY.escape);
    await v.waitFor((f) => f.includes('Choose:'), 'back at the choice');
    expect(snapshotDir(hosts.root)).toEqual(before);
    expect(consoleErrors.mock.calls.map((call) => String(call[0]))).toEqual([]);
    consoleErrors.mockRestore();
  });

  it('forces after the right prefix: ca/ is set aside at the path the gate showed, and the result is in sync', async () => {
    await leftBehindB(hosts);
    const b = hosts.ctx('b').stateDir;
    const localFp = (await fingerprintOf(b))!;
    const oldKey = readFileSync(path.join(b, 'ca', 'ca.key'));
    const v = mount(hosts.ports('b'));
    await v.waitFor((f) => f.includes('Replace the local authority (force)'), 'the action list');
    await v.press('j');
    await v.waitFor((f) => f.includes('› Replace the local authority'), 'the cursor on force');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('marked "type these"'), 'the force gate');
    await v.press(localFp.slice(7, 15));
    const open = await v.waitFor((f) => f.includes('[ Replace ] enabled'), 'the gate open');
    expectFits(open, columns);
    await v.press(KEY.enter);
    const done = await v.waitFor((f) => f.includes('Read again:') && f.includes('in sync'), 'the result');
    expectFits(done, columns);
    const superseded = path.join(b, `ca.superseded-${utcStamp(AT)}`);
    expect(done).toContain('set aside in');
    expect(readFileSync(path.join(superseded, 'ca.key'))).toEqual(oldKey);
    expect(await fingerprintOf(b)).toBe(await fingerprintOf(hosts.ctx('a').stateDir));
  });

  it('shows "the store changed since you looked" when another controller published between the read and the confirm', async () => {
    await publishedByA(hosts);
    const v = mount(hosts.ports('b'));
    await v.waitFor((f) => f.includes('Adopt the published authority'), 'the action list');
    await rotateAndPublishA(hosts);
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Adopt'), 'the confirm screen');
    await v.press(KEY.enter);
    const failed = await v.waitFor((f) => f.includes('store changed'), 'the refusal');
    expectFits(failed, columns);
    expect(failed).toContain('changed since you looked');
    expect(failed).toContain('Next: Re-read and decide again.');
    expect(failed).not.toMatch(/\n\s+at /);
    // Only the lock file the operation took exists: no ca/, no marker.
    expect(Object.keys(snapshotDir(hosts.ctx('b').stateDir)).sort()).toEqual(['.', 'ca.lock']);
    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(6), { timeout: 10_000 });
  });

  it('offers only "leave" while another process holds the lock, and says so', async () => {
    await publishedByA(hosts);
    const b = hosts.ctx('b').stateDir;
    // The lock file exists once any locked operation ran here; hold it for the whole read.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const holding = withAuthorityLock(b, () => held);
    await vi.waitFor(() => expect(existsSync(path.join(b, 'ca.lock'))).toBe(true), { timeout: 10_000 });
    try {
      const v = mount(hosts.ports('b'));
      const frame = await v.waitFor((f) => f.includes('BUSY'), 'the lock shown busy');
      expectFits(frame, columns);
      expect(frame).toContain(path.join(b, 'ca.lock'));
      expect(frame).toContain('Leave it as it is');
      expect(frame).not.toContain('Adopt the published authority');
    } finally {
      release();
      await holding;
    }
  });

  it('shows an unreachable store as blocked with what to do next, and the help overlay over it', async () => {
    const ports: FailoverPorts = {
      read: async () => READS.unreachable(),
      act: async () => {
        throw new Error('a test that expects no act');
      },
    };
    const v = mount(ports);
    const frame = await v.waitFor((f) => f.includes('blocked'), 'the blocked verdict');
    expectFits(frame, columns);
    expect(frame).toContain('could not read');
    expect(frame).toContain('Check the endpoint and network');
    await v.press('?');
    const help = await v.waitFor((f) => f.includes('Keys on this screen'), 'the help overlay');
    expectFits(help, columns);
    // This screen's own keys: the choice's, not the gate's line editing.
    expect(flat(help)).toContain('move between the allowed actions');
    expect(help).not.toContain('Ctrl-U');
    await v.press(KEY.escape);
    await v.waitFor((f) => f.includes('Choose:'), 'help closed, walk still there');
    await v.press(KEY.escape);
    await v.waitFor((f) => f.includes('Choose:'), 'Esc at the top does not quit');
    expect(exitCode).toBeUndefined();
    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(3), { timeout: 10_000 });
  });

  it('says what is under way while acting, and q does not walk away from a write in progress', async () => {
    let finish!: () => void;
    const ports: FailoverPorts = {
      read: async () => READS.publish(),
      act: () =>
        new Promise(
          (resolve) => (finish = () => resolve({ kind: 'published', fingerprint: FP_A, etag: '"e1"' })),
        ),
    };
    const v = mount(ports);
    const reading = v.lastFrame();
    expect(reading).toMatch(/Reading the lock|Publish this host/);
    await v.waitFor((f) => f.includes('Publish this host'), 'the action list');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Publish'), 'the confirm');
    await v.press(KEY.enter);
    const acting = await v.waitFor(
      (f) => f.includes('taking the lock, reading again, then writing'),
      'the acting screen',
    );
    expectFits(acting, columns);
    await v.press('q');
    expect(exitCode).toBeUndefined();
    finish();
    await v.waitFor((f) => f.includes('Published'), 'the result');
    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(0), { timeout: 10_000 });
  });

  it('q on the help overlay does not walk away from a write in progress either', async () => {
    let finish!: () => void;
    const ports: FailoverPorts = {
      read: async () => READS.publish(),
      act: () =>
        new Promise(
          (resolve) => (finish = () => resolve({ kind: 'published', fingerprint: FP_A, etag: '"e1"' })),
        ),
    };
    const v = mount(ports);
    await v.waitFor((f) => f.includes('Publish this host'), 'the action list');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Publish'), 'the confirm');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('taking the lock, reading again, then writing'), 'the acting screen');
    await v.press('?');
    await v.waitFor((f) => f.includes('Esc or ? closes this help'), 'the help overlay');
    await v.press('q');
    expect(exitCode).toBeUndefined();
    finish();
    await v.press('?');
    await v.waitFor((f) => f.includes('Published'), 'the result');
    await v.press('q');
    await vi.waitFor(() => expect(exitCode).toBe(0), { timeout: 10_000 });
  });

  it('never shows a stack trace when an operation throws something that is not a BatonError', async () => {
    const ports: FailoverPorts = {
      read: async () => READS.adopt(),
      act: async () => {
        throw new TypeError('socket hang up');
      },
    };
    const v = mount(ports);
    await v.waitFor((f) => f.includes('Adopt the published authority'), 'the action list');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Adopt'), 'the confirm screen');
    await v.press(KEY.enter);
    const failed = await v.waitFor((f) => f.includes('failed'), 'the failure');
    expect(failed).toContain('socket hang up');
    expect(failed).toContain('Next:');
    expect(failed).not.toMatch(/\n\s+at /);
    expectFits(failed, columns);
  });
});

it('a refusal from the operation keeps its own words and exit code', async () => {
  const refusal = new BatonError('lock-busy', {
    what: 'The authority lock is held by another baton.',
    where: '/x/ca.lock',
    next: 'Wait and try again.',
  });
  let code: number | undefined;
  const v = renderAt(
    <FailoverApp
      ports={{
        read: async () => READS.adopt(),
        act: async () => {
          throw refusal;
        },
      }}
      columns={80}
      baton="baton"
      onExit={(c) => (code = c)}
    />,
    80,
  );
  try {
    await v.waitFor((f) => f.includes('Adopt the published authority'), 'the action list');
    await v.press(KEY.enter);
    await v.waitFor((f) => f.includes('Confirm: Adopt'), 'the confirm');
    await v.press(KEY.enter);
    const frame = await v.waitFor((f) => f.includes('lock busy'), 'the lock refusal');
    expect(frame).toContain('Where: /x/ca.lock');
    expect(frame).toContain('Next: Wait and try again.');
    await v.press('q');
    await vi.waitFor(() => expect(code).toBe(5), { timeout: 10_000 });
  } finally {
    v.unmount();
  }
});
