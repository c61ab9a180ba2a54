import { sql } from 'kysely';
import { SYSTEM_ACTOR } from '../../core/context.js';
import { write } from '../../core/unit-of-work.js';
import { decodeJson, jsonRows, type Database } from '../../store/database.js';
import { LAST_IN_TRANSACTION } from '../../store/postgres-connections.js';
import type { Outcome } from './attempt.js';
import { retryConfigOf, subscribeEndpoint } from './endpoints.js';

export interface Claimed {
  id: number;
  endpoint_id: number;
  message_id: string;
  body: string;
  next_step: number;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: string | null;
  retry_config: unknown;
  /** As claimed: its outcome moves the delivery on only if neither changed since (not taken over, not queued again). */
  lease_until: string;
  updated_at: string;
}

export interface Finished {
  delivery: Claimed;
  outcome: Outcome;
  at: string;
}

const STEP_COLUMNS = [
  ['id', 'bigint'],
  ['lease_until', 'timestamptz'],
  ['updated_at', 'timestamptz'],
  ['status', 'text'],
  ['next_step', 'integer'],
  ['next_attempt_at', 'timestamptz'],
  ['at', 'timestamptz'],
] as const;
const HEALTH_COLUMNS = [
  ['id', 'bigint'],
  ['failing_since', 'timestamptz'],
  ['consecutive_failures', 'integer'],
  ['last_success_at', 'timestamptz'],
  ['last_failure_at', 'timestamptz'],
] as const;

/**
 * Records attempts and moves each delivery on: succeeded, the next step of its endpoint's
 * schedule, or exhausted; then each endpoint's health. An endpoint failing every attempt for its
 * disable period is disabled, with an audit row and an endpoint.disabled event.
 */
