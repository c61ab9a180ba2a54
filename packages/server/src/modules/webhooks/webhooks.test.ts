import { afterAll, beforeAll, expect, it } from 'vitest';
import { sql, type Transaction } from 'kysely';
import { Webhook } from 'standardwebhooks';
import { subscribe as setSubscription } from '../../core/event-subscriptions.js';
import { decodeJson, encodeJson } from '../../store/database.js';
import type { DB } from '../../store/schema.js';
import { forEachDialect, HARNESS_SUBSCRIBER, useOwner, useTestApp } from '../../testing/harness.js';
import { holdUncommitted, untilLocked } from '../../testing/locks.js';
import { expectError } from '../../testing/memories.js';
import { Receiver } from '../../testing/receiver.js';
import { purgeEndedDeliveries } from './deliveries.js';
import { until } from '../../testing/until.js';

const FAST = { schedule_seconds: [0, 1, 1, 1, 1] };

forEachDialect('webhooks', (dialect) => {
  const t = useTestApp(dialect, {
    webhooks: { allowHosts: ['127.0.0.1'], allowHttp: true, timeoutMs: 2000, retentionDays: 30 },
  });
  const owner = useOwner(t);
  const receiver = new Receiver();
  // Only the endpoints' own subscriptions bring events here: the outbox keeps nothing else.
  beforeAll(() => setSubscription(t.database.db, HARNESS_SUBSCRIBER, null));
  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());

  const as = (extra: { project?: string } = {}) => ({
    token: owner.token,
    headers: { 'x-project-id': extra.project ?? t.projectId },
  });
  async function subscribe(path: string, body: Record<string, unknown> = {}) {
    const res = await t.call('POST', '/org/webhooks', {
      ...as(),
      body: { name: path, url: `${receiver.url}${path}`, events: ['memory.created'], retry_config: FAST, ...body },
    });
    expect(res.status, res.text).toBe(201);
    receiver.verifyWith(path, res.body.secret);
    return res.body as { id: number; secret: string };
  }
  const addMemory = async (text: string) =>
    (await t.call('POST', '/memory/add', { body: { text, tags: ['hook'] } })).body;
  const subscriptionOf = async (id: number) =>
    (
      await t.database.db
        .selectFrom('event_subscriptions')
        .select(['organization_id', 'project_id', 'type'])
        .where('subscriber', '=', `webhook_endpoint:${id}`)
        .orderBy('type')
        .execute()
    ).map((s) => [s.organization_id, s.project_id, s.type]);
  const deliveries = (id: number, query = '') => t.call('GET', `/org/webhooks/${id}/deliveries${query}`, as());
  /** Backends waiting for a row lock in a statement whose text is like `query` (PostgreSQL). */
  const waitingIn = async (query: string) =>
    (
      await sql<{ pid: number; xact_start: string }>`SELECT pid, xact_start::text FROM pg_stat_activity
    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE ${query}`.execute(t.database.db)
    ).rows;
  /**
   * Runs `operation` while another transaction has made `change` and not committed it; commits it once a
   * statement like `query` waits for a row lock (PostgreSQL), and answers what the operation answers.
   */
  async function whileChanging<T>(
    change: (trx: Transaction<DB>) => Promise<unknown>,
    operation: () => Promise<T>,
    query = '%webhook_endpoints%',
  ): Promise<T> {
    const other = await holdUncommitted(t, change, { commit: true });
    const answer = operation();
    await until(
      async () => (await waitingIn(query)).length > 0,
      `a statement like ${query} to wait for the changed row`,
      10_000,
    );
    await other.release();
    return answer;
  }

  it('creates, reads, lists, updates and deletes endpoints; the secret is shown once and stored sealed; audit rows', async () => {
    const created = await subscribe('/crud', {
      description: 'orders',
      signature_config: { rotation_overlap_seconds: 60 },
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(created).toMatchObject({
      name: '/crud',
      url: `${receiver.url}/crud`,
      description: 'orders',
      events: ['memory.created'],
      enabled: true,
      state: 'enabled',
      project_id: t.projectId,
      retry_config: { schedule_seconds: FAST.schedule_seconds, disable_after_seconds: 432000 },
      signature_config: { rotation_overlap_seconds: 60 },
    });
    const row = await t.database.db
      .selectFrom('webhook_endpoints')
      .select('secret')
      .where('id', '=', created.id)
      .executeTakeFirstOrThrow();
    expect(row.secret).not.toContain(created.secret.slice(6));
    const got = await t.call('GET', `/org/webhooks/${created.id}`, as());
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    const { secret: _secret, ...view } = created;
    expect(got.body).toEqual(view);
    expect(await subscriptionOf(created.id)).toEqual([[t.organizationId, t.projectId, 'memory.created']]);
    const list = await t.call('GET', '/org/webhooks?limit=1', as());
    expect(list.body).toMatchObject({ offset: 0, limit: 1 });
    expect(list.body.items[0].secret).toBeUndefined();

    const updated = await t.call('PATCH', `/org/webhooks/${created.id}`, {
      ...as(),
      body: {
        name: 'renamed',
        events: ['memory.created', 'memory.updated'],
        retry_config: { disable_after_seconds: 3600 },
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toEqual({
      ...view,
      name: 'renamed',
      events: ['memory.created', 'memory.updated'],
      retry_config: { schedule_seconds: FAST.schedule_seconds, disable_after_seconds: 3600 },
      updated_at: expect.any(String),
    });
    expect(await subscriptionOf(created.id)).toEqual([
      [t.organizationId, t.projectId, 'memory.created'],
      [t.organizationId, t.projectId, 'memory.updated'],
    ]);

    const rotated = await t.call('POST', `/org/webhooks/${created.id}/rotate-secret`, as());
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(created.secret);

    const deleted = await t.call('DELETE', `/org/webhooks/${created.id}`, as());
    expect(deleted.status).toBe(200);
    expect((await t.call('GET', `/org/webhooks/${created.id}`, as())).status).toBe(404);
    expect(await subscriptionOf(created.id)).toEqual([]);
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select(['action', 'actor_id'])
      .where('target_type', '=', 'webhook_endpoint')
      .where('target_id', '=', String(created.id))
      .orderBy('id')
      .execute();
    expect(audit.map((a) => a.action)).toEqual([
      'webhook.create',
      'webhook.update',
      'webhook.rotate_secret',
      'webhook.delete',
    ]);
    expect(audit.every((a) => a.actor_id === owner.userId)).toBe(true);
  });

  it('refuses bad input with 400 naming the field', async () => {
    const bad = async (body: Record<string, unknown>, field: string) => {
      const res = await t.call('POST', '/org/webhooks', {
        ...as(),
        body: { name: 'x', url: `${receiver.url}/x`, events: ['memory.created'], ...body },
      });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.field, JSON.stringify(body)).toBe(field);
    };
    await bad({ url: 'not a url' }, 'url');
    await bad({ url: 'ftp://example.com/hook' }, 'url');
    await bad({ url: 'http://10.0.0.1/hook' }, 'url');
    await bad({ url: 'http://169.254.169.254/latest' }, 'url');
    await bad({ url: 'http://[::ffff:192.168.0.1]/hook' }, 'url');
    await bad({ url: 'http://localhost.:1/hook' }, 'url');
    await bad({ events: [] }, 'events');
    await bad({ events: ['memory.exploded'] }, 'events/0');
    await bad({ retry_config: { schedule_seconds: [] } }, 'retry_config/schedule_seconds');
    await bad({ retry_config: { schedule_seconds: [-1] } }, 'retry_config/schedule_seconds/0');
    await bad({ retry_config: { attempts: 3 } }, 'retry_config/attempts');
    const endpoint = await subscribe('/bad-input');
    const patch = await t.call('PATCH', `/org/webhooks/${endpoint.id}`, {
      ...as(),
      body: { url: 'http://192.168.1.1/' },
    });
    expect(patch.body.error.field).toBe('url');
    expect(
      (await t.call('PATCH', `/org/webhooks/${endpoint.id}`, { ...as(), body: { events: [] } })).body.error.field,
    ).toBe('events');
    expect(
      (await t.call('PATCH', `/org/webhooks/${endpoint.id}`, { ...as(), body: { secret: 'whsec_x' } })).body.error
        .field,
    ).toBe('secret');
    const noProject = await t.call('GET', '/org/webhooks', { token: owner.token });
    expect(noProject.status).toBe(400);
    expect(noProject.body.error.field).toBe('X-Project-ID');
  });

  it('answers 404 for endpoints of other projects and organizations, 403 without the capability', async () => {
    const endpoint = await subscribe('/scoped');
    const other = await t.call('POST', '/org/projects', { token: owner.token, body: { name: 'Elsewhere' } });
    for (const [method, path] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['GET', '/health'],
      ['POST', '/pause'],
      ['POST', '/rotate-secret'],
      ['POST', '/test'],
      ['GET', '/deliveries'],
    ] as const) {
      const res = await t.call(method, `/org/webhooks/${endpoint.id}${path}`, {
        ...as({ project: other.body.id }),
        ...(method === 'PATCH' ? { body: { name: 'no' } } : {}),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const stranger = await t.otherTenant();
    const outsider = await t.member('owner', { organizationId: stranger.organizationId });
    expect(
      (
        await t.call('GET', `/org/webhooks/${endpoint.id}`, {
          token: outsider.token,
          headers: { 'x-project-id': stranger.projectId },
        })
      ).status,
    ).toBe(404);
    expect(
      (
        await t.call('GET', `/org/webhooks/${endpoint.id}`, {
          token: outsider.token,
          headers: { 'x-project-id': t.projectId },
        })
      ).status,
    ).toBe(404);
    const member = await t.member('member');
    expect(
      (await t.call('GET', '/org/webhooks', { token: member.token, headers: { 'x-project-id': t.projectId } })).status,
    ).toBe(403);
    const readOnly = await t.login({ scopes: ['webhooks:read'] });
    expect(
      (
        await t.call('DELETE', `/org/webhooks/${endpoint.id}`, {
          token: readOnly.token,
          headers: { 'x-project-id': t.projectId },
        })
      ).status,
    ).toBe(403);
  });

  it('lists event types with payload schemas', async () => {
    const res = await t.call('GET', '/org/webhooks/event-types', { token: owner.token });
    expect(res.status).toBe(200);
    const types = res.body.items.map((i: { type: string }) => i.type);
    expect(types).toEqual(
      expect.arrayContaining([
        'memory.created',
        'memory.updated',
        'memory.deleted',
        'end_user.purged',
        'project.updated',
        'project.deleted',
        'api_key.created',
        'api_key.revoked',
        'webhook.test',
        'endpoint.disabled',
      ]),
    );
    expect(
      res.body.items.find((i: { type: string }) => i.type === 'memory.created').payload_schema.properties.memory,
    ).toBeDefined();
    // Naming a project is optional here, but a project of another organization is 404, as on every other route.
    expect(
      (
        await t.call('GET', '/org/webhooks/event-types', {
          token: owner.token,
          headers: { 'x-project-id': t.projectId },
        })
      ).status,
    ).toBe(200);
    const stranger = await t.otherTenant();
    expectError(
      await t.call('GET', '/org/webhooks/event-types', {
        token: owner.token,
        headers: { 'x-project-id': stranger.projectId },
      }),
      404,
      'not_found',
    );
  });

  it('delivers signed memory events carrying the memory; after a rotation both secrets sign', async () => {
    const endpoint = await subscribe('/signed', { events: ['memory.created', 'memory.updated', 'memory.deleted'] });
    const memory = await addMemory('Prefers window seats');
    const [first] = await until(
      () => receiver.at('/signed').length > 0 && receiver.at('/signed'),
      'the first delivery',
    );
    expect(first!.verified).toBe(true);
    expect(new Webhook(endpoint.secret).verify(first!.body, first!.headers)).toEqual({
      type: 'memory.created',
      timestamp: expect.any(String),
      data: { memory, tenant_id: null },
    });
    expect(first!.headers['webhook-id']).toMatch(/^msg_/);

    const rotated = (await t.call('POST', `/org/webhooks/${endpoint.id}/rotate-secret`, as())).body;
    receiver.verifyWith('/signed', endpoint.secret, rotated.secret);
    await t.call('PATCH', `/memory/${memory.id}`, { body: { tags: ['changed'] } });
    const second = (await until(() => receiver.at('/signed').length > 1 && receiver.at('/signed'), 'the update'))[1]!;
    expect(second.verified).toBe(true);
    expect(second.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(JSON.parse(second.body)).toMatchObject({
      type: 'memory.updated',
      data: { fields: ['tags'], memory: { id: memory.id, tags: ['changed'] } },
    });
  });

  it('survives a receiver outage of several attempts: nothing lost, the same id and body on every retry', async () => {
    receiver.set('/outage', 'fail');
    const endpoint = await subscribe('/outage');
    const memories = [await addMemory('Outage one'), await addMemory('Outage two'), await addMemory('Outage three')];
    await until(() => receiver.at('/outage').length >= 9, 'three failed attempts of each');
    receiver.set('/outage', 'ok');
    await until(async () => (await deliveries(endpoint.id, '?status=succeeded')).body.total === 3, 'recovery');
    const byId = new Map<string, Set<string>>();
    for (const r of receiver.at('/outage'))
      byId.set(r.headers['webhook-id']!, (byId.get(r.headers['webhook-id']!) ?? new Set()).add(r.body));
    expect(byId.size).toBe(3);
    for (const bodies of byId.values()) expect(bodies.size).toBe(1);
    expect([...byId.values()].map((b) => JSON.parse([...b][0]!).data.memory.id).sort()).toEqual(
      memories.map((m) => m.id).sort(),
    );
    const list = await deliveries(endpoint.id);
    const detail = await t.call('GET', `/org/webhooks/${endpoint.id}/deliveries/${list.body.items[0].id}`, as());
    expect(detail.body.status).toBe('succeeded');
    expect(
      detail.body.attempt_log
        .slice(0, 3)
        .map((a: { status_code: number; response_body: string; succeeded: boolean }) => [
          a.status_code,
          a.response_body,
          a.succeeded,
        ]),
    ).toEqual([
      [500, 'receiver is down', false],
      [500, 'receiver is down', false],
      [500, 'receiver is down', false],
    ]);
    expect(detail.body.attempt_log.at(-1)).toMatchObject({
      status_code: 200,
      response_body: 'thanks',
      succeeded: true,
      error: null,
    });
    const health = await t.call('GET', `/org/webhooks/${endpoint.id}/health`, as());
    expect(health.body).toMatchObject({
      state: 'enabled',
      consecutive_failures: 0,
      failing_since: null,
      pending_deliveries: 0,
      last_success_at: expect.any(String),
      last_failure_at: expect.any(String),
    });
    expect(health.body.success_rate_24h).toBeGreaterThan(0);
    expect(health.body.success_rate_24h).toBeLessThan(1);
    expect(health.body.p50_latency_ms_24h).toEqual(expect.any(Number));
  });

  it('exhausts a delivery after its schedule, then replays it; retries one delivery; filters deliveries', async () => {
    receiver.set('/exhaust', 'fail');
    const endpoint = await subscribe('/exhaust', { retry_config: { schedule_seconds: [0, 1] } });
    await addMemory('Will exhaust');
    await until(async () => (await deliveries(endpoint.id, '?status=exhausted')).body.total === 1, 'exhaustion');
    expect((await deliveries(endpoint.id, '?event_type=memory.deleted')).body.total).toBe(0);
    expect(
      (await deliveries(endpoint.id, `?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).body
        .total,
    ).toBe(0);
    expect((await deliveries(endpoint.id, '?status=lost')).body.error.field).toBe('status');
    receiver.set('/exhaust', 'ok');
    const replay = await t.call('POST', `/org/webhooks/${endpoint.id}/replay`, { ...as(), body: {} });
    expect(replay.body).toEqual({ replayed: 1 });
    await until(async () => (await deliveries(endpoint.id, '?status=succeeded')).body.total === 1, 'the replay');
    const id = (await deliveries(endpoint.id)).body.items[0].id;
    const retried = await t.call('POST', `/org/webhooks/${endpoint.id}/deliveries/${id}/retry`, as());
    expect(retried.status).toBe(202);
    await until(
      async () => (await t.call('GET', `/org/webhooks/${endpoint.id}/deliveries/${id}`, as())).body.attempts === 4,
      'the retry',
    );
    const ids = new Set(receiver.at('/exhaust').map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    expect((await t.call('GET', `/org/webhooks/${endpoint.id}/deliveries/999999`, as())).status).toBe(404);
  });

  it('retention deletes deliveries that ended before the cutoff, with their attempts; pending and recent ones stay', async () => {
    receiver.set('/retention', 'ok');
    const endpoint = await subscribe('/retention');
    for (const text of ['kept one', 'old one', 'older one', 'waiting one']) await addMemory(`Retention: ${text}`);
    await until(async () => (await deliveries(endpoint.id, '?status=succeeded')).body.total === 4, 'four deliveries');
    const [waiting, older, old, kept] = (await deliveries(endpoint.id)).body.items.map(
      (d: { id: number }) => d.id,
    ) as number[];
    const db = t.database.db;
    // As if they had ended 40 days ago; the waiting one is due again (a retry), as old.
    const longAgo = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await db
      .updateTable('webhook_deliveries')
      .set({ updated_at: longAgo })
      .where('id', 'in', [old!, older!, waiting!])
      .execute();
    await db.updateTable('webhook_deliveries').set({ status: 'exhausted' }).where('id', '=', older!).execute();
    await db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', next_attempt_at: new Date(Date.now() + 3_600_000).toISOString() })
      .where('id', '=', waiting!)
      .execute();
    expect(
      await db.selectFrom('webhook_attempts').select('id').where('delivery_id', 'in', [old!, older!]).execute(),
    ).toHaveLength(2);

    const cutoff = new Date(Date.now() - 30 * 86_400_000).toISOString();
    // One a batch: the loop goes on until no ended delivery is older than the cutoff.
    expect(await purgeEndedDeliveries(t.database, cutoff, 1)).toBe(2);
    expect((await deliveries(endpoint.id)).body.items.map((d: { id: number }) => d.id)).toEqual([waiting, kept]);
    expect((await t.call('GET', `/org/webhooks/${endpoint.id}/deliveries/${old}`, as())).status).toBe(404);
    expect((await t.call('POST', `/org/webhooks/${endpoint.id}/deliveries/${older}/retry`, as())).status).toBe(404);
    expect(
      await db.selectFrom('webhook_attempts').select('id').where('delivery_id', 'in', [old!, older!]).execute(),
    ).toEqual([]);
    expect(
      await db.selectFrom('webhook_attempts').select('id').where('delivery_id', '=', kept!).execute(),
    ).toHaveLength(1);
    expect(await purgeEndedDeliveries(t.database, cutoff)).toBe(0);
  });

  it('pauses (deliveries accumulate), resumes (they arrive), and sends a test event', async () => {
    const endpoint = await subscribe('/paused');
    expect((await t.call('POST', `/org/webhooks/${endpoint.id}/pause`, as())).body).toMatchObject({
      state: 'paused',
      enabled: false,
    });
    // Paused, it still receives: its deliveries wait for the resume.
    expect(await subscriptionOf(endpoint.id)).toEqual([[t.organizationId, t.projectId, 'memory.created']]);
    await addMemory('While paused');
    await until(async () => (await deliveries(endpoint.id)).body.total === 1, 'the delivery row');
    expect(receiver.at('/paused')).toHaveLength(0);
    expect((await t.call('GET', `/org/webhooks/${endpoint.id}/health`, as())).body).toMatchObject({
      state: 'paused',
      pending_deliveries: 1,
    });
    expect((await t.call('POST', `/org/webhooks/${endpoint.id}/resume`, as())).body).toMatchObject({
      state: 'enabled',
      enabled: true,
    });
    await until(() => receiver.at('/paused').length === 1, 'the accumulated delivery');
    const test = await t.call('POST', `/org/webhooks/${endpoint.id}/test`, as());
    expect(test.status).toBe(202);
    expect(test.body).toMatchObject({ event_type: 'webhook.test', status: 'pending' });
    const received = await until(() => receiver.at('/paused')[1], 'the test event');
    expect(received.verified).toBe(true);
    expect(JSON.parse(received.body)).toMatchObject({ type: 'webhook.test', data: { endpoint_id: endpoint.id } });
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select('action')
      .where('target_id', '=', String(endpoint.id))
      .where('target_type', '=', 'webhook_endpoint')
      .orderBy('id')
      .execute();
    expect(audit.map((a) => a.action)).toEqual(['webhook.create', 'webhook.pause', 'webhook.resume', 'webhook.test']);
  });

  it('disables an endpoint that failed every attempt for its disable period, and emits endpoint.disabled', async () => {
    receiver.set('/dying', 'fail');
    const watcher = await subscribe('/watcher', { events: ['endpoint.disabled'] });
    const endpoint = await subscribe('/dying', {
      retry_config: { schedule_seconds: [0, 1, 1], disable_after_seconds: 60 },
    });
    await addMemory('Into the void');
    await until(() => receiver.at('/dying').length >= 1, 'a first failure');
    // As if it had been failing for an hour.
    await t.database.db
      .updateTable('webhook_endpoints')
      .set({ failing_since: new Date(Date.now() - 3_600_000).toISOString() })
      .where('id', '=', endpoint.id)
      .execute();
    await until(
      async () => (await t.call('GET', `/org/webhooks/${endpoint.id}`, as())).body.state === 'disabled',
      'the disable',
    );
    const got = await t.call('GET', `/org/webhooks/${endpoint.id}`, as());
    expect(got.body).toMatchObject({
      enabled: false,
      disabled_reason: expect.stringContaining('every attempt failed'),
    });
    // A disabled endpoint receives nothing more, so the outbox keeps nothing for it.
    expect(await subscriptionOf(endpoint.id)).toEqual([]);
    const notice = await until(() => receiver.at('/watcher')[0], 'endpoint.disabled');
    expect(JSON.parse(notice.body)).toMatchObject({ type: 'endpoint.disabled', data: { endpoint_id: endpoint.id } });
    expect(notice.verified).toBe(true);
    expect(watcher.id).not.toBe(endpoint.id);
    const audit = await t.database.db
      .selectFrom('audit_log')
      .select(['action', 'actor_type'])
      .where('action', '=', 'webhook.disable')
      .where('target_id', '=', String(endpoint.id))
      .execute();
    expect(audit).toEqual([{ action: 'webhook.disable', actor_type: 'system' }]);
  });

  it.runIf(dialect === 'postgres')(
    'an attempt recorded while its endpoint changes keeps that change (the endpoint row is locked as read)',
    async () => {
      receiver.set('/raced', 'fail');
      const endpoint = await subscribe('/raced', {
        retry_config: { schedule_seconds: [0], disable_after_seconds: 60 },
      });
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let changed!: () => void;
      const changeMade = new Promise<void>((resolve) => (changed = resolve));
      // Another transaction changes the endpoint and has not committed when the attempt is recorded.
      const holder = t.database.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('webhook_endpoints')
          .set({ failing_since: hourAgo })
          .where('id', '=', endpoint.id)
          .execute();
        changed();
        await released;
      });
      await changeMade;
      await addMemory('Raced');
      await until(
        async () => {
          const { rows } = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%webhook_endpoints%'`.execute(
            t.database.db,
          );
          return receiver.at('/raced').length === 1 && rows[0]!.n > 0;
        },
        "the attempt's record to wait for the endpoint row",
        10_000,
      );
      release();
      await holder;
      // Its only attempt failed an hour into the failing period: disabled, failing_since as the other transaction left it.
      await until(
        async () => (await t.call('GET', `/org/webhooks/${endpoint.id}`, as())).body.state === 'disabled',
        'the disable',
        10_000,
      );
      const row = await t.database.db
        .selectFrom('webhook_endpoints')
        .select(['failing_since', 'consecutive_failures'])
        .where('id', '=', endpoint.id)
        .executeTakeFirstOrThrow();
      expect(row).toEqual({ failing_since: hourAgo, consecutive_failures: 1 });
    },
  );

  it("a retry asked for while a delivery is attempted wins over that attempt's outcome: pending again, then attempted again", async () => {
    receiver.set('/retried', 'hold');
    const endpoint = await subscribe('/retried', { retry_config: { schedule_seconds: [0] } });
    await addMemory('Retried while attempted');
    await until(() => receiver.at('/retried').length === 1, 'the attempt');
    const id = (await deliveries(endpoint.id)).body.items[0].id;
    const delivery = async () => (await t.call('GET', `/org/webhooks/${endpoint.id}/deliveries/${id}`, as())).body;
    expect((await t.call('POST', `/org/webhooks/${endpoint.id}/deliveries/${id}/retry`, as())).status).toBe(202);
    receiver.set('/retried', 'ok');
    receiver.release('/retried', 'fail');
    // Its only step failed, which alone exhausts it; the retry asked for meanwhile queues it again.
    const recorded = await until(async () => {
      const d = await delivery();
      return d.attempt_log.length > 0 && d;
    }, "the attempt's record");
    expect(recorded.status).not.toBe('exhausted');
    const done = await until(async () => {
      const d = await delivery();
      return d.status === 'succeeded' && d;
    }, 'the retry');
    expect(done.attempt_log.map((a: { succeeded: boolean }) => a.succeeded)).toEqual([false, true]);
    expect(done.attempts).toBe(2);
  });

  it.runIf(dialect === 'postgres')(
    'an endpoint resumed while its disable is decided stays enabled (the disable is fenced by the failure streak it saw)',
    async () => {
      receiver.set('/resumed', 'fail');
      const endpoint = await subscribe('/resumed', {
        retry_config: { schedule_seconds: [0], disable_after_seconds: 60 },
      });
      await t.database.db
        .updateTable('webhook_endpoints')
        .set({ failing_since: new Date(Date.now() - 3_600_000).toISOString() })
        .where('id', '=', endpoint.id)
        .execute();
      const row = () => t.database.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoint.id);
      const disables = () =>
        t.database.db
          .selectFrom('audit_log')
          .select('id')
          .where('action', '=', 'webhook.disable')
          .where('target_id', '=', String(endpoint.id))
          .execute();
      // A transaction holds the endpoint's row (not its key, which new deliveries reference): the failed attempt's record
      // waits for it, and the resume queues behind the record.
      const holder = await holdUncommitted(t, (trx) =>
        trx.selectFrom('webhook_endpoints').select('id').where('id', '=', endpoint.id).forNoKeyUpdate().execute(),
      );
      // What a resume writes, committed once the disable the record decided waits for it (or has landed before it).
      let resume: ReturnType<typeof holdUncommitted> | undefined;
      try {
        await addMemory('Resumed meanwhile');
        await untilLocked(
          t,
          async () => receiver.at('/resumed').length === 1 && (await waitingIn('%webhook_endpoints%')).length > 0,
          'the record to wait for the endpoint',
        );
        resume = holdUncommitted(
          t,
          (trx) =>
            trx
              .updateTable('webhook_endpoints')
              .set({ status: 'enabled', disabled_reason: null, consecutive_failures: 0, failing_since: null })
              .where('id', '=', endpoint.id)
              .execute(),
          { commit: true },
        );
        await untilLocked(
          t,
          async () =>
            (
              await waitingIn(
                'update "webhook_endpoints" set "status" = $1, "disabled_reason" = $2, "consecutive_failures"%',
              )
            ).length > 0,
          'the resume to queue behind the record',
        );
        await holder.release();
        await resume;
        // The resume follows the record's new row version once the record commits, and the disable may reach that version
        // first (PostgreSQL hands the row to whichever locks it first): then the disable lands and the resume undoes it.
        // Mostly the disable waits for the resume, and must then find the streak it saw ended.
        const waited = await untilLocked(
          t,
          async () => {
            const waiting = await waitingIn(
              'update "webhook_endpoints" set "status" = $1, "disabled_reason" = $2, "updated_at"%',
            );
            if (waiting.length > 0) return { disable: waiting[0]! };
            return (await disables()).length > 0 && { disable: undefined };
          },
          'the disable to wait for the resume, or to land before it',
        );
        await (await resume).release();
        if (waited.disable) {
          const { pid, xact_start: started } = waited.disable;
          await untilLocked(
            t,
            async () =>
              (
                await sql`SELECT 1 FROM pg_stat_activity WHERE pid = ${pid} AND xact_start::text = ${started}`.execute(
                  t.database.db,
                )
              ).rows.length === 0,
            "the disable's transaction to end",
          );
          expect(await disables()).toEqual([]);
        }
        expect(await row().executeTakeFirstOrThrow()).toMatchObject({ status: 'enabled', failing_since: null });
      } finally {
        // Whatever failed above, nothing of this test stays waiting on a lock (the app's shutdown would wait for it).
        await holder.release();
        if (resume) await (await resume).release();
      }
    },
  );

  it.runIf(dialect === 'postgres')(
    "a rotation while another rotation commits keeps that one's secret signing as the previous one (the row is locked as read)",
    async () => {
      const endpoint = await subscribe('/rotated');
      // What the other rotation stores: a sealed secret (this one another endpoint's, sealed under the same key).
      const other = await subscribe('/rotated-other');
      const { secret: sealed } = await t.database.db
        .selectFrom('webhook_endpoints')
        .select('secret')
        .where('id', '=', other.id)
        .executeTakeFirstOrThrow();
      const rotated = await whileChanging(
        (trx) => trx.updateTable('webhook_endpoints').set({ secret: sealed }).where('id', '=', endpoint.id).execute(),
        () => t.call('POST', `/org/webhooks/${endpoint.id}/rotate-secret`, as()),
      );
      expect(rotated.status).toBe(200);
      // Receivers configured with the other rotation's secret keep verifying through the overlap.
      receiver.verifyWith('/rotated', rotated.body.secret, other.secret);
      expect((await t.call('POST', `/org/webhooks/${endpoint.id}/test`, as())).status).toBe(202);
      expect((await until(() => receiver.at('/rotated')[0], 'the test event')).verified).toBe(true);
    },
  );

  it.runIf(dialect === 'postgres')(
    'an update merging retry_config while another change to it commits keeps that change (the row is locked as read)',
    async () => {
      const endpoint = await subscribe('/merged');
      const updated = await whileChanging(
        (trx) =>
          trx
            .updateTable('webhook_endpoints')
            .set({ retry_config: encodeJson({ schedule_seconds: [7], disable_after_seconds: 432000 }) })
            .where('id', '=', endpoint.id)
            .execute(),
        () =>
          t.call('PATCH', `/org/webhooks/${endpoint.id}`, {
            ...as(),
            body: { retry_config: { disable_after_seconds: 3600 } },
          }),
      );
      expect(updated.status).toBe(200);
      expect(updated.body.retry_config).toEqual({ schedule_seconds: [7], disable_after_seconds: 3600 });
    },
  );

  it.runIf(dialect === 'postgres')(
    'deleting an endpoint while a batch of its attempts is recorded does not deadlock (its deliveries are locked in id order)',
    async () => {
      const endpoint = await subscribe('/deleted');
      await t.call('POST', `/org/webhooks/${endpoint.id}/pause`, as());
      await addMemory('Deleted one');
      await addMemory('Deleted two');
      const rowsOf = () =>
        t.database.db
          .selectFrom('webhook_deliveries')
          .select('id')
          .where('endpoint_id', '=', endpoint.id)
          .orderBy('id')
          .execute();
      const [low, high] = (
        await until(async () => {
          const rows = await rowsOf();
          return rows.length === 2 && rows;
        }, 'two deliveries')
      ).map((r) => r.id);
      // As an attempt's record does, an update of an indexed column writes the lower one's row anew behind the other's
      // (not as a heap-only tuple, which its index entry would still find first): a scan meets the higher one first.
      await t.database.db
        .updateTable('webhook_deliveries')
        .set({ next_attempt_at: new Date().toISOString() })
        .where('id', '=', low!)
        .execute();
      let lowHeld!: () => void;
      const holdingLow = new Promise<void>((resolve) => (lowHeld = resolve));
      let goOn!: () => void;
      const deleteWaits = new Promise<void>((resolve) => (goOn = resolve));
      // As a batch recording attempts of both locks them: the deliveries in id order, then the endpoint.
      const batch = t.database.db.transaction().execute(async (trx) => {
        const attempted = (id: number) =>
          trx
            .updateTable('webhook_deliveries')
            .set((eb) => ({ attempts: eb('attempts', '+', 1) }))
            .where('id', '=', id)
            .execute();
        await attempted(low!);
        lowHeld();
        await deleteWaits;
        await attempted(high!);
        await trx.selectFrom('webhook_endpoints').select('id').where('id', '=', endpoint.id).forUpdate().execute();
      });
      await holdingLow;
      const deleted = t.call('DELETE', `/org/webhooks/${endpoint.id}`, as());
      await until(
        async () => (await waitingIn('%webhook_deliveries%')).length > 0,
        'the deletion to wait for the lower delivery',
        10_000,
      );
      goOn();
      await batch;
      expect((await deleted).status).toBe(200);
      expect(await rowsOf()).toEqual([]);
    },
  );

  it.runIf(dialect === 'postgres')(
    'an endpoint deleted while its attempt is under way costs the other attempts recorded with it nothing (each recorded once, none attempted again)',
    async () => {
      const first = await subscribe('/batch-first');
      const gone = await subscribe('/batch-gone');
      const kept = await subscribe('/batch-kept');
      receiver.set('/batch-gone', 'hold');
      receiver.set('/batch-kept', 'hold');
      // The attempt recorded first waits for its endpoint's row, which the test holds; the two held attempts finish
      // meanwhile, so they are recorded together, after it.
      const holder = await holdUncommitted(t, (trx) =>
        trx.selectFrom('webhook_endpoints').select('id').where('id', '=', first.id).forNoKeyUpdate().execute(),
      );
      try {
        await addMemory('Recorded together');
        await untilLocked(
          t,
          async () =>
            receiver.at('/batch-gone').length === 1 &&
            receiver.at('/batch-kept').length === 1 &&
            (await waitingIn('%webhook_endpoints%')).length > 0,
          'a record to wait for the first endpoint while the other two attempts are under way',
        );
        expect((await t.call('DELETE', `/org/webhooks/${gone.id}`, as())).status).toBe(200);
        receiver.release('/batch-gone', 'ok');
        receiver.release('/batch-kept', 'ok');
        // Their answers reach the worker while the record before them still waits (a settle, not a timing assertion).
        await new Promise((resolve) => setTimeout(resolve, 300));
      } finally {
        await holder.release();
      }
      const delivered = await until(
        async () => {
          const d = (await deliveries(kept.id)).body.items[0];
          return d?.status === 'succeeded' && d;
        },
        "the kept endpoint's delivery recorded",
        20_000,
      );
      expect(delivered.attempts).toBe(1);
      expect(receiver.at('/batch-kept')).toHaveLength(1);
      expect(
        await t.database.db.selectFrom('webhook_attempts').select('id').where('endpoint_id', '=', gone.id).execute(),
      ).toEqual([]);
    },
  );

  it('never lets slow, hanging, redirecting, failing, resetting or 10 MB receivers stall the others', async () => {
    const bad = ['hang', 'slow', 'redirect', 'not_found', 'fail', 'reset', 'huge'] as const;
    const endpoints = new Map<string, number>();
    for (const behaviour of bad) {
      receiver.set(`/${behaviour}`, behaviour);
      endpoints.set(behaviour, (await subscribe(`/${behaviour}`, { retry_config: { schedule_seconds: [0] } })).id);
    }
    await subscribe('/steady');
    for (let i = 0; i < 20; i++) await addMemory(`Steady ${i}`);
    await until(() => receiver.at('/steady').length === 20, 'every delivery to the good receiver', 60_000);
    const outcome = async (behaviour: string) => {
      const id = (await deliveries(endpoints.get(behaviour)!)).body.items.at(-1).id;
      return (
        await until(async () => {
          const d = (await t.call('GET', `/org/webhooks/${endpoints.get(behaviour)}/deliveries/${id}`, as())).body;
          return d.attempt_log.length > 0 && d;
        }, `an attempt to ${behaviour}`)
      ).attempt_log[0];
    };
    expect(await outcome('slow')).toMatchObject({ status_code: 200, succeeded: true });
    expect(await outcome('redirect')).toMatchObject({ status_code: 302, succeeded: false, error: 'HTTP 302' });
    expect(receiver.at('/ok-elsewhere')).toHaveLength(0);
    expect(await outcome('not_found')).toMatchObject({
      status_code: 404,
      succeeded: false,
      response_body: 'no such hook',
    });
    expect(await outcome('fail')).toMatchObject({ status_code: 500, succeeded: false });
    expect(await outcome('reset')).toMatchObject({ status_code: null, succeeded: false, error: expect.any(String) });
    const huge = await outcome('huge');
    expect(huge).toMatchObject({ status_code: 200, succeeded: true });
    expect(huge.response_body.length).toBeLessThanOrEqual(2048);
    expect(await outcome('hang')).toMatchObject({ status_code: null, succeeded: false, error: 'no answer within 2 s' });
  });

  it.runIf(dialect === 'postgres')(
    'delivers while every claim takes longer than a claimed-ahead delivery may wait to start (a loaded database)',
    async () => {
      // Every UPDATE of deliveries (claims, releases, records) takes 1.2 s, over delivery.ts's MAX_QUEUED_MS: the wait
      // counts from the claim's answer, so what a claim brings can start; counted from before the claim was sent, every
      // claim would be given up on arrival and claimed again, for ever.
      await sql`CREATE FUNCTION slow_delivery_updates() RETURNS trigger LANGUAGE plpgsql AS
        $$ BEGIN PERFORM pg_sleep(1.2); RETURN NULL; END $$`.execute(t.database.db);
      await sql`CREATE TRIGGER slow_delivery_updates BEFORE UPDATE ON webhook_deliveries
        FOR EACH STATEMENT EXECUTE FUNCTION slow_delivery_updates()`.execute(t.database.db);
      try {
        await subscribe('/loaded');
        for (let i = 0; i < 3; i++) await addMemory(`Loaded ${i}`);
        await until(() => receiver.at('/loaded').length >= 3, 'every delivery through slow claims', 30_000);
      } finally {
        await sql`DROP TRIGGER slow_delivery_updates ON webhook_deliveries`.execute(t.database.db);
        await sql`DROP FUNCTION slow_delivery_updates()`.execute(t.database.db);
      }
      expect(new Set(receiver.at('/loaded').map((r) => r.headers['webhook-id'])).size).toBe(3);
    },
  );

  it('forgetting a memory leaves no copy in stored deliveries or the outbox', async () => {
    const endpoint = await subscribe('/forget');
    await t.call('POST', `/org/webhooks/${endpoint.id}/pause`, as());
    const memory = await addMemory('My secret diagnosis');
    await until(async () => (await deliveries(endpoint.id)).body.total === 1, 'the pending delivery');
    const forgot = await t.call('DELETE', '/memory/forget', { body: { ids: [memory.id] } });
    expect(forgot.status).toBe(200);
    const stored = await t.database.db
      .selectFrom('webhook_deliveries')
      .select('body')
      .where('memory_id', '=', memory.id)
      .execute();
    expect(stored.length).toBeGreaterThan(0);
    for (const row of stored) expect(row.body).not.toContain('diagnosis');
    const outbox = await t.database.db
      .selectFrom('outbox_events')
      .select('payload')
      .where('memory_id', '=', memory.id)
      .execute();
    expect(outbox.length).toBeGreaterThan(0);
    for (const row of outbox) expect(JSON.stringify(decodeJson(row.payload))).not.toContain('diagnosis');
    await t.call('POST', `/org/webhooks/${endpoint.id}/resume`, as());
    const sent = await until(
      () => receiver.at('/forget').find((r) => JSON.parse(r.body).type === 'memory.created'),
      'the scrubbed delivery',
    );
    expect(JSON.parse(sent.body).data).toEqual({ memory: { id: memory.id, forgotten: true } });
  });

  it('forgetting a memory or removing an end user erases what receivers echoed of their deliveries; status and latency stay', async () => {
    const endpoint = await subscribe('/echo', { events: ['memory.created', 'relation.created'] });
    receiver.set('/echo', 'echo');
    const attempts = () =>
      t.database.db
        .selectFrom('webhook_attempts')
        .select(['status_code', 'latency_ms', 'response_body'])
        .where('endpoint_id', '=', endpoint.id)
        .execute();
    const echoed = async (secret: string) => (await attempts()).filter((a) => a.response_body?.includes(secret)).length;
    const memory = await addMemory(`Echoed ${dialect} diagnosis zq-echo-one`);
    await until(async () => (await echoed('zq-echo-one')) > 0, 'the echoed answer');
    expect((await t.call('DELETE', '/memory/forget', { body: { ids: [memory.id] } })).status).toBe(200);
    expect(await echoed('zq-echo-one')).toBe(0);
    expect((await attempts()).every((a) => a.status_code === 200 && a.latency_ms >= 0)).toBe(true);

    // An event naming the end user and no memory (relation.created) echoed back: erased when the end user is removed.
    const endUser = `zq-echo-user-${dialect}`;
    const [a, b] = [
      await t.call('POST', '/memory/add', { endUser, body: { text: 'First fact' } }),
      await t.call('POST', '/memory/add', { endUser, body: { text: 'Second fact' } }),
    ];
    expect(
      (
        await t.call('POST', '/memory/relations', {
          endUser,
          body: { source_id: a.body.id, target_id: b.body.id, type: 'related' },
        })
      ).status,
    ).toBe(201);
    await until(
      async () => (await attempts()).some((x) => x.response_body?.includes('relation.created')),
      'the echoed relation',
    );
    expect(await echoed(endUser)).toBeGreaterThan(0);
    expect((await t.call('DELETE', `/memory/user/${endUser}`, { endUser: null })).status).toBe(200);
    expect(await echoed(endUser)).toBe(0);
    const keys = await t.database.db
      .selectFrom('webhook_deliveries')
      .select('end_user_key')
      .where('endpoint_id', '=', endpoint.id)
      .execute();
    expect(keys.some((k) => k.end_user_key !== null)).toBe(true);
    expect(JSON.stringify(keys)).not.toContain(endUser);
  });

  it("forgetting a summary's source leaves no copy of it in the deliveries of the summary, which is rewritten", async () => {
    const endpoint = await subscribe('/summary-source', { events: ['memory.created', 'memory.updated'] });
    await t.call('POST', `/org/webhooks/${endpoint.id}/pause`, as());
    const secret = await addMemory('The biopsy result was benign.');
    const kept = await addMemory('The follow-up visit is in March.');
    const made = await t.call('POST', '/memory/summarize', { body: { memory_ids: [secret.id, kept.id] } });
    expect(made.status, made.text).toBe(201);
    const summary = made.body.memory as { id: number; text: string };
    expect(summary.text).toContain('biopsy');
    await until(async () => (await deliveries(endpoint.id)).body.total === 3, 'three pending deliveries');
    const forgot = await t.call('DELETE', '/memory/forget', { body: { ids: [secret.id] } });
    expect(forgot.body).toEqual([secret.id]);
    // The summary lives on, rewritten from what is left; its earlier deliveries held the forgotten text.
    const rewritten = await t.call('GET', `/memory/${summary.id}`);
    expect(rewritten.body.text).not.toContain('biopsy');
    const stored = await t.database.db
      .selectFrom('webhook_deliveries')
      .select(['body', 'memory_id'])
      .where('endpoint_id', '=', endpoint.id)
      .execute();
    for (const row of stored) expect(row.body, `delivery of memory ${row.memory_id}`).not.toContain('biopsy');
    const outbox = await t.database.db
      .selectFrom('outbox_events')
      .select('payload')
      .where('memory_id', 'in', [secret.id, summary.id])
      .execute();
    for (const row of outbox) expect(JSON.stringify(decodeJson(row.payload))).not.toContain('biopsy');
    const ofSummary = stored.filter((row) => row.memory_id === summary.id).map((row) => JSON.parse(row.body));
    expect(ofSummary).toContainEqual(
      expect.objectContaining({ type: 'memory.created', data: { memory: { id: summary.id, rewritten: true } } }),
    );
  });

  it('emits api_key.created, api_key.revoked, project.deleted and end_user.purged', async () => {
    const endpoint = await subscribe('/lifecycle', {
      events: ['api_key.created', 'api_key.revoked', 'end_user.purged', 'memory.deleted'],
    });
    const key = await t.call('POST', '/org/api-keys', { token: owner.token, body: { name: 'hooked' } });
    await t.call('DELETE', `/org/api-keys/${key.body.id}`, { token: owner.token });
    const m = await addMemory('Short-lived');
    await t.call('DELETE', '/memory/forget', { body: { ids: [m.id] } });
    await t.call('DELETE', '/memory/user/user-1');
    // The purge deletes the end user's other memories too (memory.deleted each), in whatever order they arrive.
    const types = await until(() => {
      const seen = new Set(receiver.at('/lifecycle').map((r) => JSON.parse(r.body).type as string));
      return seen.size >= 4 && seen;
    }, 'the lifecycle events');
    expect([...types].sort()).toEqual(['api_key.created', 'api_key.revoked', 'end_user.purged', 'memory.deleted']);
    const created = receiver
      .at('/lifecycle')
      .map((r) => JSON.parse(r.body))
      .find((b) => b.type === 'api_key.created');
    expect(created.data).toEqual({
      api_key_id: key.body.id,
      name: 'hooked',
      project_id: null,
      scopes: ['memories:read', 'memories:write'],
    });
    expect(JSON.stringify(created)).not.toContain(key.body.key);
    expect(endpoint.id).toBeGreaterThan(0);
  });
});
