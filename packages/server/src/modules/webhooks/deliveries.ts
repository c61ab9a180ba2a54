import { sql, type Selectable } from 'kysely';
import { notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import type { Database, Executor } from '../../store/database.js';
import type { WebhookDeliveriesTable } from '../../store/schema.js';
import { messageBody, newMessageId } from './fan-out.js';
import { notifyDeliveriesDue } from './due.js';
import { endpointRow, type EndpointScope, type EndpointState } from './endpoints.js';
import { deleteInBatches } from '../../core/batches.js';

type DeliveryRow = Selectable<WebhookDeliveriesTable>;
export type DeliveryStatus = 'pending' | 'succeeded' | 'exhausted';

const toDelivery = (row: DeliveryRow) => ({
  id: row.id,
  endpoint_id: row.endpoint_id,
  message_id: row.message_id,
  event_type: row.event_type,
  status: row.status as DeliveryStatus,
  attempts: row.attempts,
  next_attempt_at: row.next_attempt_at,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

export interface DeliveryFilter extends PageParams {
  status?: DeliveryStatus;
  event_type?: string;
  since?: string;
  until?: string;
}

/** Newest first, filtered by status, event type and creation time. */
export async function listDeliveries(db: Executor, scope: EndpointScope, endpointId: number, filter: DeliveryFilter) {
  await endpointRow(db, scope, endpointId);
  const query = db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status!))
    .$if(filter.event_type !== undefined, (qb) => qb.where('event_type', '=', filter.event_type!))
    .$if(filter.since !== undefined, (qb) => qb.where('created_at', '>=', new Date(filter.since!).toISOString()))
    .$if(filter.until !== undefined, (qb) => qb.where('created_at', '<', new Date(filter.until!).toISOString()))
    .orderBy('id', 'desc');
  return paginate(query, filter, toDelivery);
}

async function deliveryRow(
  db: Executor,
  scope: EndpointScope,
  endpointId: number,
  deliveryId: number,
): Promise<DeliveryRow> {
  await endpointRow(db, scope, endpointId);
  const row = await db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirst();
  if (!row) throw notFound('Delivery');
  return row;
}

/** One delivery with the body it sends and every attempt: time, status code, latency, the first 2 KiB of the answer, error. */
export async function getDelivery(db: Executor, scope: EndpointScope, endpointId: number, deliveryId: number) {
  const row = await deliveryRow(db, scope, endpointId, deliveryId);
  const attempts = await db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('id')
    .execute();
  return {
    ...toDelivery(row),
    payload: JSON.parse(row.body) as unknown,
    attempt_log: attempts.map((a) => ({
      attempted_at: a.attempted_at,
      status_code: a.status_code,
      latency_ms: a.latency_ms,
      response_body: a.response_body,
      error: a.error,
      succeeded: Boolean(a.succeeded),
    })),
  };
}

/** Queued again from the first step of the schedule, with the same message id and body. */
const requeue = (now: string) => ({ status: 'pending', next_step: 0, next_attempt_at: now, updated_at: now });

export async function retryDelivery(
  database: Database,
  ctx: WriteContext,
  scope: EndpointScope,
  endpointId: number,
  deliveryId: number,
) {
  const view = await write(database, ctx, async (trx, effects) => {
    await deliveryRow(trx, scope, endpointId, deliveryId);
    const row = await trx
      .updateTable('webhook_deliveries')
      .set(requeue(effects.now))
      .where('id', '=', deliveryId)
      .returningAll()
      .executeTakeFirst();
    // Gone since it was read: deleted with its endpoint, or by retention.
    if (!row) throw notFound('Delivery');
    effects.audit('webhook.retry_delivery', { type: 'webhook_delivery', id: deliveryId });
    return toDelivery(row);
  });
  notifyDeliveriesDue();
  return view;
}

/** Replays the endpoint's exhausted deliveries (optionally those created in [since, until)). */
export async function replayDeliveries(
  database: Database,
  ctx: WriteContext,
  scope: EndpointScope,
  endpointId: number,
  range: { since?: string; until?: string },
) {
  const replayed = await write(database, ctx, async (trx, effects) => {
    await endpointRow(trx, scope, endpointId);
    const result = await trx
      .updateTable('webhook_deliveries')
      .set(requeue(effects.now))
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'exhausted')
      .$if(range.since !== undefined, (qb) => qb.where('created_at', '>=', new Date(range.since!).toISOString()))
      .$if(range.until !== undefined, (qb) => qb.where('created_at', '<', new Date(range.until!).toISOString()))
      .executeTakeFirst();
    effects.audit('webhook.replay', { type: 'webhook_endpoint', id: endpointId });
    return Number(result.numUpdatedRows);
  });
  if (replayed > 0) notifyDeliveriesDue();
  return { replayed };
}

