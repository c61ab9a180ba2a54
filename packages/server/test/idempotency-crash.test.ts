import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { databaseEnv, startServerProcess, type ServerProcess } from '../src/testing/process.js';
import { openDatabase } from '../src/store/database.js';

const KEY = 'egm_crashwindow_' + 'c'.repeat(30);
const EMAIL = 'owner@crash.test';
const PASSWORD = 'crash-window-password';

/**
 * Exactly-once across a crash: the server dies (SIGKILL, through the test failpoint) after an
 * idempotent write committed and before its answer was stored; the retry answers what the write did
 * and writes nothing again.
 */
forEachDialect('idempotent writes across a crash between commit and answer', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
  });
  afterAll(async () => {
    await server?.stop();
    await fresh.drop();
  });

  const env = (failpoint: boolean) => ({
    ...databaseEnv(fresh.config), ENGRAM_BOOTSTRAP_API_KEY: KEY, ENGRAM_BOOTSTRAP_EMAIL: EMAIL, ENGRAM_BOOTSTRAP_PASSWORD: PASSWORD,
    ENGRAM_LOG_LEVEL: 'warn', ...(failpoint ? { ENGRAM_TEST_FAILPOINT: 'idempotency-after-commit' } : {}),
  });
  const send = (s: ServerProcess, path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${s.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  /** The request the failpoint kills: no answer arrives, and the process is gone. */
  async function crashOn(path: string, body: unknown, headers: Record<string, string>, before?: (s: ServerProcess) => Promise<void>) {
    const crashing = await startServerProcess(env(true));
    await before?.(crashing);
    await expect(send(crashing, path, body, headers)).rejects.toThrow();
    expect(await crashing.stop()).toBe(null);
    expect(crashing.child.signalCode).toBe('SIGKILL');
  }

  it('answers the retry with the committed result: one memory, one project', async () => {
    const dataPlane = { 'x-api-key': KEY, 'x-end-user-id': 'crash-user', 'idempotency-key': 'add-1' };
    let token = '';
    // Sign-in carries no Idempotency-Key, so the failpoint lets it through.
    await crashOn('/memory/add', { text: 'written exactly once' }, dataPlane, async (s) => {
      const login = await send(s, '/auth/login', { email: EMAIL, password: PASSWORD }, {});
      token = ((await login.json()) as { access_token: string }).access_token;
    });
    const control = { authorization: `Bearer ${token}`, 'idempotency-key': 'project-1' };
    await crashOn('/org/projects', { name: 'Crash project' }, control);

    server = await startServerProcess(env(false));
    const added = await send(server, '/memory/add', { text: 'written exactly once' }, dataPlane);
    expect(added.status).toBe(201);
    const memory = (await added.json()) as { id: number; text: string };
    expect(memory.text).toBe('written exactly once');
    const project = await send(server, '/org/projects', { name: 'Crash project' }, control);
    expect(project.status).toBe(201);
    const created = (await project.json()) as { id: string; slug: string };
    expect(created.slug).toBe('crash-project');
    // Answered from now on as any stored answer is.
    const again = await send(server, '/memory/add', { text: 'written exactly once' }, dataPlane);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(((await again.json()) as { id: number }).id).toBe(memory.id);

    const database = openDatabase(fresh.config);
    try {
      const memories = await database.db.selectFrom('memories').select('id').where('text', '=', 'written exactly once').execute();
      expect(memories).toEqual([{ id: memory.id }]);
      const projects = await database.db.selectFrom('projects').select('id').where('name', '=', 'Crash project').execute();
      expect(projects).toEqual([{ id: created.id }]);
      const audits = await database.db.selectFrom('audit_log').select('id').where('action', '=', 'memory.add').execute();
      expect(audits).toHaveLength(1);
    } finally {
      await database.close();
    }
  }, 120_000);
});
