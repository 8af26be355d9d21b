/**
 * Two controllers on real disk and a real directory store, for the failover tests: the
 * authority layer, the document and the operations are the real ones, so a walk that passes
 * here installs, refuses and sets aside exactly as on a host.
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { rotateAuthority, systemClock } from '../../src/authority/index.js';
import { adopt, firstController, publish } from '../../src/share/actions.js';
import type { ShareContext } from '../../src/share/share-context.js';
import { DirectoryStore } from '../../src/store/directory-store.js';
import { failoverPorts } from '../../src/operations/failover-ports.js';
import { makeTempDir } from '../helpers/fs-snapshot.js';

export const DEPLOYMENT = 'd1';

export interface Hosts {
  readonly root: string;
  readonly storeUrl: string;
  ctx(name: string): ShareContext;
  ports(name: string): ReturnType<typeof failoverPorts>;
  cleanup(): void;
}

export function makeHosts(): Hosts {
  const { dir, cleanup } = makeTempDir('baton-failover-');
  const storeDir = path.join(dir, 'store');
  mkdirSync(storeDir, { mode: 0o700 });
  const store = new DirectoryStore(storeDir);
  const storeUrl = `file://${storeDir}`;
  const ctx = (name: string): ShareContext => ({
    stateDir: path.join(dir, name),
    deployment: DEPLOYMENT,
    store,
    clock: systemClock,
    host: name,
    noSeal: true,
  });
  return {
    root: dir,
    storeUrl,
    ctx,
    ports: (name) => failoverPorts(ctx(name), storeUrl, undefined),
    cleanup,
  };
}

/** Controller `a` publishes first; `b` is a fresh host. */
export async function publishedByA(hosts: Hosts): Promise<void> {
  await firstController(hosts.ctx('a'));
}

/** `b` adopted, then `a` rotated and published: `b` is left behind by a rotation. */
export async function leftBehindB(hosts: Hosts): Promise<void> {
  await firstController(hosts.ctx('a'));
  await adopt(hosts.ctx('b'));
  await rotateAndPublishA(hosts);
}

export async function rotateAndPublishA(hosts: Hosts): Promise<void> {
  await rotateAuthority(hosts.ctx('a').stateDir, DEPLOYMENT);
  await publish(hosts.ctx('a'));
}

/**
 * Siblings: `b` adopted, then each rotated on its own and `a` published its rotation first —
 * neither is newer, and the table lets either be kept on purpose.
 */
export async function siblingsB(hosts: Hosts): Promise<void> {
  await firstController(hosts.ctx('a'));
  await adopt(hosts.ctx('b'));
  await rotateAndPublishA(hosts);
  await rotateAuthority(hosts.ctx('b').stateDir, DEPLOYMENT);
}
