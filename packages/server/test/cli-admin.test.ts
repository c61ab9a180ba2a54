import { afterAll, beforeAll, expect, it } from 'vitest';
import { freshDatabaseConfig, forEachDialect } from '../src/testing/harness.js';
import { runCli, startServerProcess } from '../src/testing/process.js';

forEachDialect('engram user, key and status', (dialect) => {
  let fresh: Awaited<ReturnType<typeof freshDatabaseConfig>>;
  let env: Record<string, string>;
  beforeAll(async () => {
    fresh = await freshDatabaseConfig(dialect);
    env = {
      ENGRAM_DATABASE_URL: fresh.config.dialect === 'postgres' ? fresh.config.url : fresh.config.path,
      ENGRAM_LOG_LEVEL: 'warn',
    };
  });
  afterAll(() => fresh.drop());

  const secret = (stdout: string, label: string) => new RegExp(`${label}: +(\\S+)`).exec(stdout)![1]!;

  it('status reports pending migrations before migrate, then the database, jobs and outbox', async () => {
    const before = await runCli(['status'], env);
    expect(before.code).toBe(0);
    expect(before.stdout).toMatch(/migrations: 0 applied, \d+ pending \(0001_foundation\.sql/);
    await runCli(['init'], env);
    const after = await runCli(['status'], env);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain(': ok');
    expect(after.stdout).toMatch(/migrations: \d+ applied, 0 pending/);
    expect(after.stdout).toContain('jobs:       0 queued, 0 running, 0 failed, 0 succeeded');
    expect(after.stdout).toMatch(/outbox: +\d+ pending/);
    const down = await runCli(['status'], {
      ENGRAM_DATABASE_URL:
        dialect === 'postgres'
          ? 'postgres://postgres@127.0.0.1:1/none'
          : `${env.ENGRAM_DATABASE_URL}/not-a-directory/x.db`,
    });
    expect(down.code).toBe(1);
    expect(down.stdout).toContain('not answering');
  }, 240_000);

  it('creates users and keys, resets passwords and revokes keys; a server accepts what they print', async () => {
    const users = await runCli(['user', 'list'], env);
    const [, owner, organizationId] = /\d+\t(\S+)\t(org_[0-9a-z]+):owner/.exec(users.stdout)!;
    expect(owner).toBe('owner@engram.local');

    const created = await runCli(
      ['user', 'create', 'Ops@Example.com', '--org', organizationId!, '--role', 'admin'],
      env,
    );
    expect(created.code).toBe(0);
    const password = secret(created.stdout, 'password');
    expect((await runCli(['user', 'create', 'ops@example.com'], env)).stderr).toMatch(/exists already/);
    expect((await runCli(['user', 'create', 'x@example.com', '--org', 'org_nope'], env)).code).toBe(1);
    const listed = await runCli(['user', 'list'], env);
    expect(listed.stdout).toMatch(new RegExp(`ops@example.com\\t${organizationId}:admin\\tlast sign-in never`));

    const server = await startServerProcess(env);
    try {
      const login = async (email: string, pw: string) =>
        fetch(`${server.url}/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password: pw }),
        });
      const signedIn = await login('ops@example.com', password);
      expect(signedIn.status).toBe(200);
      const { access_token } = (await signedIn.json()) as { access_token: string };
      const projects = (await (
        await fetch(`${server.url}/org/projects`, { headers: { authorization: `Bearer ${access_token}` } })
      ).json()) as { items: Array<{ id: string }> };
      const project = projects.items[0]!.id;

      const key = await runCli(
        ['key', 'create', '--project', project, '--scopes', 'memories:read,memories:write', '--name', 'ops'],
        env,
      );
      expect(key.code).toBe(0);
      const secretKey = secret(key.stdout, 'key');
      expect(secretKey).toMatch(/^egm_/);
      const keyId = /created API key (\d+)/.exec(key.stdout)![1]!;
      const add = () =>
        fetch(`${server.url}/memory/add`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-api-key': secretKey, 'x-end-user-id': 'u' },
          body: JSON.stringify({ text: 'from an operator key' }),
        });
      expect((await add()).status).toBe(201);
      expect((await runCli(['key', 'create', '--project', project, '--scopes', 'memories:fly'], env)).stderr).toMatch(
        /memories:fly is not a known scope/,
      );
      expect((await runCli(['key', 'create', '--project', 'proj_nope'], env)).code).toBe(1);

      const revoked = await runCli(['key', 'revoke', keyId], env);
      expect(revoked.stdout).toContain(`API key ${keyId}: revoked`);
      expect((await add()).status).toBe(401);
      expect((await runCli(['key', 'revoke', '99999'], env)).code).toBe(1);

      const reset = await runCli(['user', 'reset-password', 'ops@example.com'], env);
      expect(reset.stdout).toContain('1 session(s) ended');
      expect(
        (await fetch(`${server.url}/org/projects`, { headers: { authorization: `Bearer ${access_token}` } })).status,
      ).toBe(401);
      expect((await login('ops@example.com', password)).status).toBe(401);
      expect((await login('ops@example.com', secret(reset.stdout, 'password'))).status).toBe(200);
      expect(server.stderr()).not.toContain(secretKey);
    } finally {
      await server.stop();
    }
    const audit = await runCli(['audit', 'verify'], env);
    // Rows the CLI wrote with no background process running wait for a sealer; they still verify.
    expect(audit.stdout).toMatch(/ok \(\d+ rows(; \d+ not sealed yet)?\)/);
  }, 600_000);
});
