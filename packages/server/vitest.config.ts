import { relative } from 'node:path';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that take longest (they start server and worker processes, or sweep every operation with
 * every credential) run first. Without a record of earlier runs (a fresh clone, as CI is) vitest
 * starts the largest files first, and these are small: the authorization matrix's two shares, a few
 * lines each, started last and ran alone for the suite's last two minutes.
 */
const LONG_RUNNING = [
  /^test\//,
  /^src\/http\/authorization-(\d|mcp)\.test\.ts$/,
  /^src\/http\/fuzz\.test\.ts$/,
  /^src\/cli\/transfer\.test\.ts$/,
];
class LongRunningFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const long = (file: TestSpecification) =>
      LONG_RUNNING.some((pattern) => pattern.test(relative(this.ctx.config.root, file.moduleId)));
    return [...sorted.filter(long), ...sorted.filter((file) => !long(file))];
  }
}

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // The compiled build, up to date, for the tests that start Engram as a program (testing/global-setup.ts).
    globalSetup: ['src/testing/global-setup.ts'],
    // And for the search threads of each file's apps.
    setupFiles: ['src/testing/file-setup.ts'],
    // Process-level tests (test/) start real servers and workers; on 2 busy cores that takes tens of seconds.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Each file in a fresh fork (vitest's isolate). Forks shared by the files they run (isolate: false)
    // took the suite from 9 to 6.5 minutes, but one grew to 3.3 GB over its files, and vitest 3.2 fails
    // the run at teardown with fewer than maxForks started ("Terminating worker thread").
    pool: 'forks',
    // s3rver (the local S3 the tests start) encrypts ListObjectsV2 continuation tokens with DES,
    // which OpenSSL 3 keeps in its legacy provider. Three test files at a time: vitest's default on
    // 2 cores is one (cores - 1), and most of a file's time is spent waiting for the servers,
    // processes and databases it starts (the server suite beside another suite: 1,073 s one at a
    // time, 772 s three at a time; alone, three at a time: 473 s).
    poolOptions: { forks: { execArgv: ['--openssl-legacy-provider'], maxForks: 3, minForks: 1 } },
    sequence: { sequencer: LongRunningFirst },
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: '.vitest-results.json' },
  },
});
