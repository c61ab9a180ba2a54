import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { databaseEnv, startServerProcess, type ServerProcess } from '../src/testing/process.js';

const KEY = `egm_processes_${'p'.repeat(30)}`;

forEachDialect('two server processes on one database', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  let a: ServerProcess | undefined;
  let b: ServerProcess | undefined;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
    const env = { ...databaseEnv(fresh.config), ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_LOG_LEVEL: 'warn' };
    a = await startServerProcess(env);
    b = await startServerProcess(env);
  });
  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await fresh?.drop();
  });

  async function call(
    server: ServerProcess | undefined,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) {
    // An empty header value means "do not send it".
    const sent = Object.entries({
      'x-api-key': KEY,
      'x-end-user-id': 'shared-user',
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    });
    const res = await fetch(`${server!.url}${path}`, {
      method,
      headers: Object.fromEntries(sent.filter(([, v]) => v !== '')),
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: (await res.json()) as any };
  }
  const queryIds = async (server: ServerProcess | undefined, body: Record<string, unknown>) => {
    const res = await call(server, 'POST', '/memory/query', body);
    expect(res.status).toBe(200);
    return res.body.memories.map((m: { id: number }) => m.id);
  };

  it("answers every query with the other process's writes, on the very next request", async () => {
    // Both processes have a warm (empty) index for the end user before any write.
    expect(await queryIds(a, { query: 'harbour' })).toEqual([]);
    expect(await queryIds(b, { query: 'harbour' })).toEqual([]);

    const added = await call(a, 'POST', '/memory/add', { text: 'The boat is moored in the old harbour' });
    expect(added.status).toBe(201);
    const id = added.body.id;
    expect(await queryIds(b, { query: 'harbour' })).toEqual([id]);

    expect((await call(b, 'PATCH', `/memory/${id}`, { tags: ['boat'] })).status).toBe(200);
    expect(await queryIds(a, { query: 'harbour', filters: { tags_all: ['boat'] } })).toEqual([id]);

    const rated = await call(a, 'POST', `/memory/${id}/feedback`, { rating: 'negative' });
    expect(rated.status).toBe(201);
    const explained = await call(b, 'POST', '/memory/query', { query: 'harbour', explain: true });
    expect(explained.body.memories[0].explanation.feedback).toBeLessThan(0);

    const other = await call(b, 'POST', '/memory/add', { text: 'The harbour master retired' });
    expect((await call(a, 'DELETE', '/memory/forget', { ids: [id] })).body).toEqual([id]);
    expect(await queryIds(b, { query: 'harbour' })).toEqual([other.body.id]);

    const tenant = { 'x-tenant-id': 'acme' };
    const turn = await call(
      b,
      'POST',
      '/v1/memory/add_turn',
      { tenant_id: 'acme', user_id: 'u1', text: 'Meet me at the harbour', speaker: 'ann' },
      tenant,
    );
    expect(turn.status).toBe(201);
    const recalled = await call(
      a,
      'POST',
      '/v1/memory/recall',
      { tenant_id: 'acme', user_id: 'u1', query: 'harbour' },
      tenant,
    );
    expect(recalled.body.memories.map((m: { id: number }) => m.id)).toEqual([turn.body.id]);

    const composed = await call(a, 'POST', '/memory/compose', { task: 'harbour' }, { 'x-end-user-id': '' });
    expect(composed.status).toBe(200);
    expect(composed.body.prompt).toContain(`[m:${other.body.id}]`);

    expect((await call(b, 'DELETE', '/memory/user/shared-user', undefined, { 'x-end-user-id': '' })).status).toBe(200);
    expect(await queryIds(a, { query: 'harbour' })).toEqual([]);
  });
});
