import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { databaseEnv, startServerProcess } from '../src/testing/process.js';
import { openDatabase } from '../src/store/database.js';

const KEY = 'egm_durability_' + 'd'.repeat(30);

forEachDialect('acknowledged writes survive kill -9', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
  });
  afterAll(() => fresh.drop());

  it('keeps every memory acknowledged before SIGKILL', async () => {
    const server = await startServerProcess({ ...databaseEnv(fresh.config), ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_LOG_LEVEL: 'warn' });
    const headers = { 'content-type': 'application/json', 'x-api-key': KEY, 'x-end-user-id': 'durable-user' };
    const acknowledged: number[] = [];
    // Several writes in flight at once; the process is killed the moment the last acknowledgement arrives.
    await Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${server.url}/memory/add`, { method: 'POST', headers, body: JSON.stringify({ text: `durable fact ${i}` }) });
        if (res.status === 201) acknowledged.push(((await res.json()) as { id: number }).id);
      }),
    );
    await server.stop('SIGKILL');
    expect(acknowledged).toHaveLength(20);

    const database = openDatabase(fresh.config);
    try {
      const rows = await database.db.selectFrom('memories').select(['id', 'text']).where('id', 'in', acknowledged).execute();
      expect(rows.map((r) => r.id).sort((a, b) => a - b)).toEqual([...acknowledged].sort((a, b) => a - b));
    } finally {
      await database.close();
    }

    // And a restarted server serves them.
    const again = await startServerProcess({ ...databaseEnv(fresh.config), ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_LOG_LEVEL: 'warn' });
    try {
      const res = await fetch(`${again.url}/memory/${acknowledged[0]}`, { headers });
      expect(res.status).toBe(200);
    } finally {
      await again.stop();
    }
  });
});
