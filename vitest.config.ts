import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/longest-first.js';
import { SHARED_MODULE_FILES } from './test/shared-module-files.js';

const EXCLUDE = ['test/bench/**', 'node_modules/**'];

export default defineConfig({
  test: {
    // Small files that leave nothing behind share their worker's modules (test/shared-module-files.ts);
    // every other file gets a module graph of its own.
    projects: [
      {
        extends: true,
        test: {
          name: 'isolated',
          include: ['test/**/*.test.{ts,tsx}'],
          exclude: [...EXCLUDE, ...SHARED_MODULE_FILES],
        },
      },
      { extends: true, test: { name: 'shared', include: [...SHARED_MODULE_FILES], isolate: false } },
    ],
    pool: 'forks',
    // A run directory (every worker's TMPDIR) and a teardown that ends every process the tests
    // started and fails the run naming any that was still running: test/global-setup.ts.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Three on a 2-core machine: the real-part files wait (servers starting, provisioner cycles,
    // receipts, tmux frames) as much as they compute, so two workers left the cores part idle; three
    // were measured against two on a quiet machine (docs/testing.md, "Round 12: a third worker").
    // Every wait in the suite is tied to what it waits for or bounded at 10 s, so contention makes
    // a run slower, not red.
    maxWorkers: 3,
    // In-process checks of a pair never read or fill the developer's ~/.cache
    // (src/pki/checked-pairs.ts): a test that wants the memory gives a directory of its own.
    env: { XDG_CACHE_HOME: '/nonexistent-baton-test-cache' },
    // The slowest files first, so the run does not end on one long file with the others idle.
    sequence: { sequencer: LongestFirst },
  },
});
