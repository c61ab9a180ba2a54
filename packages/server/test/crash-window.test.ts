import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { databaseEnv, startServerProcess, type ServerProcess } from '../src/testing/process.js';
import { openDatabase } from '../src/store/database.js';

/**
 * Crash windows: an idempotent write whose process dies after the write committed and before the
 * answer was stored or sent (the ENGRAM_TEST_FAILPOINT of http/idempotency.ts), retried with the same
 * Idempotency-Key on a restarted server, has exactly one effect and answers as the first would have.
 */

const KEY = 'egm_crashwindow_' + 'c'.repeat(30);
const EMAIL = 'owner@crash.example';
const PASSWORD = 'crash window password';

forEachDialect('idempotent writes across a crash between commit and answer', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  const env = () => ({
    ...databaseEnv(fresh.config), ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_BOOTSTRAP_EMAIL: EMAIL, ENGRAM_BOOTSTRAP_PASSWORD: PASSWORD, ENGRAM_LOG_LEVEL: 'warn',
  });
  const dataHeaders = { 'content-type': 'application/json', 'x-api-key': KEY, 'x-end-user-id': 'crash-user' };
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
  });
  afterAll(() => fresh.drop());

  async function call(server: ServerProcess, method: string, path: string, headers: Record<string, string>, body?: unknown) {
    const res = await fetch(`${server.url}${path}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as any };
  }
  async function bearer(server: ServerProcess) {
    const res = await call(server, 'POST', '/auth/login', { 'content-type': 'application/json' }, { email: EMAIL, password: PASSWORD });
    expect(res.status).toBe(200);
    return { 'content-type': 'application/json', authorization: `Bearer ${res.body.access_token}` };
  }

  /** Sends the write to a server armed with the failpoint: the connection must drop, the process must die. */
  async function crashDuring(send: (server: ServerProcess) => Promise<unknown>, prepare?: (server: ServerProcess) => Promise<void>) {
    const armed = await startServerProcess({ ...env(), ENGRAM_TEST_FAILPOINT: 'idempotency-after-commit' });
    try {
      await prepare?.(armed);
      await expect(send(armed)).rejects.toThrow();
      expect(await armed.stop()).toBeNull(); // killed by the signal, not exited
      expect(armed.child.signalCode).toBe('SIGKILL');
    } finally {
      await armed.stop('SIGKILL');
    }
  }

  const rows = async (count: (db: ReturnType<typeof openDatabase>['db']) => Promise<number>) => {
    const database = openDatabase(fresh.config);
    try {
      return await count(database.db);
    } finally {
      await database.close();
    }
  };

  it('adds one memory, one project, one feedback and one turn, and the retry answers as the first call would have', async () => {
    const add = { text: 'the crash window fact' };
    const turn = { tenant_id: 'crash-tenant', user_id: 'crash-user', text: 'a turn said once', speaker: 'user' };
    let memoryId = 0;
    await crashDuring((s) => call(s, 'POST', '/memory/add', { ...dataHeaders, 'idempotency-key': 'crash-add' }, add));
    await crashDuring((s) => call(s, 'POST', '/v1/memory/add_turn', { ...dataHeaders, 'x-tenant-id': 'crash-tenant', 'idempotency-key': 'crash-turn' }, turn));
    await crashDuring(
      async (s) => call(s, 'POST', `/memory/${memoryId}/feedback`, { ...dataHeaders, 'idempotency-key': 'crash-feedback' }, { rating: 'positive' }),
      async (s) => {
        memoryId = (await call(s, 'POST', '/memory/add', dataHeaders, { text: 'a memory to rate' })).body.id;
      },
    );
    let owner: Record<string, string> = {};
    await crashDuring(
      (s) => call(s, 'POST', '/org/projects', { ...owner, 'idempotency-key': 'crash-project' }, { name: 'Crash project' }),
      async (s) => {
        owner = await bearer(s);
      },
    );

    const server = await startServerProcess(env());
    try {
      const again = {
        add: await call(server, 'POST', '/memory/add', { ...dataHeaders, 'idempotency-key': 'crash-add' }, add),
        turn: await call(server, 'POST', '/v1/memory/add_turn', { ...dataHeaders, 'x-tenant-id': 'crash-tenant', 'idempotency-key': 'crash-turn' }, turn),
        feedback: await call(server, 'POST', `/memory/${memoryId}/feedback`, { ...dataHeaders, 'idempotency-key': 'crash-feedback' }, { rating: 'positive' }),
        project: await call(server, 'POST', '/org/projects', { ...owner, 'idempotency-key': 'crash-project' }, { name: 'Crash project' }),
      };
      // The first call's answer: created, not "skipped", "duplicate", 409 or a second row.
      expect(again.add.status, JSON.stringify(again.add.body)).toBe(201);
      expect(again.turn.status, JSON.stringify(again.turn.body)).toBe(201);
      expect(again.turn.body.status).toBe('created');
      expect(again.feedback.status, JSON.stringify(again.feedback.body)).toBe(201);
      expect(again.project.status, JSON.stringify(again.project.body)).toBe(201);
      expect(again.project.body.slug).toBe('crash-project');
    } finally {
      await server.stop();
    }
    expect(await rows(async (db) => (await db.selectFrom('memories').select('id').where('text', '=', add.text).execute()).length)).toBe(1);
    expect(await rows(async (db) => (await db.selectFrom('memories').select('id').where('text', '=', turn.text).execute()).length)).toBe(1);
    expect(await rows(async (db) => (await db.selectFrom('feedback').select('id').where('memory_id', '=', memoryId).execute()).length)).toBe(1);
    expect(await rows(async (db) => (await db.selectFrom('projects').select('id').where('name', '=', 'Crash project').execute()).length)).toBe(1);
  }, 120_000);
});
