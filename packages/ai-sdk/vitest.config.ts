import { packageTestConfig } from '../server/src/testing/vitest-package.js';

export default packageTestConfig();
