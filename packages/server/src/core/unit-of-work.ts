import type { Transaction } from 'kysely';
import { nowIso, type Database } from '../store/database.js';
import type { DB } from '../store/schema.js';
import { appendAudit, type AuditEntry } from './audit-log.js';
import type { WriteContext } from './context.js';
import { enqueueEvents, notifyEventsCommitted, type EventKind, type EventPayload, type OutboxEvent } from './events.js';

export type { WriteContext, WriteJournal } from './context.js';

export interface Effects {
  /** One audit row per state-changing action. */
  audit(action: string, target: { type: string; id: string | number | null }, result?: string): void;
  /** An event of the catalogue (core/events.ts) for webhook delivery, committed with the change. */
  emit<K extends EventKind>(type: K, payload: EventPayload<K>): void;
  readonly now: string;
}

/**
 * Runs a change in one transaction and commits its audit rows and outbox events with it:
 * the single mechanism every writing route uses, so none can forget either.
 */
export async function write<T>(
  database: Database,
  ctx: WriteContext,
  change: (trx: Transaction<DB>, effects: Effects) => Promise<T>,
): Promise<T> {
  const earlier = ctx.journal?.replay();
  if (earlier) return earlier.value as T;
  const events: OutboxEvent[] = [];
  const result = await database.db.transaction().execute(async (trx) => {
    events.length = 0;
    const now = nowIso();
    const audits: AuditEntry[] = [];
    const effects: Effects = {
      now,
      audit: (action, target, result = 'success') =>
        audits.push({
          organizationId: ctx.organizationId, projectId: ctx.projectId, actorType: ctx.actor.type,
          actorId: ctx.actor.id, action, targetType: target.type,
          targetId: target.id === null ? null : String(target.id), result, requestId: ctx.requestId, createdAt: now,
        }),
      emit: (type, payload) =>
        events.push({ organizationId: ctx.organizationId, projectId: ctx.projectId, type, payload, createdAt: now } as OutboxEvent),
    };
    const result = await change(trx, effects);
    await ctx.journal?.record(trx, result);
    await enqueueEvents(trx, events);
    await appendAudit(trx, audits);
    return result;
  });
  if (events.length > 0) notifyEventsCommitted();
  return result;
}
