import type { Database, Executor } from '../store/database.js';
import { existingCache, ListeningCache, listeningCache } from '../store/listening-cache.js';
import { prepared } from '../store/prepared.js';
import type { WriteContext } from './context.js';
import { checkHeld, clockNow } from './credentials-clock.js';
import type { EventKind, OutboxEvent } from './events.js';

/**
 * Who receives events (event_subscriptions), and which of a write's events someone receives, known
 * before they are built: the outbox keeps only events a subscription matches (core/events.ts, its
 * insert's `WHERE EXISTS`, which stays the final word), so an event ruled out here is one that
 * condition would have dropped, and it is neither checked, encoded nor sent.
 */

/** Notified by migration 0020's triggers in the transaction of every change to event_subscriptions. */
export const SUBSCRIPTIONS_CHANNEL = 'engram_event_subscriptions';

/** Who receives events: a subscriber's kinds in one organization and project (a webhook endpoint's, say). */
export interface Subscription {
  organizationId: string;
  projectId: string;
  types: readonly string[];
}

/** Transactions that changed subscriptions: what this process holds of them does not answer for those. */
const changedIn = new WeakSet<Executor>();

/**
 * Sets what a subscriber (a stable name, e.g. `webhook_endpoint:12`) receives from now on, replacing
 * what it received before; null ends its subscription. Call it in the transaction that changes what
 * the subscriber wants, so no write sees one without the other.
 */
export async function subscribe(trx: Executor, subscriber: string, subscription: Subscription | null): Promise<void> {
  if (trx.isTransaction) changedIn.add(trx);
  await trx.deleteFrom('event_subscriptions').where('subscriber', '=', subscriber).execute();
  const types = [...new Set(subscription?.types ?? [])];
  if (!subscription || types.length === 0) return;
  await trx
    .insertInto('event_subscriptions')
    .values(
      types.map((type) => ({
        organization_id: subscription.organizationId,
        type,
        project_id: subscription.projectId,
        subscriber,
      })),
    )
    .execute();
}

/** Whether a subscription receives an event of this project (null: of the organization as a whole) and kind, as fan-out sends them. */
export type Receives = (projectId: string | null, type: EventKind) => boolean;

/** The organization's subscriptions with the credentials clock of the same snapshot (one row with none). */
const subscriptionRows = prepared(1, (db, organizationId: string) =>
  db
    .selectFrom(db.selectNoFrom(clockNow.as('generation')).as('clock'))
    .leftJoin('event_subscriptions as s', (join) => join.on('s.organization_id', '=', organizationId))
    .select(['clock.generation', 's.project_id', 's.type']),
);

/** Who receives an organization's events, as read at `clock` (core/credentials-clock.ts). */
interface HeldReceivers {
  receives: Receives;
  clock: number;
}

async function readReceivers(db: Executor, organizationId: string): Promise<HeldReceivers> {
  const rows = await subscriptionRows(db, organizationId);
  const found = rows.filter((r): r is typeof r & { type: string; project_id: string } => r.type !== null);
  const kinds = new Set(found.map((r) => r.type));
  const inProject = new Set(found.map((r) => `${r.project_id}\u0000${r.type}`));
  return {
    receives: (projectId, type) => (projectId === null ? kinds.has(type) : inProject.has(`${projectId}\u0000${type}`)),
    clock: Number(rows[0]!.generation),
  };
}

/** Organizations whose subscriptions one process holds at most. */
const MAX_ORGANIZATIONS = 10_000;

/**
 * Who receives the events of the write of `ctx` about to run on `db` (its transaction, or the pool
 * for a statement of its own), or undefined when this process cannot tell without a round trip of
 * its own: then every event is sent and the outbox insert's condition decides.
 * - SQLite: read in the write's transaction (an in-process statement), which holds the write lock,
 *   so exactly what the insert's condition sees, with any number of processes on the file. Keeping
 *   them behind `PRAGMA data_version` would save nothing: that check is a statement per write too,
 *   and any write by another process moves it.
 * - PostgreSQL: the organization's subscriptions as this process holds them, read once on first
 *   need and kept while exact (store/listening-cache.ts, channel engram_event_subscriptions), for a
 *   write whose request's authentication waited for the listening connection to catch up
 *   (`ctx.caughtUp`): every subscription committed before the request arrived is then in what is
 *   held. For a request using a held key unverified (`ctx.heldAt`), only subscriptions read at the
 *   same credentials clock: its write checks that clock, so they too are exact if it lands
 *   (core/credentials-clock.ts); read again otherwise, and CredentialsMoved if the clock moved since
 *   the key was read. Not for a transaction that changed subscriptions itself.
 */
export async function receiversFor(database: Database, db: Executor, ctx: WriteContext): Promise<Receives | undefined> {
  if (database.dialect === 'sqlite') return (await readReceivers(db, ctx.organizationId)).receives;
  // Watched from the first write on, so that the writes of caught-up requests find it listening.
  const held = listeningCache(
    database,
    SUBSCRIPTIONS_CHANNEL,
    () => new ListeningCache<HeldReceivers>(MAX_ORGANIZATIONS),
  );
  if (!held?.cache.listens || !(ctx.caughtUp || ctx.heldAt !== undefined) || changedIn.has(db)) return undefined;
  const { cache } = held;
  const kept = cache.get(ctx.organizationId);
  if (kept && (ctx.caughtUp || kept.clock === ctx.heldAt)) return kept.receives;
  const generation = cache.generation;
  const read = await readReceivers(db, ctx.organizationId);
  checkHeld(ctx.heldAt, read.clock);
  cache.keep(ctx.organizationId, generation, read);
  return read.receives;
}

/** The events of a write that a subscription may receive (all of them when that cannot be told: receiversFor). */
export async function receivedEvents(
  database: Database,
  trx: Executor,
  ctx: WriteContext,
  events: OutboxEvent[],
): Promise<OutboxEvent[]> {
  if (events.length === 0) return events;
  let receives = await receiversFor(database, trx, ctx);
  // Many events whose receivers are not held (an import's batch, written by a job): read them in the
  // write's transaction, one round trip where checking, encoding and sending them all took much more.
  // A subscription committed meanwhile is one committed concurrently with the write, which it need not see.
  if (!receives && events.length >= READ_RECEIVERS_FROM)
    receives = (await readReceivers(trx, ctx.organizationId)).receives;
  return receives ? events.filter((e) => receives(e.projectId, e.type)) : events;
}

/** A write with at least this many events reads their receivers when it does not hold them (receivedEvents). */
const READ_RECEIVERS_FROM = 16;

/** After a transaction committed: if it changed subscriptions, this process holds none read before, without waiting for its own notification. */
export function subscriptionsCommitted(database: Database, trx: Executor): void {
  if (changedIn.has(trx)) existingCache(database, SUBSCRIPTIONS_CHANNEL)?.forgetAll();
}
