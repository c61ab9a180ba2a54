import { defineConfig, mergeConfig, type ViteUserConfig } from 'vitest/config';

/**
 * The vitest configuration of a workspace package whose tests start real Engram servers (the server's test
 * harness): each file in its own fork, generous timeouts for 2 busy cores, and CI's JSON results that
 * .ci/run counts. `overrides` are merged in (arrays appended).
 */
export function packageTestConfig(overrides: ViteUserConfig = {}): ViteUserConfig {
  return mergeConfig(
    defineConfig({
      test: {
        include: ['test/**/*.test.ts'],
        testTimeout: 120_000,
        hookTimeout: 60_000,
        pool: 'forks',
        reporters: process.env.CI ? ['default', 'json'] : ['default'],
        outputFile: { json: '.vitest-results.json' },
      },
    }),
    overrides,
  );
}
