import { packageTestConfig } from '../server/src/testing/vitest-package.js';

// Builds dist once, for the stdio test's `engram-mcp` (bin/engram-mcp.mjs runs dist/cli.js).
export default packageTestConfig({ test: { globalSetup: ['test/build.ts'] } });
