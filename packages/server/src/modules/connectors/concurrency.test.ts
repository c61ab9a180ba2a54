import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { forEachDialect, useOwner, useTestApp } from '../../testing/harness.js';
import { connectorsClient, consentAt } from '../../testing/connectors.js';
import { GOOGLE_CLIENT, startFakeGoogleDrive, type FakeGoogleDrive } from '../../testing/fake-google-drive.js';
import { SLACK_CLIENT, startFakeSlack, type FakeMessage, type FakeSlack } from '../../testing/fake-slack.js';
import { holdOwnerLocks, lockWaiterCount, lockWaiters, untilLocked } from '../../testing/locks.js';
import { expectError } from '../../testing/memories.js';
import { until } from '../../testing/until.js';
import { JobRunner } from '../../jobs/runner.js';
import { decodeJson } from '../../store/database.js';
import { queueDueSyncs } from './syncs.js';
import type { SyncDeps } from './deps.js';
import { PURGE_LEASE_MS } from './store.js';

/**
 * Connectors when things happen at once: a sync taken over by another runner, a purge while syncs
 * are due or while another purge runs, configuration and credentials that change while a sync or a check uses the old ones.
 * The vendors (local fakes) hold an answer until the test releases it, which fixes the interleaving.
 */

const REDIRECT = 'https://console.example.com/oauth/callback';
const FOLDER = 'application/vnd.google-apps.folder';
const message = (ts: number, text: string): FakeMessage => ({ ts: `17000000${ts}.000100`, user: 'U0ALICE', text });

