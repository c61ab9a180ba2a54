import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient, consentAt } from '../../testing/connectors.js';
import { SLACK_CLIENT, startFakeSlack, type FakeSlack } from '../../testing/fake-slack.js';
import { expectError } from '../../testing/memories.js';
import { decodeJson } from '../../store/database.js';

const REDIRECT = 'https://console.example.com/oauth/callback';

forEachDialect('Slack connector (OAuth consent, local Slack Web API)', (dialect) => {
  let slack: FakeSlack;
  beforeAll(async () => {
    slack = await startFakeSlack();
  });
  afterAll(() => slack?.close());
  const t = useTestApp(dialect, () => ({
    outbound: { allow: ['127.0.0.1'] },
    connectors: { redirectUrl: REDIRECT, vendors: { slack: { ...SLACK_CLIENT, baseUrl: slack.base } } },
  }));
  const owner = useOwner(t);
  const endUser = `slack-${dialect}`;
  const live = () =>
    t.database.db
      .selectFrom('memories')
      .selectAll()
      .where('end_user_id', '=', endUser)
      .where('deleted_at', 'is', null)
      .orderBy('created_at')
      .execute();
  const connectionRow = (id: number) =>
    t.database.db.selectFrom('connector_connections').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('consents, syncs channels and threads, reflects edits and deletions, refreshes the token, needs repair when revoked, and stops when cancelled', async () => {
    slack.messages.set('C0GENERAL', [
      { ts: '1700000000.000100', user: 'U0ALICE', text: 'The offsite is in Lisbon on May 3.' },
      { ts: '1700000100.000200', user: 'U0BOB', text: 'Who books the hotel?' },
      {
        ts: '1700000150.000300',
        user: 'U0ALICE',
        text: 'I do, <@U0BOB> handles flights.',
        thread_ts: '1700000100.000200',
      },
      { ts: '1700000160.000400', user: 'U0BOB', text: 'Fine by me.', thread_ts: '1700000100.000200' },
      { ts: '1700000200.000500', user: 'U0BOB', text: '', subtype: 'channel_join' },
      { ts: '1700000300.000600', user: 'U0ALICE', text: 'Budget is 900 euros per person.' },
    ]);
    slack.messages.set('C0RANDOM', [
      { ts: '1700000400.000700', user: 'U0BOB', text: 'The coffee machine on floor 2 is fixed.' },
    ]);
    const c = connectorsClient(t, owner);

    // A new Slack connection waits for consent; it cannot sync yet.
    const connection = await c.create({
      provider: 'slack',
      name: 'Workspace',
      end_user_id: endUser,
      config: { channels: ['#general', 'C0RANDOM'], page_size: 2 },
    });
    const created = (await c.call('GET', `/connectors/connections/${connection.id}`)).body;
    expect(created).toMatchObject({ state: 'needs_consent', has_credentials: false });
    expectError(await c.call('POST', `/connectors/connections/${connection.id}/sync`), 409, 'conflict');
    expectError(
      await c.call('POST', '/connectors/connections', {
        body: { provider: 'slack', name: 'x', config: { channels: ['#general'] }, credentials: { token: 'xoxb-1' } },
      }),
      400,
      'validation_error',
      'credentials',
    );

    // Consent: Slack's consent URL, with the state; Slack sends the browser back with a code.
    const authorize = await c.call('POST', `/connectors/connections/${connection.id}/authorize`);
    expect(authorize.status, authorize.text).toBe(200);
    const consentUrl = new URL(authorize.body.authorization_url);
    expect(`${consentUrl.origin}${consentUrl.pathname}`).toBe(`${slack.base}/oauth/v2/authorize`);
    expect(Object.fromEntries(consentUrl.searchParams)).toMatchObject({
      client_id: SLACK_CLIENT.clientId,
      redirect_uri: REDIRECT,
      state: authorize.body.state,
      response_type: 'code',
      scope: 'channels:read,channels:history,groups:read,groups:history,users:read',
    });
    expect(consentUrl.searchParams.has('code_challenge')).toBe(false);
    const back = await consentAt(authorize.body.authorization_url);
    expect(back.state).toBe(authorize.body.state);

    // The state is bound to the caller and the connection, and used once.
    const admin = await t.member('admin');
    const asAdmin = await t.call('POST', `/connectors/connections/${connection.id}/callback`, {
      token: admin.token,
      headers: { 'x-project-id': t.projectId },
      body: { state: back.state, code: back.code },
    });
    expectError(asAdmin, 400, 'validation_error', 'state');
    expectError(
      await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
        body: { state: 'forged-state-value', code: back.code },
      }),
      400,
      'validation_error',
      'state',
    );
    const done = await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
      body: { state: back.state, code: back.code },
    });
    expect(done.status, done.text).toBe(200);
    expect(done.body).toMatchObject({ state: 'active', state_reason: null, has_credentials: true });
    expectError(
      await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
        body: { state: back.state, code: back.code },
      }),
      400,
      'validation_error',
      'state',
    );
    const stored = await connectionRow(connection.id);
    expect(stored.credentials).not.toContain('xoxe');
    expect(
      await t.database.db
        .selectFrom('connector_oauth_states')
        .selectAll()
        .where('connection_id', '=', connection.id)
        .execute(),
    ).toEqual([]);

    // First sync: the second page of #general is rate limited once (429 + Retry-After), then answered.
    slack.rateLimitOnce.add('conversations.replies');
    const first = await c.waitForSync((await c.sync(connection.id)).id);
    expect(first).toMatchObject({ status: 'succeeded', progress: { created: 4, failed: 0, deleted: 0 } });
    expect(slack.requests.filter((r) => r.path === '/api/conversations.replies').length).toBe(2);
    let memories = await live();
    expect(memories.map((m) => [m.text, m.speaker])).toEqual([
      ['The offsite is in Lisbon on May 3.', 'Alice'],
      ['Who books the hotel?', 'Bob Kowalski'],
      ['I do, @Bob Kowalski handles flights.', 'Alice'],
      ['Fine by me.', 'Bob Kowalski'],
      ['Budget is 900 euros per person.', 'Alice'],
      ['The coffee machine on floor 2 is fixed.', 'Bob Kowalski'],
    ]);
    const reply = memories[2]!;
    expect(new Date(reply.created_at).toISOString()).toBe('2023-11-14T22:15:50.000Z');
    expect(reply.session_id).toBe('slack:C0GENERAL');
    expect(decodeJson<any>(reply.metadata).slack).toEqual({
      channel_id: 'C0GENERAL',
      channel: '#general',
      author: 'Alice',
      author_id: 'U0ALICE',
      ts: '1700000150.000300',
      thread_ts: '1700000100.000200',
      permalink:
        'https://softball.slack.com/archives/C0GENERAL/p1700000150000300?thread_ts=1700000100.000200&cid=C0GENERAL',
    });
    expect(reply.source).toBe('connector:slack');
    const objects = await c.objects(connection.id);
    expect(objects.map((o) => [o.source_id, o.memory_ids.length])).toEqual([
      ['C0GENERAL/1700000000.000100', 1],
      ['C0GENERAL/1700000100.000200', 3],
      ['C0GENERAL/1700000300.000600', 1],
      ['C0RANDOM/1700000400.000700', 1],
    ]);

    // An edit, a deleted message, a new reply; and the access token has expired (rotation): refreshed on the way.
    const general = slack.messages.get('C0GENERAL')!;
    Object.assign(general[5]!, {
      text: 'Budget is 950 euros per person.',
      edited: { user: 'U0ALICE', ts: '1700001000.000000' },
    });
    general.splice(0, 1);
    general.push({
      ts: '1700000170.000800',
      user: 'U0ALICE',
      text: 'Booked the Alfama hotel.',
      thread_ts: '1700000100.000200',
    });
    // A message by someone since removed from the workspace (users.info: user_not_found) keeps the id as the name.
    slack.messages.get('C0RANDOM')!.push({ ts: '1700000500.000900', user: 'U0GONE', text: 'Old news.' });
    slack.expireAccessToken();
    const before = stored.credentials;
    const second = await c.waitForSync((await c.sync(connection.id)).id);
    expect(second).toMatchObject({
      status: 'succeeded',
      progress: { created: 1, updated: 2, unchanged: 1, deleted: 1 },
    });
    expect(slack.grants).toEqual(['authorization_code', 'refresh_token']);
    expect((await connectionRow(connection.id)).credentials).not.toBe(before);
    memories = await live();
    expect(memories.map((m) => m.text)).toEqual([
      'Who books the hotel?',
      'I do, @Bob Kowalski handles flights.',
      'Fine by me.',
      'Booked the Alfama hotel.',
      'Budget is 950 euros per person.',
      'The coffee machine on floor 2 is fixed.',
      'Old news.',
    ]);
    expect(memories.at(-1)!.speaker).toBe('U0GONE');
    expect((await c.objects(connection.id)).find((o) => o.source_id === 'C0GENERAL/1700000000.000100')).toMatchObject({
      status: 'deleted',
      memory_ids: [],
    });

    // Forgetting a message leaves no copy: the memory is blanked, the object row holds no text.
    const forgotten = memories.find((m) => m.text.startsWith('Budget'))!;
    const forget = await t.call('DELETE', '/memory/forget', { endUser, body: { ids: [forgotten.id] } });
    expect(forget.status, forget.text).toBe(200);
    const row = await t.database.db
      .selectFrom('memories')
      .select(['text', 'deleted_at'])
      .where('id', '=', forgotten.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ text: '' });
    const objectRows = await t.database.db
      .selectFrom('connector_objects')
      .selectAll()
      .where('connection_id', '=', connection.id)
      .execute();
    expect(JSON.stringify(objectRows)).not.toContain('950 euros');

    // A sync cancelled mid-way: held on the second page of #general, cancelled, then released.
    const held = slack.hold('C0GENERAL');
    const third = await c.sync(connection.id);
    await held.reached;
    const cancel = await c.call('POST', `/connectors/syncs/${third.id}/cancel`);
    expect(cancel.status, cancel.text).toBe(200);
    held.release();
    expect(await c.waitForSync(third.id)).toMatchObject({ status: 'cancelled' });
    const cancelled = await t.database.db
      .selectFrom('connector_syncs')
      .selectAll()
      .where('id', '=', third.id)
      .executeTakeFirstOrThrow();
    expect(cancelled).toMatchObject({ status: 'cancelled' });
    expect(cancelled.deleted).toBe(0);
    expect((await live()).length).toBeGreaterThanOrEqual(5);

    // The user removes the app: the sync fails, the connection needs repair, memories stay.
    slack.revoke();
    const revoked = await c.waitForSync((await c.sync(connection.id)).id);
    expect(revoked).toMatchObject({ status: 'failed', error: expect.stringContaining('token_revoked') });
    expect(await connectionRow(connection.id)).toMatchObject({ state: 'needs_repair' });
    expect((await live()).length).toBeGreaterThanOrEqual(5);
    expectError(await c.call('POST', `/connectors/connections/${connection.id}/sync`), 409, 'conflict');

    // Repair re-runs consent.
    const repair = await c.call('POST', `/connectors/connections/${connection.id}/repair`);
    expect(repair.status, repair.text).toBe(200);
    expect(repair.body).toMatchObject({
      state: 'needs_repair',
      consent: { authorization_url: expect.stringContaining('/oauth/v2/authorize'), state: expect.any(String) },
    });
    const again = await consentAt(repair.body.consent.authorization_url);
    const repaired = await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
      body: { state: again.state, code: again.code },
    });
    expect(repaired.body).toMatchObject({ state: 'active' });
    expect(await c.waitForSync((await c.sync(connection.id)).id)).toMatchObject({ status: 'succeeded' });

    const audit = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target_type', '=', 'connection')
      .where('target_id', '=', String(connection.id))
      .execute();
    expect(audit.map((a) => a.action)).toEqual(
      expect.arrayContaining(['connection.authorize', 'connection.consent', 'connection.repair']),
    );
    expect(t.logs.join('\n')).not.toMatch(/xoxe/);
  });

  it('refuses consent it cannot start or finish', async () => {
    const c = connectorsClient(t, owner);
    const connection = await c.create({
      provider: 'slack',
      name: 'Refused',
      end_user_id: `${endUser}-refused`,
      config: { channels: ['#general'] },
    });
    const start = (await c.call('POST', `/connectors/connections/${connection.id}/authorize`)).body;
    // The user clicked "Cancel" at Slack: the state is used up, the connection still waits, with the reason.
    const refused = await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
      body: { state: start.state, error: 'access_denied' },
    });
    expect(refused.body).toMatchObject({
      state: 'needs_consent',
      state_reason: expect.stringContaining('access_denied'),
    });
    // A code Slack does not know.
    const next = (await c.call('POST', `/connectors/connections/${connection.id}/authorize`)).body;
    expectError(
      await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
        body: { state: next.state, code: 'not-a-code' },
      }),
      400,
      'validation_error',
      'code',
    );
    expect(await connectionRow(connection.id)).toMatchObject({ state: 'needs_consent', credentials: null });
    // A state for one connection does not complete another.
    const other = await c.create({
      provider: 'slack',
      name: 'Other',
      end_user_id: `${endUser}-other`,
      config: { channels: ['#general'] },
    });
    const third = (await c.call('POST', `/connectors/connections/${connection.id}/authorize`)).body;
    const code = (await consentAt(third.authorization_url)).code;
    expectError(
      await c.call('POST', `/connectors/connections/${other.id}/callback`, { body: { state: third.state, code } }),
      400,
      'validation_error',
      'state',
    );
    // Unknown channels are a configuration error once tokens exist.
    const back = await consentAt(
      (await c.call('POST', `/connectors/connections/${other.id}/authorize`)).body.authorization_url,
    );
    await c.call('POST', `/connectors/connections/${other.id}/callback`, {
      body: { state: back.state, code: back.code },
    });
    expectError(
      await c.call('PUT', `/connectors/connections/${other.id}/configuration`, {
        body: { values: { channels: ['#nowhere'] } },
      }),
      400,
      'validation_error',
      'config/channels',
    );
  });
});
