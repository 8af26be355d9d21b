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
    // In-process checks of a pair never read or fill the developer's ~/.cache
    // (src/pki/checked-pairs.ts): a test that wants the memory gives a directory of its own.
    env: { XDG_CACHE_HOME: '/nonexistent-baton-test-cache' },
  },
});
