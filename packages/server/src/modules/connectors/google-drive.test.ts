import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient, consentAt } from '../../testing/connectors.js';
import { GOOGLE_CLIENT, startFakeGoogleDrive, type FakeGoogleDrive } from '../../testing/fake-google-drive.js';
import { expectError } from '../../testing/memories.js';
import { decodeJson, encodeJson } from '../../store/database.js';

const REDIRECT = 'https://console.example.com/oauth/callback';
const FOLDER = 'application/vnd.google-apps.folder';

forEachDialect('Google Drive connector (OAuth consent with PKCE, local Drive API)', (dialect) => {
  let google: FakeGoogleDrive;
  beforeAll(async () => {
    google = await startFakeGoogleDrive();
    google.put({ id: 'FHANDBOOK', name: 'Handbook', mimeType: FOLDER, parents: ['root'] });
    google.put({ id: 'FPOLICIES', name: 'Policies', mimeType: FOLDER, parents: ['FHANDBOOK'] });
    google.put({ id: 'FOTHER', name: 'Other', mimeType: FOLDER, parents: ['root'] });
    google.put({
      id: 'DOC1',
      name: 'Onboarding',
      mimeType: 'application/vnd.google-apps.document',
      parents: ['FHANDBOOK'],
      content: 'New staff get a laptop on day one.',
    });
    google.put({
      id: 'SHEET1',
      name: 'Prices',
      mimeType: 'application/vnd.google-apps.spreadsheet',
      parents: ['FHANDBOOK'],
      content: 'product,price\r\nTea,3\r\n',
    });
    google.put({
      id: 'MD1',
      name: 'leave.md',
      mimeType: 'text/markdown',
      parents: ['FPOLICIES'],
      content: '# Leave\n\nEveryone gets 25 days of paid leave.',
    });
    google.put({
      id: 'TXT9',
      name: 'elsewhere.txt',
      mimeType: 'text/plain',
      parents: ['FOTHER'],
      content: 'Not in the chosen folder.',
    });
  });
  afterAll(() => google?.close());
  const t = useTestApp(dialect, () => ({
    outbound: { allow: ['127.0.0.1'] },
    connectors: { redirectUrl: REDIRECT, vendors: { google_drive: { ...GOOGLE_CLIENT, baseUrl: google.base } } },
  }));
  const owner = useOwner(t);
  const endUser = `drive-${dialect}`;
  const texts = async () =>
    (
      await t.database.db
        .selectFrom('memories')
        .select('text')
        .where('end_user_id', '=', endUser)
        .where('deleted_at', 'is', null)
        .execute()
    )
      .map((m) => m.text)
      .sort();
  const connectionRow = (id: number) =>
    t.database.db.selectFrom('connector_connections').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('consents with PKCE, lists the folders first, then follows changes; refreshes on 401; needs repair when revoked', async () => {
    const c = connectorsClient(t, owner);
    expectError(
      await c.call('POST', '/connectors/connections', {
        body: { provider: 'google_drive', name: 'x', config: { folder_ids: ['../x'] } },
      }),
      400,
      'validation_error',
      'config/folder_ids/0',
    );
    const connection = await c.create({
      provider: 'google_drive',
      name: 'Drive',
      end_user_id: endUser,
      config: { folder_ids: ['FHANDBOOK'], page_size: 2 },
    });

    const start = (await c.call('POST', `/connectors/connections/${connection.id}/authorize`)).body;
    const url = new URL(start.authorization_url);
    expect(`${url.origin}${url.pathname}`).toBe(`${google.base}/o/oauth2/v2/auth`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: GOOGLE_CLIENT.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'https://www.googleapis.com/auth/drive.readonly',
      access_type: 'offline',
      prompt: 'consent',
      code_challenge_method: 'S256',
      state: start.state,
    });
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const back = await consentAt(start.authorization_url);
    // The first access token expires within the client's one-minute margin: refreshed before it is ever used.
    google.shortLivedNext = true;
    // The fake checks the PKCE verifier against the challenge at the token exchange.
    const done = await c.call('POST', `/connectors/connections/${connection.id}/callback`, {
      body: { state: back.state, code: back.code },
    });
    expect(done.body).toMatchObject({ state: 'active', has_credentials: true });
    expect((await connectionRow(connection.id)).credentials).not.toContain('ya29');
    expect(google.grants).toEqual(['authorization_code', 'refresh_token']);
    expect(google.requests.filter((r) => r.headers.authorization === `Bearer ${google.issued[0]}`)).toEqual([]);

    // First sync: files.list over the folder and its subfolder, two files a page; the first page is rate limited once.
    google.rateLimitOnce.add('/drive/v3/files');
    const first = await c.waitForSync((await c.sync(connection.id)).id);
    expect(first).toMatchObject({ status: 'succeeded', progress: { created: 3, failed: 0, deleted: 0 } });
    expect(await texts()).toEqual([
      'Everyone gets 25 days of paid leave.',
      'New staff get a laptop on day one.',
      'product: Tea; price: 3',
    ]);
    const lists = google.requests.filter((r) => r.path === '/drive/v3/files');
    expect(lists.map((r) => r.query.get('q'))).toEqual([
      "'FHANDBOOK' in parents and trashed = false",
      "'FHANDBOOK' in parents and trashed = false",
      "'FHANDBOOK' in parents and trashed = false",
      "'FPOLICIES' in parents and trashed = false",
    ]);
    const objects = await c.objects(connection.id);
    expect(objects.map((o) => [o.source_id, o.status, o.version])).toEqual([
      ['DOC1', 'synced', '1'],
      ['MD1', 'synced', '1'],
      ['SHEET1', 'synced', '1'],
    ]);
    const doc = await t.database.db
      .selectFrom('memories')
      .select(['metadata', 'source'])
      .where('id', '=', objects[0]!.memory_ids[0]!)
      .executeTakeFirstOrThrow();
    expect(doc.source).toBe('connector:google_drive');
    expect(decodeJson<any>(doc.metadata).file).toMatchObject({
      name: 'Onboarding.txt',
      source_id: 'DOC1',
      title: 'Onboarding',
      url: 'https://docs.google.com/document/d/DOC1/edit',
    });
    const cursor = decodeJson<any>((await connectionRow(connection.id)).cursor);
    expect(cursor).toEqual({ page_token: '8', folders: ['FHANDBOOK', 'FPOLICIES'] });

    // Changes: an edit, a trashed file, a file deleted for good, a new file, a change elsewhere; the access token has expired.
    google.put({
      id: 'DOC1',
      name: 'Onboarding',
      mimeType: 'application/vnd.google-apps.document',
      parents: ['FHANDBOOK'],
      content: 'New staff get a laptop and a badge on day one.',
    });
    google.trash('MD1');
    google.remove('SHEET1');
    google.put({
      id: 'TXT2',
      name: 'faq.txt',
      mimeType: 'text/plain',
      parents: ['FPOLICIES'],
      content: 'Parking is free for visitors.',
    });
    google.put({
      id: 'TXT9',
      name: 'elsewhere.txt',
      mimeType: 'text/plain',
      parents: ['FOTHER'],
      content: 'Still not in the chosen folder.',
    });
    google.expireAccessTokens();
    const listsBefore = google.requests.filter((r) => r.path === '/drive/v3/files').length;
    const second = await c.waitForSync((await c.sync(connection.id)).id);
    expect(second).toMatchObject({ status: 'succeeded', progress: { created: 1, updated: 1, deleted: 2, failed: 0 } });
    expect(google.requests.filter((r) => r.path === '/drive/v3/files').length).toBe(listsBefore);
    expect(google.grants).toEqual(['authorization_code', 'refresh_token', 'refresh_token']);
    expect(await texts()).toEqual(['New staff get a laptop and a badge on day one.', 'Parking is free for visitors.']);
    expect((await c.objects(connection.id)).map((o) => [o.source_id, o.status])).toEqual([
      ['DOC1', 'synced'],
      ['MD1', 'deleted'],
      ['SHEET1', 'deleted'],
      ['TXT2', 'synced'],
    ]);
    expect(decodeJson<any>((await connectionRow(connection.id)).cursor).page_token).toBe('13');

    // Cancelled mid-way: the cursor stays where it was, and the next sync reads the same changes.
    google.put({
      id: 'TXT2',
      name: 'faq.txt',
      mimeType: 'text/plain',
      parents: ['FPOLICIES'],
      content: 'Parking is free for visitors after six.',
    });
    const held = google.holdChanges();
    const third = await c.sync(connection.id);
    await held.reached;
    expect((await c.call('POST', `/connectors/syncs/${third.id}/cancel`)).status).toBe(200);
    held.release();
    expect(await c.waitForSync(third.id)).toMatchObject({ status: 'cancelled' });
    expect(decodeJson<any>((await connectionRow(connection.id)).cursor).page_token).toBe('13');
    const fourth = await c.waitForSync((await c.sync(connection.id)).id);
    expect(fourth.status).toBe('succeeded');
    expect(decodeJson<any>((await connectionRow(connection.id)).cursor).page_token).toBe('14');
    expect(await texts()).toContain('Parking is free for visitors after six.');

    // A page token Google no longer accepts: everything is listed again, nothing changes.
    const row = await connectionRow(connection.id);
    await t.database.db
      .updateTable('connector_connections')
      .set({ cursor: encodeJson({ page_token: '999', folders: ['FHANDBOOK', 'FPOLICIES'] }) })
      .where('id', '=', connection.id)
      .execute();
    const relisted = await c.waitForSync((await c.sync(connection.id)).id);
    expect(relisted).toMatchObject({
      status: 'succeeded',
      progress: { unchanged: 2, created: 0, updated: 0, deleted: 0 },
    });
    expect(decodeJson<any>((await connectionRow(connection.id)).cursor).page_token).toBe(
      decodeJson<any>(row.cursor).page_token,
    );

    // Access removed at Google: the refresh answers invalid_grant; the connection needs repair, memories stay.
    google.revoke();
    const revoked = await c.waitForSync((await c.sync(connection.id)).id);
    expect(revoked).toMatchObject({ status: 'failed', error: expect.stringContaining('invalid_grant') });
    expect(await connectionRow(connection.id)).toMatchObject({ state: 'needs_repair' });
    expect(await texts()).toHaveLength(2);
    const repair = await c.call('POST', `/connectors/connections/${connection.id}/repair`);
    expect(repair.body).toMatchObject({
      state: 'needs_repair',
      consent: { authorization_url: expect.stringContaining('code_challenge=') },
    });
  });
});
