/**
 * Mutation testing of the modules that guard scope, erasure, idempotency, sessions and audit:
 * `npm run mutation` (not part of CI: it is slow). SQLite only unless ENGRAM_TEST_DATABASE_URL is
 * set; the tests run are those of vitest.mutation.config.ts. Report: reports/mutation/.
 */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.mutation.config.ts' },
  mutate: [
    'src/http/auth.ts',
    'src/http/idempotency.ts',
    // The memories module's writes (writes.ts before its split by operation).
    'src/modules/memories/{add,update,erase,turns,summaries,marks,import,revisions,rows,duplicates}.ts',
    'src/modules/memories/feed.ts',
    'src/modules/auth/*.ts',
    'src/modules/audit/*.ts',
    'src/modules/org/resolved-keys.ts',
    '!**/*.test.ts',
  ],
  // Error messages and log text: a changed message is not a changed decision.
  mutator: { excludedMutations: ['StringLiteral'] },
  coverageAnalysis: 'perTest',
  // Module-level mutants (constants, schemas) need the whole suite per mutant; the run would take hours on two cores.
  ignoreStatic: true,
  concurrency: 2,
  timeoutMS: 30_000,
  // The initial run of every test in the set takes minutes on a busy two-core machine.
  dryRunTimeoutMinutes: 20,
  reporters: ['clear-text', 'progress', 'json', 'html'],
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  thresholds: { high: 80, low: 60, break: null },
  tempDirName: '.stryker-tmp',
};
