import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { alias: { '@engram/client': fileURLToPath(new URL('../client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    // One real server and one Chromium for the whole walk-through.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
  },
});
