import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Process-level tests (test/) start real servers and workers; on 2 busy cores that takes tens of seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // s3rver (the local S3 the tests start) encrypts ListObjectsV2 continuation tokens with DES,
    // which OpenSSL 3 keeps in its legacy provider. Three test files at a time: vitest's default on
    // 2 cores is one (cores - 1), and most of a file's time is spent waiting for the servers,
    // processes and databases it starts (the server suite beside another suite: 1,073 s one at a
    // time, 772 s three at a time; alone, three at a time: 473 s).
    poolOptions: { forks: { execArgv: ['--openssl-legacy-provider'], maxForks: 3, minForks: 1 } },
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
  },
});
