import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Process-level tests (test/) start real servers and workers; on 2 busy cores that takes tens of seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // s3rver (the local S3 the tests start) encrypts ListObjectsV2 continuation tokens with DES,
    // which OpenSSL 3 keeps in its legacy provider.
    poolOptions: { forks: { execArgv: ['--openssl-legacy-provider'] } },
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
  },
});
