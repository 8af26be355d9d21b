/**
 * A deployment whose first controller has published its authority — made by the built CLI
 * itself (`baton sync --yes` on a fresh host mints, publishes create-only, installs), so the
 * status being measured reads exactly what an operator's would.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { BIN, childEnv, DEPLOYMENT, type BenchContext } from './context.js';

export interface Published {
  readonly stateDir: string;
  readonly storeUrl: string;
  /** The global flags that name this deployment, state dir and store. */
  readonly flags: readonly string[];
  readonly fingerprint: string;
}

export function publishAuthority(ctx: BenchContext, storeUrl: string | undefined, env: Readonly<Record<string, string>> = {}): Published {
  const root = ctx.tempDir('authority');
  const stateDir = path.join(root, 'state');
  const url = storeUrl ?? `file://${path.join(root, 'store')}`;
  const flags = ['--deployment', DEPLOYMENT, '--state-dir', stateDir, '--store', url];
  const sync = spawnSync('node', [BIN, ...flags, 'sync', '--yes'], { cwd: root, env: childEnv(env), encoding: 'utf8' });
  if (sync.status !== 0) throw new Error(`baton sync --yes failed (exit ${sync.status}): ${sync.stderr || sync.stdout}`);
  const status = spawnSync('node', [BIN, ...flags, 'status', '--json'], { cwd: root, env: childEnv(env), encoding: 'utf8' });
  if (status.status !== 0) throw new Error(`baton status --json after sync is not in sync (exit ${status.status}): ${status.stderr || status.stdout}`);
  const fingerprint = (JSON.parse(status.stdout) as { local: { fingerprint: string } }).local.fingerprint;
  return { stateDir, storeUrl: url, flags, fingerprint };
}
