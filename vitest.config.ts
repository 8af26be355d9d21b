import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.{ts,tsx}'],
    exclude: ['test/bench/**', 'node_modules/**'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // 2-core machines: real servers (sshd, PostgreSQL, s3rver) and tmux sessions in parallel
    // files starve each other into timeouts; two workers keep the suite honest and bounded.
    maxWorkers: 2,
  },
});
