/**
 * Durability under kill -9: `--trials` times (default 10), 8 clients add memories back to back
 * (each its own end user) until `--kill-after` writes (default 200) are acknowledged, then the
 * server gets SIGKILL mid-stream and is restarted on the same data; every acknowledged write must
 * be served again (export). Prints JSON: per trial and in total, acknowledged and lost (must be 0).
 *
 *   npm run bench:durability [-- --trials N] [--clients N] [--kill-after N] [--postgres URL]
 *
 * What this proves and what it does not: kill -9 ends the process, not the machine, so writes the
 * kernel accepted but had not flushed to disk survive it; it checks that an acknowledgement follows
 * the commit, not that the commit reached the disk (that is the fsync settings' job).
 */
import { acknowledgedCount, lostWrites, writeUntilKilled } from '../packages/server/src/testing/durability.js';
import { option } from './lib/args.js';
import { freshDataDir, freshPostgres, startServer } from './lib/server.js';
import { rmSync } from 'node:fs';

const trials = Number(option('--trials') ?? 10);
const clients = Number(option('--clients') ?? 8);
const killAfter = Number(option('--kill-after') ?? 200);
const postgresUrl = option('--postgres');

const pg = postgresUrl ? await freshPostgres(postgresUrl) : undefined;
const dataDir = freshDataDir();
const start = () => startServer({ dataDir, ...(pg ? { databaseUrl: pg.url } : {}) });
const results: { trial: number; acknowledged: number; unanswered: number; lost: number }[] = [];
try {
  for (let trial = 1; trial <= trials; trial++) {
    const server = await start();
    const load = await writeUntilKilled(
      { url: server.url, key: server.key, kill: () => server.kill() },
      `t${trial}`,
      clients,
      killAfter,
    );
    const again = await start();
    const lost = await lostWrites(again.url, again.key, load);
    await again.stop();
    results.push({ trial, acknowledged: acknowledgedCount(load), unanswered: load.unanswered, lost: lost.length });
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
  await pg?.drop();
}
const sum = (k: 'acknowledged' | 'lost' | 'unanswered') => results.reduce((n, r) => n + r[k], 0);
console.log(
  JSON.stringify(
    {
      benchmark: 'durability',
      database: pg ? 'postgres' : 'sqlite',
      trials,
      clients,
      kill_after: killAfter,
      acknowledged: sum('acknowledged'),
      unanswered_at_kill: sum('unanswered'),
      lost: sum('lost'),
      per_trial: results,
    },
    null,
    2,
  ),
);
if (sum('lost') > 0) process.exitCode = 1;
