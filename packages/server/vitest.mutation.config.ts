import { defineConfig } from 'vitest/config';

/**
 * The tests Stryker runs against each mutant (stryker.config.mjs): those of the mutated modules.
 * openapi.test.ts compares the served document with the committed one in an app it starts inside
 * the test, so it kills mutants of route declarations (schemas, limits, access) that tests sharing
 * a suite's app, built before any test, cannot. The authorization matrix and the fuzz test are left out: one test over every operation would run
 * for every mutant and make the run intractable on a small machine.
 */
export default defineConfig({
  test: {
    include: [
      'src/http/auth.test.ts',
      'src/http/credentials.test.ts',
      'src/http/key-binding.test.ts',
      'src/http/headers.test.ts',
      'src/http/idempotency.test.ts',
      'src/http/openapi.test.ts',
      'src/modules/auth/*.test.ts',
      'src/modules/audit/*.test.ts',
      'src/modules/memories/*.test.ts',
      'src/modules/org/access.test.ts',
      'src/modules/org/api-keys.test.ts',
      'src/modules/org/resolved-keys.test.ts',
      'src/modules/org/resolved-keys-rules.test.ts',
      'src/modules/v1/v1.test.ts',
    ],
    testTimeout: 120_000,
    hookTimeout: 60_000,
  },
});
