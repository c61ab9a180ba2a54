import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The tests start real servers (the server's test harness) on both dialects.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
  },
});
