import type { Transaction } from 'kysely';
import { appendAudit, type AuditEntry } from '../modules/audit/service.js';
import { enqueueEvents, type OutboxEvent } from '../modules/events/service.js';
import { nowIso, type Database } from '../store/database.js';
import type { DB } from '../store/schema.js';
import type { Actor } from '../http/auth.js';

/** Who is acting, where, and under which request: everything a change records about itself. */
export interface WriteContext {
  actor: Actor;
  organizationId: string;
  projectId: string | null;
  requestId: string | null;
  /** Set for a request with an Idempotency-Key: how its writes are recognised when it is retried. */
  journal?: WriteJournal;
}

/**
 * Exactly-once writes across a crash: each write of an idempotent request records its result in
 * the same transaction, so a retry after a crash between commit and answer is handed the committed
 * result instead of running the change again. Results must survive JSON.
 */
export interface WriteJournal {
  /** The result the next write of this request committed in an earlier attempt, if it did. */
  replay(): { value: unknown } | undefined;
  /** Records the result of the write now committing, inside its transaction. */
  record(trx: Transaction<DB>, value: unknown): Promise<void>;
}

export interface Effects {
  /** One audit row per state-changing action. */
  audit(action: string, target: { type: string; id: string | number | null }, result?: string): void;
  /** An event for webhook delivery, committed with the change. */
  emit(type: string, payload: Record<string, unknown>): void;
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
  return database.db.transaction().execute(async (trx) => {
    const now = nowIso();
    const audits: AuditEntry[] = [];
    const events: OutboxEvent[] = [];
    const effects: Effects = {
      now,
      audit: (action, target, result = 'success') =>
        audits.push({
          organizationId: ctx.organizationId, projectId: ctx.projectId, actorType: ctx.actor.type,
          actorId: ctx.actor.id, action, targetType: target.type,
          targetId: target.id === null ? null : String(target.id), result, requestId: ctx.requestId, createdAt: now,
        }),
      emit: (type, payload) =>
        events.push({ organizationId: ctx.organizationId, projectId: ctx.projectId, type, payload, createdAt: now }),
    };
    const result = await change(trx, effects);
    await ctx.journal?.record(trx, result);
    await enqueueEvents(trx, events);
    // Last, so the chain head stays locked for as short a time as possible.
    await appendAudit(trx, audits);
    return result;
  });
}
