import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { databaseEnv, startServerProcess, type ServerProcess } from '../src/testing/process.js';
import { openDatabase } from '../src/store/database.js';
import { sha256Hex } from '../src/core/crypto.js';

const KEY = `egm_crashwindow_${'c'.repeat(30)}`;
const EMAIL = 'owner@crash.test';
const PASSWORD = 'crash-window-password';

/**
 * Exactly-once across a crash: the server dies (SIGKILL, through the test failpoint) after an
 * idempotent write committed and before its answer was stored; the retry answers what the write did
 * and writes nothing again.
 */
forEachDialect('idempotent writes across a crash (kill -9)', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
  });
  afterAll(async () => {
    await server?.stop();
    await fresh.drop();
  });

  const env = (failpoint: boolean | string) => ({
    ...databaseEnv(fresh.config),
    ENGRAM_BOOTSTRAP_API_KEY: KEY,
    ENGRAM_BOOTSTRAP_EMAIL: EMAIL,
    ENGRAM_BOOTSTRAP_PASSWORD: PASSWORD,
    ENGRAM_LOG_LEVEL: 'warn',
    ...(failpoint ? { ENGRAM_TEST_FAILPOINT: failpoint === true ? 'idempotency-after-commit' : failpoint } : {}),
  });
  const send = (s: ServerProcess, path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${s.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
  /** The request the failpoint kills: no answer arrives, and the process is gone. */
  async function crashOn(
    path: string,
    body: unknown,
    headers: Record<string, string>,
    before?: (s: ServerProcess) => Promise<void>,
    failpoint: string | true = true,
  ) {
    const crashing = await startServerProcess(env(failpoint));
    await before?.(crashing);
    await expect(send(crashing, path, body, headers)).rejects.toThrow();
    expect(await crashing.stop()).toBe(null);
    expect(crashing.child.signalCode).toBe('SIGKILL');
  }

  it('answers the retry with the committed result: one memory, one project, one turn, one rating', async () => {
    const dataPlane = { 'x-api-key': KEY, 'x-end-user-id': 'crash-user', 'idempotency-key': 'add-1' };
    let token = '';
    // Sign-in carries no Idempotency-Key, so the failpoint lets it through.
    await crashOn('/memory/add', { text: 'written exactly once' }, dataPlane, async (s) => {
      const login = await send(s, '/auth/login', { email: EMAIL, password: PASSWORD }, {});
      token = ((await login.json()) as { access_token: string }).access_token;
    });
    const control = { authorization: `Bearer ${token}`, 'idempotency-key': 'project-1' };
    await crashOn('/org/projects', { name: 'Crash project' }, control);
    const turn = { tenant_id: 'crash-tenant', user_id: 'crash-user', text: 'a turn said once', speaker: 'user' };
    const tenantPlane = { 'x-api-key': KEY, 'x-tenant-id': 'crash-tenant', 'idempotency-key': 'turn-1' };
    let rated = 0;
    await crashOn('/v1/memory/add_turn', turn, tenantPlane, async (s) => {
      // The memory to rate, written without an Idempotency-Key (the failpoint lets it through).
      const res = await send(
        s,
        '/memory/add',
        { text: 'a memory to rate' },
        { 'x-api-key': KEY, 'x-end-user-id': 'crash-user' },
      );
      rated = ((await res.json()) as { id: number }).id;
    });
    const rating = { 'x-api-key': KEY, 'x-end-user-id': 'crash-user', 'idempotency-key': 'feedback-1' };
    await crashOn(`/memory/${rated}/feedback`, { rating: 'positive' }, rating);

    server = await startServerProcess(env(false));
    const added = await send(server, '/memory/add', { text: 'written exactly once' }, dataPlane);
    expect(added.status).toBe(201);
    const memory = (await added.json()) as { id: number; text: string };
    expect(memory.text).toBe('written exactly once');
    const project = await send(server, '/org/projects', { name: 'Crash project' }, control);
    expect(project.status).toBe(201);
    const created = (await project.json()) as { id: string; slug: string };
    expect(created.slug).toBe('crash-project');
    const turned = await send(server, '/v1/memory/add_turn', turn, tenantPlane);
    expect(turned.status).toBe(201);
    expect(((await turned.json()) as { status: string }).status).toBe('created');
    expect((await send(server, `/memory/${rated}/feedback`, { rating: 'positive' }, rating)).status).toBe(201);
    // Answered from now on as any stored answer is.
    const again = await send(server, '/memory/add', { text: 'written exactly once' }, dataPlane);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { id: number }).id).toBe(memory.id);

    const database = openDatabase(fresh.config);
    try {
      const memories = await database.db
        .selectFrom('memories')
        .select('id')
        .where('text', '=', 'written exactly once')
        .execute();
      expect(memories).toEqual([{ id: memory.id }]);
      const projects = await database.db
        .selectFrom('projects')
        .select('id')
        .where('name', '=', 'Crash project')
        .execute();
      expect(projects).toEqual([{ id: created.id }]);
      expect(
        await database.db.selectFrom('memories').select('id').where('text', '=', turn.text).execute(),
      ).toHaveLength(1);
      expect(
        await database.db.selectFrom('feedback').select('id').where('memory_id', '=', rated).execute(),
      ).toHaveLength(1);
      const audits = await database.db
        .selectFrom('audit_log')
        .select('id')
        .where('action', '=', 'memory.add')
        .where('target_id', '=', String(memory.id))
        .execute();
      expect(audits).toHaveLength(1);
    } finally {
      await database.close();
    }
  }, 240_000);

  it('a retry after the claimer was killed before writing anything runs the request at once: no 409 wait, written once', async () => {
    const claimed = { 'x-api-key': KEY, 'x-end-user-id': 'crash-user', 'idempotency-key': 'claimed-then-killed' };
    const turn = {
      tenant_id: 'crash-tenant',
      user_id: 'crash-user',
      text: 'a turn claimed by a dead process',
      speaker: 'user',
    };
    const tenantPlane = {
      'x-api-key': KEY,
      'x-tenant-id': 'crash-tenant',
      'idempotency-key': 'turn-claimed-then-killed',
    };
    const claiming = Date.now();
    await crashOn('/memory/add', { text: 'claimed by a dead process' }, claimed, undefined, 'idempotency-after-claim');
    await crashOn('/v1/memory/add_turn', turn, tenantPlane, undefined, 'idempotency-after-claim');
    const database = openDatabase(fresh.config);
    try {
      // Both claims are there, unanswered, their 5-minute lease still running, and nothing was written.
      const claims = await database.db
        .selectFrom('idempotency_keys')
        .select(['status', 'committed', 'claimer', 'locked_until'])
        .where('key_hash', 'in', [sha256Hex('claimed-then-killed'), sha256Hex('turn-claimed-then-killed')])
        .execute();
      expect(claims).toHaveLength(2);
      for (const c of claims) {
        expect(c).toMatchObject({ status: null, committed: null });
        expect(c.claimer).not.toBe(null);
        // Leased for 5 minutes from its claim, however long starting the processes took.
        expect(new Date(c.locked_until).getTime()).toBeGreaterThanOrEqual(claiming + 5 * 60_000);
      }
      await server?.stop();
      server = await startServerProcess(env(false));
      const added = await send(server, '/memory/add', { text: 'claimed by a dead process' }, claimed);
      expect(added.status, await added.clone().text()).toBe(201);
      const memory = (await added.json()) as { id: number };
      const turned = await send(server, '/v1/memory/add_turn', turn, tenantPlane);
      expect(turned.status, await turned.clone().text()).toBe(201);
      const again = await send(server, '/memory/add', { text: 'claimed by a dead process' }, claimed);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(((await again.json()) as { id: number }).id).toBe(memory.id);
      expect(
        await database.db.selectFrom('memories').select('id').where('text', '=', 'claimed by a dead process').execute(),
      ).toEqual([{ id: memory.id }]);
      expect(
        await database.db.selectFrom('memories').select('id').where('text', '=', turn.text).execute(),
      ).toHaveLength(1);
      expect(
        await database.db
          .selectFrom('audit_log')
          .select('id')
          .where('action', '=', 'memory.add')
          .where('target_id', '=', String(memory.id))
          .execute(),
      ).toHaveLength(1);
    } finally {
      await database.close();
    }
  }, 240_000);
});
