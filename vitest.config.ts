import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/longest-first.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.{ts,tsx}'],
    exclude: ['test/bench/**', 'node_modules/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // The suite waits more than it computes (real servers starting, provisioner cycles, receipts,
    // tmux frames): at two workers a 2-core machine sat ~30% idle. A third keeps the cores busy;
    // more would starve the real servers (sshd, PostgreSQL, moto) into timeouts. docs/testing.md.
    maxWorkers: 3,
    // The slowest files first, so the run does not end on one long file with the others idle.
    sequence: { sequencer: LongestFirst },
  },
});