forEachDialect('connectors under concurrency', (dialect) => {
  let slack: FakeSlack;
  let google: FakeGoogleDrive;
  beforeAll(async () => {
    slack = await startFakeSlack();
    google = await startFakeGoogleDrive();
  });
  afterAll(async () => {
    await slack?.close();
    await google?.close();
  });
  const t = useTestApp(dialect, () => ({
    outbound: { allow: ['127.0.0.1'] },
    connectors: {
      redirectUrl: REDIRECT,
      vendors: {
        slack: { ...SLACK_CLIENT, baseUrl: slack.base },
        google_drive: { ...GOOGLE_CLIENT, baseUrl: google.base },
      },
    },
  }));
  const owner = useOwner(t);
  const connectionRow = (id: number) =>
    t.database.db.selectFrom('connector_connections').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const liveTexts = async (endUser: string) =>
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

  /** Consent at the fake vendor, as the user's browser and the redirect page would. */
  const consent = async (id: number) => {
    const c = connectorsClient(t, owner);
    const back = await consentAt(
      (await c.call('POST', `/connectors/connections/${id}/authorize`)).body.authorization_url,
    );
    const done = await c.call('POST', `/connectors/connections/${id}/callback`, {
      body: { state: back.state, code: back.code },
    });
    expect(done.status, done.text).toBe(200);
    return done.body;
  };
  /** A consented Slack connection reading #general one message a page, its content filed under `endUser`. */
  const slackConnection = async (endUser: string, extra: Record<string, unknown> = {}) => {
    const c = connectorsClient(t, owner);
    const connection = await c.create({
      provider: 'slack',
      name: endUser,
      end_user_id: endUser,
      config: { channels: ['#general'], page_size: 1, include_threads: false },
      ...extra,
    });
    expect(await consent(connection.id)).toMatchObject({ state: 'active' });
    return connection.id;
  };

  it('a sync taken over after its lease ran out: the runner that stalled writes nothing more', async () => {
    const c = connectorsClient(t, owner);
    const endUser = `taken-over-${dialect}`;
    const general = [
      message(10, 'The offsite is in Lisbon.'),
      message(20, 'The budget is 900 euros.'),
      message(30, 'Flights are booked.'),
    ];
    slack.messages.set('C0GENERAL', general);
    const id = await slackConnection(endUser);
    expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({ status: 'succeeded', progress: { created: 3 } });

    // The app's runner reads the first page (newest first), then waits for the second one.
    general[1]!.text = 'The budget is 950 euros.';
    const held = slack.hold('C0GENERAL');
    const sync = await c.sync(id);
    await held.reached;
    const { job_id: jobId } = await t.database.db
      .selectFrom('connector_syncs')
      .select('job_id')
      .where('id', '=', sync.id)
      .executeTakeFirstOrThrow();
    const audits = () =>
      t.database.db
        .selectFrom('audit_log')
        .select('id')
        .where('action', '=', 'connector.sync')
        .where('target_id', '=', String(id))
        .execute();
    const auditsBefore = (await audits()).length;
    // It stalls past its lease; another runner takes the job over and runs the sync to its end.
    await t.database.db
      .updateTable('jobs')
      .set({ locked_until: new Date(0).toISOString() })
      .where('id', '=', jobId!)
      .execute();
    const other = new JobRunner(t.database, t.services.jobs, { info() {}, warn() {}, error() {} });
    other.start();
    try {
      expect(await c.waitForSync(sync.id)).toMatchObject({
        status: 'succeeded',
        progress: { seen: 3, updated: 1, unchanged: 2 },
      });
    } finally {
      await other.stop();
    }
    // The message changes again; the stalled runner now reads it and would replace what the other one stored.
    general[1]!.text = 'The budget is 1000 euros.';
    held.release();
    await until(
      async () => t.logs.some((l) => l.includes('this attempt stopped')) || (await audits()).length > auditsBefore + 1,
      'the stalled runner to stop (or finish)',
      10_000,
    );

    const done = await t.database.db
      .selectFrom('connector_syncs')
      .selectAll()
      .where('id', '=', sync.id)
      .executeTakeFirstOrThrow();
    expect(done).toMatchObject({ status: 'succeeded', seen: 3, updated: 1, unchanged: 2 });
    expect((await audits()).length).toBe(auditsBefore + 1);
    expect(
      await t.database.db
        .selectFrom('jobs')
        .select(['status', 'attempts'])
        .where('id', '=', jobId!)
        .executeTakeFirstOrThrow(),
    ).toEqual({ status: 'succeeded', attempts: 2 });
    expect(await liveTexts(endUser)).toEqual([
      'Flights are booked.',
      'The budget is 950 euros.',
      'The offsite is in Lisbon.',
    ]);
    // Every live memory is one an object names, so purging the connection forgets it.
    const live = await t.database.db
      .selectFrom('memories')
      .select('id')
      .where('end_user_id', '=', endUser)
      .where('deleted_at', 'is', null)
      .execute();
    expect((await c.objects(id)).flatMap((o) => o.memory_ids).sort()).toEqual(live.map((m) => m.id).sort());
  });

  it.runIf(dialect === 'postgres')(
    'no sync is queued, by schedule or by hand, while a purge is under way',
    async () => {
      const c = connectorsClient(t, owner);
      const endUser = `purged-${dialect}`;
      slack.messages.set('C0GENERAL', [message(10, 'The office opens at nine.'), message(20, 'Lunch is at noon.')]);
      const id = await slackConnection(endUser, { schedule_minutes: 5 });
      expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { created: 2 },
      });

      // Another transaction holds the end user's revision row: the purge's first batch waits for it.
      const ownerLock = await holdOwnerLocks(t, [endUser]);
      const purging = c.call('POST', `/connectors/connections/${id}/purge`);
      await until(
        async () => {
          const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%end_users%'`.execute(
            t.database.db,
          );
          return rows[0]!.n > 0;
        },
        "the purge to wait for the end user's row",
        10_000,
      );

      const deps: SyncDeps = {
        database: t.database,
        jobs: t.services.jobs,
        secret: t.services.secretKey,
        outbound: t.services.config.outbound,
        erase: t.services.erase,
        connectors: t.services.config.connectors,
        reader: t.services.reader,
      };
      expect(await queueDueSyncs(deps, new Date(Date.now() + 6 * 60_000))).toEqual([]);
      const manual = await c.call('POST', `/connectors/connections/${id}/sync`);
      expectError(manual, 409, 'conflict');
      expect(manual.body.error.message).toContain('being purged');
      await ownerLock.release();

      const purged = await purging;
      expect(purged.body).toEqual({ id, memories_forgotten: 2 });
      expect(await liveTexts(endUser)).toEqual([]);
      expect(await c.objects(id)).toEqual([]);
      expect(await connectionRow(id)).toMatchObject({ purging_since: null, cursor: null, state: 'active' });
      // Done: syncs are queued again.
      expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { created: 2 },
      });
    },
  );

  const syncsOf = async (id: number) =>
    (await t.database.db.selectFrom('connector_syncs').select('id').where('connection_id', '=', id).execute()).length;
  const purgeAudits = async (id: number) =>
    (
      await t.database.db
        .selectFrom('audit_log')
        .select('id')
        .where('action', '=', 'connection.purge')
        .where('target_id', '=', String(id))
        .execute()
    ).length;

  it.runIf(dialect === 'postgres')(
    'two purges of one connection at once: the second is 409 while the first runs, which alone forgets and ends the purge',
    async () => {
      const c = connectorsClient(t, owner);
      const endUser = `purged-twice-${dialect}`;
      slack.messages.set('C0GENERAL', [message(10, 'The wiki moved.'), message(20, 'Backups run at two.')]);
      const id = await slackConnection(endUser);
      expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { created: 2 },
      });
      const syncsBefore = await syncsOf(id);

      // The first purge has marked the connection; its first batch waits for the end user's revision row.
      const owners = await holdOwnerLocks(t, [endUser]);
      const first = c.call('POST', `/connectors/connections/${id}/purge`);
      await lockWaiters(t, 1, 'the first purge to wait for the end user');
      let answered = false;
      const second = c.call('POST', `/connectors/connections/${id}/purge`).finally(() => (answered = true));
      // Refused at once; a second purge that ran would queue behind the same lock instead.
      await untilLocked(
        t,
        async () => answered || (await lockWaiterCount(t)) >= 2,
        'the second purge to answer (or wait behind the first)',
      );
      const answeredWhileHeld = answered;
      const removal = answeredWhileHeld ? await c.call('DELETE', `/connectors/connections/${id}`) : undefined;
      expectError(await c.call('POST', `/connectors/connections/${id}/sync`), 409, 'conflict');
      await owners.release();

      const [purged, refused] = await Promise.all([first, second]);
      expectError(refused, 409, 'conflict');
      expect(refused.body.error.message).toContain('already being purged');
      expect(answeredWhileHeld).toBe(true);
      expectError(removal!, 409, 'conflict');
      expect(purged.status, purged.text).toBe(200);
      expect(purged.body).toEqual({ id, memories_forgotten: 2 });
      expect(await liveTexts(endUser)).toEqual([]);
      expect(await c.objects(id)).toEqual([]);
      expect(await purgeAudits(id)).toBe(1);
      expect(await syncsOf(id)).toBe(syncsBefore);
      expect(await connectionRow(id)).toMatchObject({ purging_since: null, cursor: null, state: 'active' });
      expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { created: 2 },
      });
    },
  );

  it.runIf(dialect === 'postgres')(
    'a purge that stalled past its lease and was taken over commits nothing more; the one that took over ends it',
    async () => {
      const c = connectorsClient(t, owner);
      const endUser = `purge-taken-over-${dialect}`;
      slack.messages.set('C0GENERAL', [message(10, 'Payroll is on the 25th.'), message(20, 'The VPN changed.')]);
      const id = await slackConnection(endUser);
      expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({
        status: 'succeeded',
        progress: { created: 2 },
      });

      const owners = await holdOwnerLocks(t, [endUser]);
      const stalled = c.call('POST', `/connectors/connections/${id}/purge`);
      await lockWaiters(t, 1, 'the first purge to wait for the end user');
      // It stalls past its lease; the next purge takes the connection over and waits behind the same lock.
      await t.database.db
        .updateTable('connector_connections')
        .set({ purging_since: new Date(Date.now() - PURGE_LEASE_MS - 1000).toISOString() })
        .where('id', '=', id)
        .execute();
      const next = c.call('POST', `/connectors/connections/${id}/purge`);
      await lockWaiters(t, 2, 'the second purge to wait behind it');
      await owners.release();

      const [lost, purged] = await Promise.all([stalled, next]);
      expectError(lost, 409, 'conflict');
      expect(lost.body.error.message).toContain('took over');
      expect(purged.status, purged.text).toBe(200);
      expect(purged.body).toEqual({ id, memories_forgotten: 2 });
      expect(await liveTexts(endUser)).toEqual([]);
      expect(await purgeAudits(id)).toBe(1);
      expect(await connectionRow(id)).toMatchObject({ purging_since: null, cursor: null });
    },
  );

  it('a purge under way elsewhere makes the next one 409; once its mark lapsed (it died), the next purge finishes it', async () => {
    const c = connectorsClient(t, owner);
    const endUser = `purge-lapsed-${dialect}`;
    slack.messages.set('C0GENERAL', [message(10, 'The printer is fixed.'), message(20, 'Parking is full.')]);
    const id = await slackConnection(endUser);
    expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({ status: 'succeeded', progress: { created: 2 } });
    const markAt = (ms: number) =>
      t.database.db
        .updateTable('connector_connections')
        .set({ purging_since: new Date(ms).toISOString() })
        .where('id', '=', id)
        .execute();

    // Another process's purge marked the connection a moment ago.
    await markAt(Date.now() - 1000);
    for (const [method, url] of [
      ['POST', `/connectors/connections/${id}/purge`],
      ['DELETE', `/connectors/connections/${id}`],
    ] as const) {
      const refused = await c.call(method, url);
      expectError(refused, 409, 'conflict');
      expect(refused.body.error.message).toContain('already being purged');
    }
    expect(await liveTexts(endUser)).toHaveLength(2);

    // That process died: its mark is not renewed. Past the lease, syncs still wait, and the next purge finishes the work.
    await markAt(Date.now() - PURGE_LEASE_MS - 1000);
    const sync = await c.call('POST', `/connectors/connections/${id}/sync`);
    expectError(sync, 409, 'conflict');
    expect(sync.body.error.message).toContain('stopped half way');
    const purged = await c.call('POST', `/connectors/connections/${id}/purge`);
    expect(purged.status, purged.text).toBe(200);
    expect(purged.body).toEqual({ id, memories_forgotten: 2 });
    expect(await liveTexts(endUser)).toEqual([]);
    expect(await connectionRow(id)).toMatchObject({ purging_since: null, cursor: null });
    expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({ status: 'succeeded', progress: { created: 2 } });
  });

  it('a sync that read the old configuration leaves the cursor that new configuration reset', async () => {
    const c = connectorsClient(t, owner);
    google.put({ id: 'FA', name: 'A', mimeType: FOLDER, parents: ['root'] });
    google.put({ id: 'FB', name: 'B', mimeType: FOLDER, parents: ['root'] });
    google.put({ id: 'DA', name: 'a.txt', mimeType: 'text/plain', parents: ['FA'], content: 'Folder A says hello.' });
    google.put({ id: 'DB', name: 'b.txt', mimeType: 'text/plain', parents: ['FB'], content: 'Folder B says hello.' });
    const connection = await c.create({
      provider: 'google_drive',
      name: 'Drive',
      end_user_id: `configured-${dialect}`,
      config: { folder_ids: ['FA'] },
    });
    expect(await consent(connection.id)).toMatchObject({ state: 'active' });
    expect(await c.waitForSync((await c.sync(connection.id)).id)).toMatchObject({
      status: 'succeeded',
      progress: { created: 1 },
    });
    expect(decodeJson<any>((await connectionRow(connection.id)).cursor).folders).toEqual(['FA']);

    // An incremental sync reads changes of folder A; meanwhile folder B is chosen instead.
    const held = google.holdChanges();
    const sync = await c.sync(connection.id);
    await held.reached;
    const saved = await c.call('PUT', `/connectors/connections/${connection.id}/configuration`, {
      body: { values: { folder_ids: ['FB'] } },
    });
    expect(saved.status, saved.text).toBe(200);
    held.release();
    expect(await c.waitForSync(sync.id)).toMatchObject({ status: 'succeeded' });
    expect((await connectionRow(connection.id)).cursor).toBeNull();
    // So the next sync lists folder B whole.
    expect(await c.waitForSync((await c.sync(connection.id)).id)).toMatchObject({
      status: 'succeeded',
      progress: { created: 1 },
    });
    expect(await liveTexts(`configured-${dialect}`)).toEqual(['Folder B says hello.']);
  });

  it('a refresh token another refresh already spent: the tokens that refresh stored are used', async () => {
    const c = connectorsClient(t, owner);
    slack.messages.set('C0GENERAL', [message(10, 'Standup is at ten.')]);
    const id = await slackConnection(`spent-${dialect}`);
    slack.expireAccessToken();
    // A sync has read the tokens and waits for Slack; a repair refreshes them (Slack rotates the refresh token) meanwhile.
    const held = slack.holdCall('auth.test');
    const sync = await c.sync(id);
    await held.reached;
    expect((await c.call('POST', `/connectors/connections/${id}/repair`)).body).toMatchObject({ state: 'active' });
    const refreshed = (await connectionRow(id)).credentials;
    held.release();
    // The sync's refresh token is spent: it takes the tokens the repair stored.
    expect(await c.waitForSync(sync.id)).toMatchObject({ status: 'succeeded', progress: { created: 1 } });
    expect(slack.grants.slice(-2)).toEqual(['refresh_token', 'refresh_token']);
    expect(await connectionRow(id)).toMatchObject({ state: 'active', credentials: refreshed });
  });

  it("a refresh answered after a new consent keeps the consent's tokens", async () => {
    const c = connectorsClient(t, owner);
    slack.messages.set('C0GENERAL', [message(10, 'Retro on Friday.')]);
    const id = await slackConnection(`reconsented-${dialect}`);
    slack.expireAccessToken();
    const held = slack.holdCall('oauth.v2.access');
    const sync = await c.sync(id);
    await held.reached;
    // The sync's refresh is under way at Slack when the user consents again.
    expect(await consent(id)).toMatchObject({ state: 'active' });
    const consented = (await connectionRow(id)).credentials;
    held.release();
    expect(await c.waitForSync(sync.id)).toMatchObject({ status: 'succeeded' });
    expect(await connectionRow(id)).toMatchObject({ state: 'active', credentials: consented });
  });

  it('a repair that checked revoked tokens leaves the state a new consent set', async () => {
    const c = connectorsClient(t, owner);
    slack.messages.set('C0GENERAL', [message(10, 'Demo on Thursday.')]);
    const id = await slackConnection(`repaired-${dialect}`);
    slack.revoke();
    const held = slack.holdCall('auth.test');
    const repairing = c.call('POST', `/connectors/connections/${id}/repair`);
    await held.reached;
    // The user consents again while the repair waits for Slack's answer about the old token.
    expect(await consent(id)).toMatchObject({ state: 'active' });
    held.release();
    const repaired = await repairing;
    expect(repaired.status, repaired.text).toBe(200);
    expect(repaired.body).toMatchObject({ state: 'active', state_reason: null });
    expect(await connectionRow(id)).toMatchObject({ state: 'active' });
  });

  it('a sync that fails on revoked tokens leaves the state a new consent set', async () => {
    const c = connectorsClient(t, owner);
    slack.messages.set('C0GENERAL', [message(10, 'One.'), message(20, 'Two.'), message(30, 'Three.')]);
    const id = await slackConnection(`resynced-${dialect}`);
    const held = slack.hold('C0GENERAL');
    const sync = await c.sync(id);
    await held.reached;
    // The user removes the app and consents again; the sync still holds the old token.
    slack.revoke();
    expect(await consent(id)).toMatchObject({ state: 'active' });
    held.release();
    expect(await c.waitForSync(sync.id)).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('token_revoked'),
    });
    expect(await connectionRow(id)).toMatchObject({ state: 'active' });
    expect(await c.waitForSync((await c.sync(id)).id)).toMatchObject({ status: 'succeeded' });
  });
});
