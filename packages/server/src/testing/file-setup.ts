import { afterEach } from 'vitest';
import { runReadersFrom } from '../modules/ingest/reader.js';
import { runSearchThreadsFrom } from '../modules/retrieval/thread.js';
import { releaseHeldLocks } from './locks.js';
import { compiledModule } from './process.js';

/**
 * Before each test file: its apps' search and reading threads run from the compiled build as Engram's processes
 * do (testing/global-setup.ts), not from source under tsx, which costs each thread seconds of CPU to
 * load (docs/architecture.md, "Testing").
 */
const searchThread = compiledModule('modules/retrieval/thread-worker.js');
if (searchThread) runSearchThreadsFrom(searchThread);
const reader = compiledModule('modules/ingest/reader-worker.js');
if (reader) runReadersFrom(reader);

// A test that failed while holding a row lock releases it here, not never: its app's shutdown would wait for it.
afterEach(releaseHeldLocks);
