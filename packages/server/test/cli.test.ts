import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { runCli, startServerProcess } from '../src/testing/process.js';

forEachDialect('engram CLI', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  let env: Record<string, string>;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
    env = { ENGRAM_DATABASE_URL: fresh.config.dialect === 'postgres' ? fresh.config.url : fresh.config.path };
  });
  afterAll(() => fresh.drop());

  it('migrate applies the migrations once', async () => {
    const first = await runCli(['migrate'], env);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/applied: 0001_foundation\.sql/);
    const second = await runCli(['migrate'], env);
    expect(second.stdout).toMatch(/up to date/);
  });

  it('first start bootstraps once, printing the key to stdout and never to the log', async () => {
    const server = await startServerProcess({ ...env, ENGRAM_LOG_LEVEL: 'debug' });
    let key: string;
    try {
      const out = server.stdout();
      key = /API key: +(\S+)/.exec(out)![1]!;
      const projectId = /project id: +(\S+)/.exec(out)![1]!;
      expect(key).toMatch(/^egm_/);
      const res = await fetch(`${server.url}/memory/add`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key, 'x-end-user-id': 'u' },
        body: JSON.stringify({ text: 'bootstrap key works' }),
      });
      expect(res.status).toBe(201);
      // The bootstrap key is locked to the default project.
      const other = await fetch(`${server.url}/memory/1`, {
        headers: { 'x-api-key': key, 'x-end-user-id': 'u', 'x-project-id': 'proj_other' },
      });
      expect(other.status).toBe(404);
      expect(projectId).toMatch(/^proj_/);
      expect(server.stderr()).not.toContain(key);
    } finally {
      await server.stop();
    }
    const second = await startServerProcess(env);
    try {
      expect(second.stdout()).not.toContain('API key');
    } finally {
      await second.stop();
    }
  });

  it('refuses invalid configuration with a clear message', async () => {
    const res = await runCli(['migrate'], { ...env, ENGRAM_PORT: 'eighty' });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('ENGRAM_PORT must be an integer');
  });
});
