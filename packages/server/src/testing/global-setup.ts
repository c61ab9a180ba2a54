import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Once per test run, before any test file: the server's build brought up to date the way `npm start`
 * does it (scripts/build-if-stale.mjs: tsc, only when a source changed since the last build), for the
 * tests that run Engram as a program (`engram serve`, `engram worker`, the CLI: testing/process.ts).
 * Started from the compiled build, a process takes ~1.3 s of CPU; from source under tsx, ~3.2 s,
 * every process (docs/architecture.md, "Testing"). Should the build fail (a type error while
 * editing), those processes run from source as before, and the run says so.
 */
export default function setup(): void {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const main = `${root}dist/main.js`;
  try {
    execFileSync(process.execPath, [`${root}scripts/build-if-stale.mjs`], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    process.stderr.write('engram tests: the build failed; Engram processes run from source under tsx\n');
    return;
  }
  if (existsSync(main)) process.env[PROGRAM_ENV] = main;
}

/** Set by the setup to the compiled entry point the test processes run (testing/process.ts#programArgs). */
export const PROGRAM_ENV = 'ENGRAM_TEST_PROGRAM';
