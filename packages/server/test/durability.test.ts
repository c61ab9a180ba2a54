import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { databaseEnv, startServerProcess } from '../src/testing/process.js';
import { acknowledgedCount, lostWrites, writeUntilKilled, type TrialLoad } from '../src/testing/durability.js';

const KEY = `egm_durability_${'d'.repeat(30)}`;

/** The short version of `npm run bench:durability`: two kill -9 trials under 8 concurrent writers. */
forEachDialect('acknowledged writes survive kill -9', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  const env = () => ({ ...databaseEnv(fresh.config), ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_LOG_LEVEL: 'warn' });
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
  });
  afterAll(() => fresh.drop());

  it('keeps every memory acknowledged before SIGKILL, over two trials of 8 concurrent writers', async () => {
    const trials: TrialLoad[] = [];
    for (const trial of ['one', 'two']) {
      const server = await startServerProcess(env());
      const load = await writeUntilKilled(
        { url: server.url, key: KEY, kill: async () => void (await server.stop('SIGKILL')) },
        trial,
        8,
        60,
      );
      expect(server.child.signalCode).toBe('SIGKILL');
      expect(acknowledgedCount(load)).toBeGreaterThanOrEqual(60);
      trials.push(load);
    }
    const again = await startServerProcess(env());
    try {
      // Every trial's acknowledged writes, the earlier ones across two kills.
      for (const load of trials) expect(await lostWrites(again.url, KEY, load)).toEqual([]);
    } finally {
      await again.stop();
    }
  }, 120_000);
});