/**
 * For /metrics: endpoints by state, and the deliveries still to be made (through the due index) with
 * the creation time of the oldest: a receiver that is down shows as a growing backlog.
 */
export async function webhookBacklog(
  db: Executor,
): Promise<{ endpoints: Record<EndpointState, number>; pending: number; oldestPending: string | null }> {
  const [states, pending] = await Promise.all([
    db
      .selectFrom('webhook_endpoints')
      .select(['status', (eb) => eb.fn.countAll().as('n')])
      .groupBy('status')
      .execute(),
    db
      .selectFrom('webhook_deliveries')
      .select([(eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.min('created_at').as('oldest')])
      .where('status', '=', 'pending')
      .executeTakeFirst(),
  ]);
  const endpoints: Record<EndpointState, number> = { enabled: 0, paused: 0, disabled: 0 };
  for (const row of states) if (row.status in endpoints) endpoints[row.status as EndpointState] = Number(row.n);
  return {
    endpoints,
    pending: Number(pending?.n ?? 0),
    oldestPending: (pending?.oldest as string | null | undefined) ?? null,
  };
}

/**
 * Retention: deletes deliveries that ended (succeeded or exhausted) before `before`, with their
 * attempts, a batch a transaction; answers how many. A delivery retried or replayed meanwhile is
 * pending again and stays (the condition is checked again by the delete).
 */
export async function purgeEndedDeliveries(database: Database, before: string, batch = 1_000): Promise<number> {
  return deleteInBatches(batch, () =>
    database.db.transaction().execute(async (trx) => {
      const ended = trx
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '<>', 'pending')
        .where('updated_at', '<', before)
        .limit(batch);
      // The condition again on the deleted row: one replayed since the subquery read it is pending and stays.
      const gone = (
        await trx
          .deleteFrom('webhook_deliveries')
          .where('id', 'in', ended)
          .where('status', '<>', 'pending')
          .where('updated_at', '<', before)
          .returning('id')
          .execute()
      ).map((r) => r.id);
      if (gone.length) await trx.deleteFrom('webhook_attempts').where('delivery_id', 'in', gone).execute();
      return gone.length;
    }),
  );
}

/** A webhook.test delivery to this endpoint only (whatever it subscribes to), attempted like any other. */
export async function sendTestEvent(database: Database, ctx: WriteContext, scope: EndpointScope, endpointId: number) {
  const view = await write(database, ctx, async (trx, effects) => {
    await endpointRow(trx, scope, endpointId);
    const row = await trx
      .insertInto('webhook_deliveries')
      .values({
        endpoint_id: endpointId,
        message_id: newMessageId(),
        event_type: 'webhook.test',
        memory_id: null,
        body: messageBody('webhook.test', effects.now, {
          endpoint_id: endpointId,
          message: 'A test event from Engram',
        }),
        status: 'pending',
        next_attempt_at: effects.now,
        lease_until: null,
        created_at: effects.now,
        updated_at: effects.now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    effects.audit('webhook.test', { type: 'webhook_endpoint', id: endpointId });
    return toDelivery(row);
  });
  notifyDeliveriesDue();
  return view;
}

const DAY_MS = 86_400_000;

/** State, success rate and p50 latency over the last 24 h, the failure streak, last success and failure. */
export async function endpointHealth(db: Executor, scope: EndpointScope, endpointId: number) {
  const endpoint = await endpointRow(db, scope, endpointId);
  const since = new Date(Date.now() - DAY_MS).toISOString();
  const recent = db
    .selectFrom('webhook_attempts')
    .where('endpoint_id', '=', endpointId)
    .where('attempted_at', '>=', since);
  const [counts, pending] = await Promise.all([
    // `case when succeeded`: true on PostgreSQL booleans and SQLite's 1 alike.
    recent
      .select((eb) => [eb.fn.countAll().as('n'), sql<number>`sum(case when succeeded then 1 else 0 end)`.as('ok')])
      .executeTakeFirstOrThrow(),
    db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('endpoint_id', '=', endpointId)
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow(),
  ]);
  const attempts = Number(counts.n);
  const median =
    attempts === 0
      ? undefined
      : await recent
          .select('latency_ms')
          .orderBy('latency_ms')
          .offset(Math.floor((attempts - 1) / 2))
          .limit(1)
          .executeTakeFirst();
  return {
    state: endpoint.status as EndpointState,
    success_rate_24h: attempts === 0 ? null : Number(counts.ok) / attempts,
    p50_latency_ms_24h: median?.latency_ms ?? null,
    attempts_24h: attempts,
    consecutive_failures: endpoint.consecutive_failures,
    failing_since: endpoint.failing_since,
    last_success_at: endpoint.last_success_at,
    last_failure_at: endpoint.last_failure_at,
    pending_deliveries: Number(pending.n),
  };
}
