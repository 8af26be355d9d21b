/**
 * A deployment whose first controller has published its authority — made by the built CLI
 * itself (`baton sync --yes` on a fresh host mints, publishes create-only, installs), so the
 * status being measured reads exactly what an operator's would.
 *
 * Asynchronous on purpose: the S3 figure serves s3rver from this very process, and a
 * synchronous spawn would stop the server from answering the child it waits for.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { unenforcedStoreFlags } from '../../helpers/test-s3.js';
import { BIN, childEnv, DEPLOYMENT, type BenchContext } from './context.js';

const run = promisify(execFile);

export interface Published {
  /** A private directory holding no baton.yaml: run the measured commands here, so no config file is read. */
  readonly cwd: string;
  readonly stateDir: string;
  readonly storeUrl: string;
  /** The global flags that name this deployment, state dir and store. */
  readonly flags: readonly string[];
  readonly fingerprint: string;
}

export async function publishAuthority(
  ctx: BenchContext,
  storeUrl: string | undefined,
  env: Readonly<Record<string, string>> = {},
): Promise<Published> {
  const root = ctx.tempDir('authority');
  const stateDir = path.join(root, 'state');
  const url = storeUrl ?? `file://${path.join(root, 'store')}`;
  // The S3 figure serves s3rver, which does not enforce conditional writes: said on purpose.
  const flags = [
    '--deployment',
    DEPLOYMENT,
    '--no-seal',
    '--state-dir',
    stateDir,
    '--store',
    url,
    ...(url.startsWith('s3://') ? unenforcedStoreFlags(url) : []),
  ];
  const baton = async (...args: string[]) => {
    try {
      return (
        await run(process.execPath, [BIN, ...flags, ...args], {
          cwd: root,
          env: childEnv(env),
          encoding: 'utf8',
        })
      ).stdout;
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string };
      throw new Error(`baton ${args.join(' ')} failed (exit ${e.code}): ${e.stderr || e.stdout}`, {
        cause: error,
      });
    }
  };
  await baton('sync', '--first-controller', '--yes');
  const status = JSON.parse(await baton('status', '--json')) as {
    exit_code: number;
    local: { fingerprint: string };
  };
  if (status.exit_code !== 0)
    throw new Error(`baton status --json after sync is not in sync: ${JSON.stringify(status)}`);
  return { cwd: root, stateDir, storeUrl: url, flags, fingerprint: status.local.fingerprint };
}
