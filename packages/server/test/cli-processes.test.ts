import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { startServerProcess } from '../src/testing/process.js';

forEachDialect('engram serve with ENGRAM_HTTP_PROCESSES', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
  });
  afterAll(() => fresh.drop());

  it('serves from several HTTP processes that all see every write, and stops cleanly', async () => {
    const key = `egm_workers_${'w'.repeat(30)}`;
    const server = await startServerProcess(
      {
        ENGRAM_DATABASE_URL: fresh.config.dialect === 'postgres' ? fresh.config.url : fresh.config.path,
        ENGRAM_BOOTSTRAP_API_KEY: key,
        ENGRAM_HTTP_PROCESSES: '2',
        ENGRAM_LOG_LEVEL: 'warn',
      },
      // Three processes start (a primary and two HTTP children): beside the suite's other files on 2 cores, over 30 s once.
      { limitMs: 90_000 },
    );
    try {
      const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(server.child.pid)])
        .toString()
        .trim()
        .split(/\s+/);
      expect(children, `the primary's children (its log: ${server.stderr()})`).toHaveLength(2);
      const headers = { 'content-type': 'application/json', 'x-api-key': key, 'x-end-user-id': 'u' };
      for (let i = 0; i < 10; i++) {
        // Each write lands on one process or the other; the next query, on either, must see it.
        const added = await fetch(`${server.url}/memory/add`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ text: `worker fact number ${i}` }),
        });
        expect(added.status).toBe(201);
        const id = ((await added.json()) as { id: number }).id;
        const found = await fetch(`${server.url}/memory/query`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ query: `worker fact number ${i}`, k: 1 }),
        });
        expect(((await found.json()) as { memories: Array<{ id: number }> }).memories.map((m) => m.id)).toEqual([id]);
      }
    } finally {
      expect(await server.stop()).toBe(0);
    }
    // Three processes compile the sources at start: beside the rest of the suite on 2 cores that took over a minute once.
  }, 120_000);
});
