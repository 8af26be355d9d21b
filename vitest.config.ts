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
    // 2-core machines: real servers (sshd, PostgreSQL, moto) and tmux sessions in parallel files
    // starve each other into timeouts. A third worker was measured against two, back to back on a
    // quiet machine, and gained nothing (docs/testing.md, "Round 12: a third worker").
    maxWorkers: 2,
    // In-process checks of a pair never read or fill the developer's ~/.cache
    // (src/pki/checked-pairs.ts): a test that wants the memory gives a directory of its own.
    env: { XDG_CACHE_HOME: '/nonexistent-baton-test-cache' },
    // The slowest files first, so the run does not end on one long file with the others idle.
    sequence: { sequencer: LongestFirst },
  },
});
