/**
 * Runs the BUILT CLI (`node bin/baton.js`, made by `npm run build`) the way an operator's
 * script does: no TTY, its own environment, exit code and both streams captured. Tests that
 * prove a promise of the CLI go through here, never through the sources.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { S3RVER_CREDENTIALS } from '../../src/sandbox/s3.js';
import { REPO } from './bundle-script.js';

/**
 * The built CLI. BATON_TEST_BIN (read by the TEST process, never passed to baton) points at
 * another build of the same sources, for a developer whose dist/ is being rebuilt under them.
 */
export const BIN = process.env.BATON_TEST_BIN ?? path.join(REPO, 'bin', 'baton.js');

export interface BatonRun {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout + stderr, for matching what the operator reads. */
  readonly all: string;
}

export interface RunOptions {
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  readonly input?: string;
  /** Hard bound so a hung child fails the test instead of the run. Default 60 s. */
  readonly timeoutMs?: number;
  /** Flags for node itself, before the script (e.g. --import a probe). */
  readonly nodeArgs?: readonly string[];
}

/**
 * What a child `baton` needs to reach the s3rver sandbox through the SDK's standard chain: the
 * emulator's public keys (nothing secret). Only test children get them; the drill passes them
 * to its adapter in-process.
 */
export const S3_TEST_ENV: Record<string, string> = {
  AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

export function assertBuilt(): void {
  if (!existsSync(process.env.BATON_TEST_BIN ?? path.join(REPO, 'dist', 'app.cjs'))) {
    throw new Error('dist/app.cjs is missing: run `npm run build` (npm test does it first).');
  }
}

/** Starts the CLI; await the result, or use the child (pid, kill) while it runs. */
export function startBaton(
  args: readonly string[],
  options: RunOptions = {},
): ResultPromise<{ reject: false; all: true }> {
  // tsc needs the cast (the spread of stdin/input widens the options); the rule misreads it as unneeded.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  return execa('node', [...(options.nodeArgs ?? []), BIN, ...args], {
    reject: false,
    all: true,
    cwd: options.cwd ?? REPO,
    env: { ...cleanEnv(), ...options.env },
    extendEnv: false,
    timeout: options.timeoutMs ?? 60_000,
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
  }) as unknown as ResultPromise<{ reject: false; all: true }>;
}

export async function runBaton(args: readonly string[], options: RunOptions = {}): Promise<BatonRun> {
  const result = await startBaton(args, options);
  return {
    exitCode: result.exitCode ?? -1,
    stdout: String(result.stdout),
    stderr: String(result.stderr),
    all: String(result.all),
  };
}

/**
 * The parent's environment minus anything that would change what baton reads (a config
 * file, AWS settings of the machine running the tests).
 */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (/^(AWS_|BATON_)/.test(name)) continue;
    // Under CI=true Ink draws only its last frame (docs/testing.md); a run here must look like an
    // operator's, in CI as on a laptop.
    if (name === 'CI' || name === 'CONTINUOUS_INTEGRATION') continue;
    env[name] = value;
  }
  // No ./baton.yaml or ~/.config/baton/baton.yaml of the machine may leak into a test.
  env.XDG_CONFIG_HOME = '/nonexistent-baton-test-config';
  // Nor a pair this user proved before (src/pki/checked-pairs.ts): every run checks in full
  // unless a test gives it a cache of its own.
  env.XDG_CACHE_HOME = '/nonexistent-baton-test-cache';
  env.HOME = env.HOME ?? '/root';
  return env;
}
