import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    exclude: ['test/e2e/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    // Integration files start real PostgreSQL / etcd / Prometheus; two cores, so two at a time.
    maxWorkers: 2,
    testTimeout: 60_000,
    // expect.poll waits for the other side of a socket or process to catch up: 1 s by default, which a busy
    // machine can miss. The bound only ends a failing wait; a passing one returns as soon as it holds.
    expect: { poll: { timeout: 30_000 } },
    // Hooks start real PostgreSQL, etcd and servers: about 70 s seen on a loaded machine; this only bounds a failure.
    hookTimeout: 300_000,
    reporters: ['default'],
  },
});
