import { outside } from '../../src/outside-text.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FailoverApp } from '../../components/FailoverApp.js';
import { mintAuthority } from '../../src/authority/index.js';
import type { Fingerprint } from '../../src/pki/fingerprint-type.js';
import { encodeDocument } from '../../src/share/document.js';
import { firstController } from '../../src/share/actions.js';
import { DOCUMENT_FORMAT } from '../../src/share/types.js';
import { fingerprintOfFiles } from '../helpers/authority.js';
import { snapshotDir } from '../helpers/fs-snapshot.js';
import { DEPLOYMENT, makeHosts, type Hosts } from '../app/failover-hosts.js';
import { KEY, renderAt, type Rendered } from './render-at.js';

const flat = (frame: string) => frame.replace(/\s+/g, ' ');
const CLAIMED =
  "claims to replace this host's (by a rotation) — NOT PROVED: the document carries no handover signature.";

/**
 * A forged document — a new CA whose OU names this host's fingerprint, with no handover
 * signature — must read as a CLAIM on every screen that shows the diagnosis, the force screen
 * included, and the force must still ask for the typed confirmation.
 */
describe('a forged "left behind" in the failover walk', () => {
  let hosts: Hosts;
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    hosts.cleanup();
  });

  it('shows CLAIMED, NOT PROVED in the verdict and on the force screen, which still asks for the typed prefix; Esc changes nothing', async () => {
    hosts = makeHosts();
    const b = hosts.ctx('b');
    const mine = ((await firstController(b)) as { fingerprint: Fingerprint }).fingerprint;
    const forged = await mintAuthority(DEPLOYMENT, { replaces: mine });
    const header = {
      format: DOCUMENT_FORMAT,
      deployment: DEPLOYMENT,
      fingerprint: await fingerprintOfFiles(forged, DEPLOYMENT),
      previousFingerprint: null,
      publishedAt: outside(new Date().toISOString()),
      publishedBy: outside('ctl-a'),
    } as const;
    writeFileSync(path.join(hosts.root, 'store', 'authority.json'), await encodeDocument(header, forged));
    const before = snapshotDir(hosts.root);

    view = renderAt(
      <FailoverApp ports={hosts.ports('b')} columns={80} baton="baton" onExit={() => undefined} />,
      80,
    );
    const v = view;
    const deciding = await v.waitFor(
      (f) => f.includes('Replace the local authority (force)'),
      'the action list',
    );
    expect(flat(deciding)).toContain(CLAIMED);
    expect(flat(deciding)).not.toContain('PROVED: signed');
    await v.press('j');
    await v.waitFor((f) => f.includes('› Replace the local authority'), 'the cursor on force');
    await v.press(KEY.enter);
    const gate = await v.waitFor((f) => f.includes('marked "type these"'), 'the force gate');
    for (const frame of [deciding, gate]) expect(frame.split('\n').length).toBeLessThanOrEqual(24);
    expect(flat(gate)).toContain(`Diagnosis: The published authority ${CLAIMED}`);
    expect(flat(gate)).not.toContain('left behind');
    expect(gate).toContain('[ Replace ] disabled');
    await v.press(KEY.escape);
    await v.waitFor((f) => f.includes('Choose:'), 'back at the choice');
    expect(snapshotDir(hosts.root)).toEqual(before);
  });
});
