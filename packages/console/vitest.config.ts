import { fileURLToPath } from 'node:url';
import { packageTestConfig } from '../server/src/testing/vitest-package.js';

export default packageTestConfig({
  resolve: { alias: { '@engram/client': fileURLToPath(new URL('../client/src/index.ts', import.meta.url)) } },
  // One real server and one Chromium for the whole walk-through.
  test: { testTimeout: 60_000, hookTimeout: 120_000 },
});
