import { sql } from 'kysely';
import { inTransaction } from '../../core/commit-group.js';
import { jsonRows, type Database } from '../../store/database.js';
import type { Claimed } from './record.js';

const HELD_COLUMNS = [
  ['endpoint_id', 'bigint'],
  ['held', 'integer'],
] as const;

/**
 * The deliveries due now, in the order they fell due, at most `limit` and at most `perEndpoint` per endpoint counting
 * those this process holds (`held`), leased until `leaseUntil`. On PostgreSQL one statement: each enabled endpoint's
 * first due deliveries locked with SKIP LOCKED, the earliest of them leased, the endpoints' columns returned with
 * them; SQLite (one writer) selects and leases in one transaction.
 * A lease is bookkeeping, committed without a flush of its own (`synchronous_commit` off on PostgreSQL, a
 * non-durable place in the group commit on SQLite): one lost with the database only lets the delivery be
 * attempted again, as a crash of the process does, and the flush of the outcome's record takes it along.
 */
export async function claimDeliveries(
  database: Database,
  limit: number,
  perEndpoint: number,
  held: ReadonlyMap<number, number>,
  now: string,
  leaseUntil: string,
): Promise<Claimed[]> {
  const postgres = database.dialect === 'postgres';
  const heldRows = [...held].map(([endpoint_id, n]) => ({ endpoint_id, held: n }));
  // The held counts materialized once: joined as a table function, SQLite parsed the JSON again for each of the
  // candidates (a third of the claim's time, and the claim was three quarters of the server's SQLite time in
  // bench/webhooks.ts).
  const heldCte = sql`held AS MATERIALIZED (SELECT * FROM ${jsonRows(database.dialect, 'h', HELD_COLUMNS, heldRows)})`;
  // PostgreSQL walks each enabled endpoint's pending deliveries in due order (webhook_deliveries_pending) and stops
  // at what the endpoint may still take: a plan that needs no statistics. Given the pending rows of all endpoints
  // at once, a planner without statistics of a young or suddenly busy table read and sorted every one of them for
  // each claim (30,000 pending in bench/webhooks.ts: 30-280 ms a claim, 4-6x a walk's, session 11). SKIP LOCKED:
  // several processes claim at once without waiting on each other.
  // SQLite (one writer) looks at four times the slots across endpoints in due order, so an endpoint at its limit
  // does not leave the others' slots empty, and ranks them per endpoint.
  const chosen = postgres
    ? sql`${heldCte}, chosen AS (
      SELECT c.id FROM webhook_endpoints e LEFT JOIN held h ON h.endpoint_id = e.id
      CROSS JOIN LATERAL (
        SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
        WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= ${now}
          AND (d.lease_until IS NULL OR d.lease_until < ${now})
        ORDER BY d.next_attempt_at, d.id
        LIMIT GREATEST(${perEndpoint} - COALESCE(h.held, 0), 0)
        FOR UPDATE OF d SKIP LOCKED
      ) c
      WHERE e.status = 'enabled'
      ORDER BY c.next_attempt_at, c.id
      LIMIT ${limit}
    )`
    : sql`${heldCte}, candidates AS (
      SELECT d.id, d.endpoint_id, d.next_attempt_at
      FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
      WHERE e.status = 'enabled' AND d.status = 'pending' AND d.next_attempt_at <= ${now}
        AND (d.lease_until IS NULL OR d.lease_until < ${now})
      ORDER BY d.next_attempt_at, d.id
      LIMIT ${limit * 4}
    ), ranked AS (
      SELECT c.id, c.next_attempt_at,
        row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at, c.id) + COALESCE(h.held, 0) AS place
      FROM candidates c LEFT JOIN held h ON h.endpoint_id = c.endpoint_id
    ), chosen AS (
      SELECT id FROM ranked WHERE place <= ${perEndpoint} ORDER BY next_attempt_at, id LIMIT ${limit}
    )`;
  const byDue = (a: Claimed & { next_attempt_at: string }, b: Claimed & { next_attempt_at: string }) =>
    a.next_attempt_at < b.next_attempt_at ? -1 : a.next_attempt_at > b.next_attempt_at ? 1 : a.id - b.id;
  if (postgres) {
    const { rows } = await sql<Claimed & { next_attempt_at: string; async_commit: string }>`WITH ${chosen}
      UPDATE webhook_deliveries AS d SET lease_until = ${leaseUntil}
      FROM chosen, webhook_endpoints AS e
      WHERE d.id = chosen.id AND e.id = d.endpoint_id
      RETURNING d.id, d.endpoint_id, d.message_id, d.body, d.next_step, d.updated_at, d.next_attempt_at,
        e.url, e.secret, e.previous_secret, e.previous_secret_until, e.retry_config,
        set_config('synchronous_commit', 'off', true) AS async_commit`.execute(database.db);
    return rows
      .sort(byDue)
      .map(({ next_attempt_at: _, async_commit: __, ...c }) => ({ ...c, lease_until: leaseUntil }));
  }
  return inTransaction(
    database,
    async (trx) => {
      const { rows } = await sql<Claimed & { next_attempt_at: string }>`WITH ${chosen}
      SELECT d.id, d.endpoint_id, d.message_id, d.body, d.next_step, d.updated_at, d.next_attempt_at,
        e.url, e.secret, e.previous_secret, e.previous_secret_until, e.retry_config
      FROM chosen JOIN webhook_deliveries d ON d.id = chosen.id JOIN webhook_endpoints e ON e.id = d.endpoint_id`.execute(
        trx,
      );
      if (rows.length > 0)
        await trx
          .updateTable('webhook_deliveries')
          .set({ lease_until: leaseUntil })
          .where(
            'id',
            'in',
            rows.map((r) => r.id),
          )
          .execute();
      return rows.sort(byDue).map(({ next_attempt_at: _, ...c }) => ({ ...c, lease_until: leaseUntil }));
    },
    false,
  );
}

/** Gives up leases still as claimed (deliveries claimed and not attempted), so they need not be waited out. */
export async function releaseLeases(database: Database, deliveries: readonly Claimed[]): Promise<void> {
  const byLease = new Map<string, number[]>();
  for (const d of deliveries) byLease.set(d.lease_until, [...(byLease.get(d.lease_until) ?? []), d.id]);
  for (const [leaseUntil, ids] of byLease)
    await database.db
      .updateTable('webhook_deliveries')
      .set({ lease_until: null })
      .where('id', 'in', ids)
      .where('lease_until', '=', leaseUntil)
      .execute();
}
