import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient, consentAt } from '../../testing/connectors.js';
import { SLACK_CLIENT, startFakeSlack, type FakeSlack } from '../../testing/fake-slack.js';
import { expectError } from '../../testing/memories.js';
import { vendorEndpoint } from './oauth.js';
import { retryAfterMs } from './providers/http.js';

it('puts the configured base URL in place of a vendor URL, path prefix included', () => {
  expect(vendorEndpoint({}, 'https://slack.com/api/auth.test?x=1').toString()).toBe(
    'https://slack.com/api/auth.test?x=1',
  );
  expect(
    vendorEndpoint({ baseUrl: 'http://proxy.internal:8443/slack/' }, 'https://slack.com/api/auth.test?x=1').toString(),
  ).toBe('http://proxy.internal:8443/slack/api/auth.test?x=1');
});

it('reads Retry-After as seconds or a date, and backs off without it', () => {
  const answer = (headers: Record<string, string>) => ({
    status: 429,
    headers,
    body: Buffer.alloc(0),
    url: 'https://slack.com/api/x',
  });
  expect(retryAfterMs(answer({ 'retry-after': '30' }), 0)).toBe(30_000);
  const inTwoMinutes = new Date(Date.now() + 120_000).toUTCString();
  expect(retryAfterMs(answer({ 'retry-after': inTwoMinutes }), 0)).toBeGreaterThan(100_000);
  expect([retryAfterMs(answer({}), 0), retryAfterMs(answer({}), 3)]).toEqual([1000, 8000]);
});

forEachDialect('OAuth consent: the SSRF guard and server configuration', (dialect) => {
  let slack: FakeSlack;
  beforeAll(async () => {
    slack = await startFakeSlack();
  });
  afterAll(() => slack?.close());
  // No ENGRAM_OUTBOUND_ALLOW: the loopback "Slack" is a private address, refused like any other.
  const t = useTestApp(dialect, () => ({
    connectors: {
      redirectUrl: 'https://console.example.com/cb',
      vendors: { slack: { ...SLACK_CLIENT, baseUrl: slack.base } },
    },
  }));
  const owner = useOwner(t);

  it('sends token requests through the SSRF guard and answers 503 without an OAuth client', async () => {
    const c = connectorsClient(t, owner);
    const connection = await c.create({ provider: 'slack', name: 'Guarded', config: { channels: ['#general'] } });
    const start = (await c.call('POST', `/connectors/connections/${connection.id}/authorize`)).body;
    const back = await consentAt(start.authorization_url);
    const refused = await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
      body: { state: back.state, code: back.code },
    });
    expectError(refused, 503, 'unavailable');
    expect(refused.body.error.message).toContain('non-public address');
    expect(slack.requests.filter((r) => r.path === '/api/oauth.v2.access')).toEqual([]);
    const row = await t.database.db
      .selectFrom('connector_connections')
      .selectAll()
      .where('id', '=', connection.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ state: 'needs_consent', credentials: null });

    const drive = await c.create({ provider: 'google_drive', name: 'Drive', config: { folder_ids: ['F1'] } });
    const unconfigured = await c.call('POST', `/connectors/connections/${drive.id}/authorize`);
    expectError(unconfigured, 503, 'unavailable');
    expect(unconfigured.body.error.message).toContain('ENGRAM_GOOGLE_DRIVE_CLIENT_ID');
    expect(
      await t.database.db
        .selectFrom('connector_oauth_states')
        .selectAll()
        .where('connection_id', '=', drive.id)
        .execute(),
    ).toEqual([]);

    // The organization brings its own Google app: consent uses its client; the secret is stored sealed, never shown.
    const secret = 'GOCSPX-organization-own-secret';
    const own = await c.call('PUT', '/integrations/google_drive/oauth-client', {
      body: { client_id: 'org-app.apps.googleusercontent.com', client_secret: secret },
    });
    expect(own.body).toEqual({
      provider: 'google_drive',
      client_id: 'org-app.apps.googleusercontent.com',
      source: 'organization',
    });
    const stored = await t.database.db
      .selectFrom('integration_settings')
      .selectAll()
      .where('organization_id', '=', t.organizationId)
      .where('provider', '=', 'google_drive')
      .executeTakeFirstOrThrow();
    expect(stored.oauth_client).not.toContain(secret);
    expect(Boolean(stored.enabled)).toBe(true);
    const consent = await c.call('POST', `/connectors/connections/${drive.id}/authorize`);
    expect(new URL(consent.body.authorization_url).searchParams.get('client_id')).toBe(
      'org-app.apps.googleusercontent.com',
    );
    expect((await c.call('GET', '/integrations')).text).not.toContain(secret);
    expect((await c.call('DELETE', '/integrations/google_drive/oauth-client')).body).toEqual({
      provider: 'google_drive',
      client_id: null,
      source: null,
    });
    expect((await c.call('DELETE', '/integrations/slack/oauth-client')).body).toEqual({
      provider: 'slack',
      client_id: SLACK_CLIENT.clientId,
      source: 'server',
    });
    expectError(await c.call('POST', `/connectors/connections/${drive.id}/authorize`), 503, 'unavailable');
    expectError(
      await c.call('PUT', '/integrations/web_crawler/oauth-client', { body: { client_id: 'x', client_secret: 'y' } }),
      400,
      'validation_error',
      'provider',
    );
    expectError(
      await c.call('PUT', '/integrations/nope/oauth-client', { body: { client_id: 'x', client_secret: 'y' } }),
      404,
      'not_found',
    );
    expect(t.logs.join('\n')).not.toContain(secret);
  });
});