export async function recordAttempts(database: Database, batch: Finished[]): Promise<void> {
  // Deliveries in id order (the attempts' foreign keys lock them too), then their endpoints, like the erase hook and an
  // endpoint's deletion, so two transactions never wait on each other's rows (PostgreSQL deadlocks).
  const sorted = [...batch].sort((a, b) => a.delivery.id - b.delivery.id);
  const toDisable = await database.db.transaction().execute(async (trx) => {
    // An attempt whose delivery went meanwhile (its endpoint deleted) is not recorded; one such attempt failing the
    // batch's foreign keys would leave every other delivery of the batch to be attempted again.
    const present = new Set(
      (
        await trx
          .selectFrom('webhook_deliveries')
          .select('id')
          .where(
            'id',
            'in',
            sorted.map((b) => b.delivery.id),
          )
          .orderBy('id')
          .$if(database.dialect === 'postgres', (qb) => qb.forNoKeyUpdate())
          .execute()
      ).map((r) => r.id),
    );
    const ordered = sorted.filter((b) => present.has(b.delivery.id));
    if (ordered.length === 0) return [];
    // Every delivery moved on in one statement. Its next step applies only while it holds the lease it was claimed
    // with and was not queued again meanwhile (`current`): an operator's retry wins (pending, due when they asked),
    // and after a lapsed lease the process that took it over decides; then this attempt only counts, and gives the
    // lease up if it is still this one.
    const steps = ordered.map(({ delivery, outcome, at }) => {
      const schedule = decodeJson<{ schedule_seconds: number[] }>(delivery.retry_config).schedule_seconds;
      const succeeded = outcome.error === null;
      const nextStep = delivery.next_step + 1;
      const exhausted = !succeeded && nextStep >= schedule.length;
      return {
        id: delivery.id,
        lease_until: delivery.lease_until,
        updated_at: delivery.updated_at,
        status: succeeded ? 'succeeded' : exhausted ? 'exhausted' : 'pending',
        next_step: succeeded || exhausted ? delivery.next_step : nextStep,
        next_attempt_at:
          succeeded || exhausted ? null : new Date(Date.parse(at) + schedule[nextStep]! * 1000).toISOString(),
        at,
      };
    });
    const current = sql.raw('(d.lease_until = s.lease_until AND d.updated_at = s.updated_at)');
    const endpointIds = [...new Set(ordered.map((b) => b.delivery.endpoint_id))];
    // Locked as read: another worker's batch, or an operator's change, landing between this read and the
    // update below would otherwise be overwritten with what this transaction saw (PostgreSQL; SQLite has one writer).
    // Not the key: a fan-out inserting deliveries holds their endpoints' keys in its own order (a deadlock with FOR UPDATE).
    // The three statements go out together (pipelined on PostgreSQL: one round trip), in this order: deliveries, then endpoints.
    const [, , endpoints] = await Promise.all([
      trx
        .insertInto('webhook_attempts')
        .values(
          ordered.map(({ delivery, outcome, at }) => ({
            delivery_id: delivery.id,
            endpoint_id: delivery.endpoint_id,
            attempted_at: at,
            status_code: outcome.statusCode,
            latency_ms: outcome.latencyMs,
            response_body: outcome.body,
            error: outcome.error,
            succeeded: database.bool(outcome.error === null),
          })),
        )
        .execute(),
      sql`UPDATE webhook_deliveries AS d SET
        status = CASE WHEN ${current} THEN s.status ELSE d.status END,
        attempts = d.attempts + 1,
        next_step = CASE WHEN ${current} THEN s.next_step ELSE d.next_step END,
        next_attempt_at = CASE WHEN ${current} THEN s.next_attempt_at ELSE d.next_attempt_at END,
        lease_until = CASE WHEN d.lease_until = s.lease_until THEN NULL ELSE d.lease_until END,
        updated_at = CASE WHEN ${current} THEN s.at ELSE d.updated_at END
      FROM ${jsonRows(database.dialect, 's', STEP_COLUMNS, steps)}
      WHERE d.id = s.id`.execute(trx),
      trx
        .selectFrom('webhook_endpoints')
        .select([
          'id',
          'failing_since',
          'consecutive_failures',
          'status',
          'retry_config',
          'last_success_at',
          'last_failure_at',
        ])
        .where('id', 'in', endpointIds)
        .orderBy('id')
        .$if(database.dialect === 'postgres', (qb) => qb.forNoKeyUpdate())
        .execute(),
    ]);
    const disable: Array<{ id: number; failingSince: string }> = [];
    const health = endpoints.map((e) => {
      let {
        failing_since: failingSince,
        consecutive_failures: failures,
        last_success_at: lastSuccess,
        last_failure_at: lastFailure,
      } = e;
      for (const { delivery, outcome, at } of ordered) {
        if (delivery.endpoint_id !== e.id) continue;
        if (outcome.error === null) [failingSince, failures, lastSuccess] = [null, 0, at];
        else [failingSince, failures, lastFailure] = [failingSince ?? at, failures + 1, at];
      }
      const disableAfterMs = retryConfigOf(e).disable_after_seconds * 1000;
      if (
        e.status === 'enabled' &&
        failingSince !== null &&
        lastFailure !== null &&
        Date.parse(lastFailure) - Date.parse(failingSince) >= disableAfterMs
      )
        disable.push({ id: e.id, failingSince });
      return {
        id: e.id,
        failing_since: failingSince,
        consecutive_failures: failures,
        last_success_at: lastSuccess,
        last_failure_at: lastFailure,
      };
    });
    if (health.length > 0)
      // The COMMIT is sent behind it (LAST_IN_TRANSACTION).
      await sql`${sql.raw(LAST_IN_TRANSACTION)}UPDATE webhook_endpoints AS e SET failing_since = h.failing_since,
          consecutive_failures = h.consecutive_failures, last_success_at = h.last_success_at,
          last_failure_at = h.last_failure_at
        FROM ${jsonRows(database.dialect, 'h', HEALTH_COLUMNS, health)}
        WHERE e.id = h.id`.execute(trx);
    return disable;
  });
  for (const { id, failingSince } of toDisable) await disableEndpoint(database, id, failingSince);
}

/** Disables an endpoint still enabled and failing since `failingSince`: a resume (or a success) committed meanwhile ended that streak. */
async function disableEndpoint(database: Database, id: number, failingSince: string): Promise<void> {
  const endpoint = await database.db
    .selectFrom('webhook_endpoints')
    .select(['organization_id', 'project_id', 'url'])
    .where('id', '=', id)
    .executeTakeFirst();
  if (!endpoint) return;
  const ctx = {
    actor: SYSTEM_ACTOR,
    organizationId: endpoint.organization_id,
    projectId: endpoint.project_id,
    requestId: null,
  };
  await write(database, ctx, async (trx, effects) => {
    const changed = await trx
      .updateTable('webhook_endpoints')
      .set({
        status: 'disabled',
        disabled_reason: `every attempt failed since ${failingSince}`,
        updated_at: effects.now,
      })
      .where('id', '=', id)
      .where('status', '=', 'enabled')
      .where('failing_since', '=', failingSince)
      .executeTakeFirst();
    if (Number(changed.numUpdatedRows) === 0) return;
    await subscribeEndpoint(trx, id, null);
    effects.audit('webhook.disable', { type: 'webhook_endpoint', id });
    effects.emit('endpoint.disabled', {
      endpoint_id: id,
      url: endpoint.url,
      failing_since: failingSince,
      reason: 'every attempt failed for the disable period',
    });
  });
}
