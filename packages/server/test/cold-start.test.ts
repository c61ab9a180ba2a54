import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../src/testing/pgbouncer.js';
import { startTogether } from '../src/testing/cold-start.js';

/**
 * A deploy starts N processes at once on an empty database (issue 46.3, 46.4): two servers, or two
 * servers and a worker, started together all come up (migrations and the first-run bootstrap taken
 * by one of them, prepared statements that a transaction-mode pooler cannot keep given up), each
 * writes, and the audit chains verify afterwards. On SQLite (one new file), on PostgreSQL directly
 * and through PgBouncer in transaction mode (when installed; .ci/run installs it).
 */

const KEY = `egm_coldstart_${'c'.repeat(32)}`;
const POSTGRES_URL = process.env.ENGRAM_TEST_DATABASE_URL;
const env = { ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_LOG_LEVEL: 'warn', ENGRAM_RATE_LIMIT_MAX: '10000000' };

interface Target {
  /** ENGRAM_DATABASE_URL and ENGRAM_DATA_DIR of the processes. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

async function comeUpTogether(target: Target, servers: number, workers: number) {
  const outcome = await startTogether({ ...env, ...target.env }, servers, workers, KEY);
  expect(outcome.failures).toEqual([]);
  expect(outcome.cameUp).toBe(servers + workers);
  expect(outcome.auditVerified, outcome.auditOutput).toBe(true);
}

const cases = [
  { name: 'two servers', servers: 2, workers: 0 },
  { name: 'two servers and a worker', servers: 2, workers: 1 },
];

describe('concurrent cold starts on an empty SQLite file [sqlite]', () => {
  for (const c of cases) {
    it(`${c.name} started together all come up, and the audit chains verify`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'engram-cold-'));
      try {
        await comeUpTogether(
          { env: { ENGRAM_DATABASE_URL: '', ENGRAM_DATA_DIR: dir }, drop: async () => {} },
          c.servers,
          c.workers,
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }, 180_000);
  }
});

describe.skipIf(!POSTGRES_URL)('concurrent cold starts on an empty PostgreSQL database [postgres]', () => {
  const admin = new pg.Client({ connectionString: POSTGRES_URL });
  let bouncer: PgBouncer | undefined;
  let n = 0;
  const dataDirs: string[] = [];
  /** A fresh empty database, reached directly or through the pooler. */
  const emptyDatabase = async (via: 'direct' | 'pgbouncer'): Promise<Target> => {
    const name = `engram_test_cold_${process.pid}_${++n}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(POSTGRES_URL!);
    url.pathname = `/${name}`;
    const dir = mkdtempSync(join(tmpdir(), 'engram-cold-'));
    dataDirs.push(dir);
    return {
      env: {
        ENGRAM_DATABASE_URL: via === 'direct' ? url.toString() : bouncer!.through(url.toString()),
        ENGRAM_DATA_DIR: dir,
      },
      drop: () => admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).then(() => {}),
    };
  };
  beforeAll(async () => {
    await admin.connect();
    if (pgbouncerInstalled) bouncer = await startPgBouncer(POSTGRES_URL!);
  });
  afterAll(async () => {
    await bouncer?.stop();
    await admin.end();
    for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
  });

  for (const via of ['direct', 'pgbouncer'] as const) {
    for (const c of cases) {
      it.skipIf(via === 'pgbouncer' && !pgbouncerInstalled)(
        `${via}: ${c.name} started together all come up, and the audit chains verify`,
        async () => {
          const target = await emptyDatabase(via);
          try {
            await comeUpTogether(target, c.servers, c.workers);
          } finally {
            await target.drop();
          }
        },
        180_000,
      );
    }
  }
});
