/**
 * What every benchmark case gets: where the built CLI is, how many runs to take, private
 * temp dirs (removed at the end of the run) and a progress line on stderr.
 */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Figure, Skipped } from './figure.js';

export const REPO = path.resolve(new URL('../../..', import.meta.url).pathname);
/**
 * The built CLI. BATON_BENCH_BIN (read by the bench, never passed to baton) measures another
 * build instead — a candidate change built in a copy of the tree, against the same baselines.
 */
export const BIN = process.env.BATON_BENCH_BIN ?? path.join(REPO, 'bin', 'baton.js');
export const DEPLOYMENT = 'be4c4be4c4be4c4be4c4be4c4be4c400';

export interface BenchContext {
  /** Repeated runs for process figures (≥ 10 for start-up). */
  readonly runs: number;
  /** A private directory, removed when the whole run ends. `tmpfs` puts it in /dev/shm when there is one. */
  tempDir(prefix: string, options?: { readonly tmpfs?: boolean }): string;
  /** A progress line (stderr, so stdout stays the table). */
  log(line: string): void;
}

export type CaseResult = { readonly figures: readonly Figure[]; readonly skipped: readonly Skipped[] };

export interface BenchCase {
  /** Short name for --only. */
  readonly name: string;
  run(ctx: BenchContext): Promise<CaseResult>;
}

const made: string[] = [];

export function makeContext(runs: number): BenchContext & { cleanup(): void } {
  return {
    runs,
    tempDir(prefix, options = {}) {
      let base = os.tmpdir();
      if (options.tmpfs) {
        try {
          accessSync('/dev/shm', constants.W_OK);
          base = '/dev/shm';
        } catch {
          // no tmpfs: the ordinary temp dir
        }
      }
      const dir = mkdtempSync(path.join(base, `baton-bench-${prefix}-`));
      made.push(dir);
      return dir;
    },
    log(line) {
      process.stderr.write(`  · ${line}\n`);
    },
    cleanup() {
      for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The environment a baton child runs in: the parent's minus anything that would change what
 * baton reads (a config file, the machine's AWS settings, CI — which makes Ink draw only its
 * last frame), plus `extra`.
 */
export function childEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (
      value === undefined ||
      /^(AWS_|BATON_|CI_)/.test(name) ||
      name === 'CI' ||
      name === 'CONTINUOUS_INTEGRATION'
    )
      continue;
    env[name] = value;
  }
  env.XDG_CONFIG_HOME = '/nonexistent-baton-bench-config';
  return { ...env, ...extra };
}
