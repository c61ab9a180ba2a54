import { randomBytes } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, expect, it, vi } from 'vitest';
import { loadConfig } from './config.js';
import { leaveBufferPool } from './engine/index.js';
import { createInProcessRetrieval } from './modules/retrieval/engine.js';
import { bufferPoolHolding, HeldApart } from './testing/erasure.js';
import { forEachDialect, useTestApp } from './testing/harness.js';
import { retrievalConfig } from './testing/retrieval.js';

/**
 * Erasure outside V8's heap (issue 47), where no heap snapshot looks: once an erasure commits, the thread that ran it
 * (the services' hook) and the index cache's thread (the search thread) each move on to a new Buffer pool, whose
 * slab any Buffer cut from it exposes to any code, and let go of their SQLite connection's page cache (docs/api.md,
 * What forgetting removes). Freed memory is not searched: no code reaches it, and it keeps its bytes until reused.
 */
forEachDialect('erasure outside the heap', (dialect) => {
  const M = new HeldApart(`zqn${randomBytes(6).toString('hex')}`);
  // The index cache on the search thread: here the services' hook alone leaves this thread's pool and cache.
  const t = useTestApp(dialect, () => retrievalConfig({ ...loadConfig({}).retrieval, searchThread: true }));
  const poolSize = Buffer.poolSize;
  afterEach(() => {
    Buffer.poolSize = poolSize;
    vi.restoreAllMocks();
  });
  /** A pool larger than a request takes: the slab that took the marker stays the current one unless left. */
  const roomyPool = () => {
    Buffer.poolSize = 4 << 20;
    leaveBufferPool();
  };
  /** The page cache let go: `PRAGMA shrink_memory` on this thread's SQLite connections, as they are counted. */
  const shrinks = () => {
    const pragma = vi.spyOn(BetterSqlite3.prototype, 'pragma');
    return () => pragma.mock.calls.filter(([source]) => source === 'shrink_memory').length;
  };
  const released = dialect === 'sqlite' ? 1 : 0;

  it('the thread that forgot a memory moves on to a new Buffer pool and lets go of its page cache', async () => {
    roomyPool();
    const added = await t.call('POST', '/memory/add', { body: { text: `A note on ${M}.` } });
    expect(added.status, added.text).toBe(201);
    // The request's body went through the pool (as a string read from a socket would).
    expect(bufferPoolHolding(M)).toBe(true);
    const shrunk = shrinks();
    const forgot = await t.call('DELETE', '/memory/forget', { body: { ids: [added.body.id] } });
    expect(forgot.status, forgot.text).toBe(200);
    expect(bufferPoolHolding(M)).toBe(false);
    expect(shrunk()).toBe(released);
  });

  it("the index cache's thread does the same once it let the forgotten go", async () => {
    const { cache } = createInProcessRetrieval(t.database, loadConfig({}).retrieval);
    roomyPool();
    // The thread's pool holding text, as a database driver's message or a request's body leaves it.
    Buffer.from(`${M} in a message`);
    expect(bufferPoolHolding(M)).toBe(true);
    const shrunk = shrinks();
    await cache.forgotten({ projectId: t.projectId, tenantId: '', endUserId: 'user-1' }, false);
    expect(bufferPoolHolding(M)).toBe(false);
    expect(shrunk()).toBe(released);
    cache.close();
  });
});
