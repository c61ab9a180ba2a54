import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../src/testing/pgbouncer.js';
import { runCli, startServerProcess } from '../src/testing/process.js';
import { until } from '../src/testing/until.js';

/**
 * Engram behind PgBouncer in transaction mode with ONE server connection (issue 46.4): the process's
 * presence lock (a transaction held open, store/presence.ts) must not pin it, or nothing else could
 * run; notifications cannot be heard through it, so held API keys are checked against the
 * credentials clock instead, and a key revoked by another process is refused at the next request.
 * With ENGRAM_DATABASE_DIRECT_URL the presence and LISTEN connections go to the database directly.
 */

const POSTGRES_URL = process.env.ENGRAM_TEST_DATABASE_URL;
const KEY = `egm_pooler_${'p'.repeat(32)}`;
const env = { ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_LOG_LEVEL: 'warn', ENGRAM_RATE_LIMIT_MAX: '10000000' };

describe.skipIf(!POSTGRES_URL || !pgbouncerInstalled)(
  'behind PgBouncer in transaction mode, one server connection [postgres]',
  () => {
    const admin = new pg.Client({ connectionString: POSTGRES_URL });
    let bouncer: PgBouncer;
    let n = 0;
    const cleanups: Array<() => Promise<void>> = [];
    const emptyDatabase = async () => {
      const name = `engram_test_pooler_${process.pid}_${++n}`;
      await admin.query(`CREATE DATABASE ${name}`);
      const url = new URL(POSTGRES_URL!);
      url.pathname = `/${name}`;
      const dir = mkdtempSync(join(tmpdir(), 'engram-pooler-'));
      cleanups.push(async () => {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        rmSync(dir, { recursive: true, force: true });
      });
      return { name, direct: url.toString(), pooled: bouncer.through(url.toString()), dir };
    };
    /** The sessions Engram holds open on `name`, by application_name and state. */
    const sessions = async (name: string) =>
      (
        await admin.query<{ application_name: string; state: string }>(
          `SELECT application_name, state FROM pg_stat_activity WHERE datname = $1 AND application_name IN ('engram-presence', 'engram-listener') ORDER BY 1`,
          [name],
        )
      ).rows;

    beforeAll(async () => {
      await admin.connect();
      bouncer = await startPgBouncer(POSTGRES_URL!, { poolSize: 1 });
    });
    afterAll(async () => {
      for (const cleanup of cleanups) await cleanup();
      await bouncer?.stop();
      await admin.end();
    });

    /** Serves, idempotent writes included; a key created and then revoked by the CLI (another process) is refused at the next request. */
    async function servesAndRefusesRevokedKey(
      database: Awaited<ReturnType<typeof emptyDatabase>>,
      extra: Record<string, string>,
    ) {
      const processEnv = { ...env, ENGRAM_DATABASE_URL: database.pooled, ENGRAM_DATA_DIR: database.dir, ...extra };
      const server = await startServerProcess(processEnv, { limitMs: 90_000 });
      try {
        const add = (key: string, idempotencyKey?: string) =>
          fetch(`${server.url}/memory/add`, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'x-api-key': key,
              'x-end-user-id': 'pooled',
              ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
            },
            body: JSON.stringify({ text: `behind a pooler ${idempotencyKey ?? 'unkeyed'}` }),
          });
        expect((await add(KEY)).status).toBe(201);
        const first = await add(KEY, 'pooled-once');
        const replay = await add(KEY, 'pooled-once');
        expect([first.status, replay.status]).toEqual([201, 201]);
        expect(await replay.json()).toEqual(await first.json());

        const projectId = /project id: (\S+)/.exec(server.stdout())![1]!;
        const created = await runCli(['key', 'create', '--project', projectId], processEnv);
        expect(created.code, created.stderr).toBe(0);
        const [, keyId, secret] = /created API key (\d+)[\s\S]*key: (\S+)/.exec(created.stdout)!;
        const read = () =>
          fetch(`${server.url}/memory/export`, { headers: { 'x-api-key': secret!, 'x-end-user-id': 'pooled' } });
        expect((await read()).status).toBe(200);
        expect((await read()).status).toBe(200); // held by now
        const revoked = await runCli(['key', 'revoke', keyId!], processEnv);
        expect(revoked.code, revoked.stderr).toBe(0);
        expect((await read()).status).toBe(401);
        return await sessions(database.name);
      } finally {
        await server.stop();
      }
    }

    it('without a direct URL: serves (no presence transaction pins the one server connection) and refuses a revoked key at once', async () => {
      const database = await emptyDatabase();
      const held = await servesAndRefusesRevokedKey(database, {});
      expect(held.filter((s) => s.application_name === 'engram-presence')).toEqual([]);
    }, 180_000);

    it('with ENGRAM_DATABASE_DIRECT_URL: presence held and LISTEN on direct connections, a revoked key refused at once', async () => {
      const database = await emptyDatabase();
      const held = await servesAndRefusesRevokedKey(database, { ENGRAM_DATABASE_DIRECT_URL: database.direct });
      expect(held).toEqual([
        { application_name: 'engram-listener', state: 'idle' },
        { application_name: 'engram-presence', state: 'idle in transaction' },
      ]);
      // Gone with the process.
      await until(
        async () => (await sessions(database.name)).length === 0,
        'the direct sessions to end with the process',
      );
    }, 180_000);
  },
);
