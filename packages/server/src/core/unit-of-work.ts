import { CompiledQuery, type Transaction } from 'kysely';
import { nowIso, type Database } from '../store/database.js';
import { LAST_IN_TRANSACTION } from '../store/postgres-connections.js';
import type { DB } from '../store/schema.js';
import { auditInsert, type AuditEntry } from './audit-log.js';
import { inTransaction } from './commit-group.js';
import type { JournalRecord, PendingWrite, WriteContext } from './context.js';
import { verifyHeld } from './credentials-clock.js';
import { receivedEvents, subscriptionsCommitted } from './event-subscriptions.js';
import { notifyEventsCommitted, outboxInsert, type EventKind, type EventPayload, type OutboxEvent } from './events.js';
export type { PendingWrite, WriteContext, WriteJournal } from './context.js';

export interface Effects {
  /** One audit row per state-changing action. */
  audit(action: string, target: { type: string; id: string | number | null }, result?: string): void;
  /** An event of the catalogue (core/events.ts) for webhook delivery, committed with the change. */
  emit<K extends EventKind>(type: K, payload: EventPayload<K>): void;
  /** A statement to run in this transaction whose result the change does not need: sent with the audit and outbox rows. */
  later(statement: PendingWrite | undefined): void;
  /** Runs `task` once the transaction has committed (not if it rolls back): work on what the change made final. */
  afterCommit(task: () => void): void;
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
  let sent: OutboxEvent[] = [];
  let committed: Array<() => void> = [];
  let transaction: Transaction<DB> | undefined;
  const result = await inTransaction(database, async (trx) => {
    transaction = trx;
    // A request using a held key writes nothing unless its credentials still hold (core/credentials-clock.ts).
    await verifyHeld(trx, ctx.heldAt);
    await ctx.verifyActor?.(trx);
    events.length = 0;
    const now = nowIso();
    const audits: AuditEntry[] = [];
    const pending: PendingWrite[] = [];
    committed = [];
    const effects: Effects = {
      now,
      afterCommit: (task) => committed.push(task),
      audit: (action, target, result = 'success') =>
        audits.push({
          organizationId: ctx.organizationId,
          projectId: ctx.projectId,
          actorType: ctx.actor.type,
          actorId: ctx.actor.id,
          action,
          targetType: target.type,
          targetId: target.id === null ? null : String(target.id),
          result,
          requestId: ctx.requestId,
          createdAt: now,
        }),
      emit: (type, payload) =>
        events.push({
          organizationId: ctx.organizationId,
          projectId: ctx.projectId,
          type,
          payload,
          createdAt: now,
        } as OutboxEvent),
      later: (statement) => {
        if (statement) pending.push(statement);
      },
    };
    const result = await change(trx, effects);
    // Sent with the last statements; its count decides: a request whose claim a retry took over must not commit.
    const journaled = ctx.journal?.record(trx, result);
    // Only the events someone may receive are checked, encoded and sent (core/event-subscriptions.ts).
    sent = await receivedEvents(database, trx, ctx, events);
    effects.later(outboxInsert(trx, sent));
    effects.later(auditInsert(trx, audits));
    await runTogether(database, trx, pending, journaled);
    journaled?.recorded();
    return result;
  });
  subscriptionsCommitted(database, transaction!);
  if (sent.length > 0) notifyEventsCommitted();
  for (const task of committed) task();
  return result;
}

/**
 * A change with no organization to audit it in (a user without one): its own transaction, audit
 * rows and events dropped, its pending statements still run.
 */
export async function writeUnaudited<T>(
  database: Database,
  change: (trx: Transaction<DB>, effects: Effects) => Promise<T>,
): Promise<T> {
  const committed: Array<() => void> = [];
  const result = await database.db.transaction().execute(async (trx) => {
    const pending: PendingWrite[] = [];
    const result = await change(trx, {
      now: nowIso(),
      audit: () => {},
      emit: () => {},
      later: (s) => void (s && pending.push(s)),
      afterCommit: (task) => committed.push(task),
    });
    await runTogether(database, trx, pending);
    return result;
  });
  for (const task of committed) task();
  return result;
}

/**
 * Runs statements that return nothing the caller reads, last in their transaction. On PostgreSQL
 * they travel as one statement (each a data-modifying CTE; all see the same snapshot, so none may
 * depend on another's rows), marked so that the COMMIT goes out with it (store/database.ts,
 * LAST_IN_TRANSACTION): one round trip for them all and the COMMIT. SQLite runs in process, so
 * it runs them in order.
 */
async function runTogether(
  database: Database,
  trx: Transaction<DB>,
  statements: PendingWrite[],
  guard?: JournalRecord,
): Promise<void> {
  if (database.dialect === 'sqlite') {
    for (const statement of statements) await trx.executeQuery(statement.compile());
    if (guard && (await trx.executeQuery(guard.statement.compile())).rows.length !== 1) throw guard.lost();
    return;
  }
  if (statements.length === 0 && !guard) return;
  try {
    await trx.executeQuery(
      asCommonTableExpressions(
        statements.map((statement) => statement.compile()),
        guard?.statement.compile(),
      ),
    );
  } catch (error) {
    if (guard && (error as { code?: string }).code === GUARD_FAILED) throw guard.lost();
    throw error;
  }
}

/**
 * SQLSTATE division_by_zero, which the joined statement raises when its guard changed no row
 * (`1 / count(*)`): it cannot come from the history, outbox and audit inserts beside it. An error,
 * so that the transaction is aborted and the COMMIT sent behind the statement rolls it back.
 */
const GUARD_FAILED = '22012';

/**
 * `WITH "w0" AS (…), "w1" AS (…) SELECT 1 AS "done"` from compiled PostgreSQL statements, each
 * statement's parameters renumbered after those before it: the text Kysely compiles from the same
 * statements as CTEs, without building and compiling them again (a bulk write's rows are most of
 * its parameters: rebuilding them cost more than running the statement's JavaScript). The texts
 * are few (one per shape and row count), so each joined text is kept: the same string every time,
 * whose hash the named-statement lookup (store/database.ts) computes once.
 */
function asCommonTableExpressions(statements: CompiledQuery[], guard?: CompiledQuery): CompiledQuery {
  if (guard) statements = [...statements, guard];
  const key = (guard ? 'guarded\u0000' : '') + statements.map((statement) => statement.sql).join('\u0000');
  let text = joinedTexts.get(key);
  if (text === undefined) {
    let offset = 0;
    const ctes = statements.map((statement, i) => {
      const renumbered = renumberParameters(statement.sql, offset);
      offset += statement.parameters.length;
      return `"w${i}" as (${renumbered})`;
    });
    // The guard (last) must have changed exactly one row: otherwise 1 / 0 fails the statement (GUARD_FAILED).
    const done = guard ? `1 / (select count(*)::int from "w${statements.length - 1}")` : '1';
    text = `${LAST_IN_TRANSACTION}with ${ctes.join(', ')} select ${done} as "done"`;
    if (joinedTexts.size >= 256) joinedTexts.delete(joinedTexts.keys().next().value!);
    joinedTexts.set(key, text);
  }
  // A loop rather than flatMap: a bulk write's statements carry hundreds of parameters, and V8's
  // flatMap copies each through its generic path, which cost more than the rest of this function.
  const parameters: unknown[] = [];
  for (const statement of statements) for (const value of statement.parameters) parameters.push(value);
  return CompiledQuery.raw(text, parameters);
}

const joinedTexts = new Map<string, string>();

/** `$n` becomes `$(n + offset)` outside quoted literals and identifiers. */
const renumberParameters = (text: string, offset: number) =>
  offset === 0
    ? text
    : text.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\$(\d+)/g, (match, n: string | undefined) =>
        n === undefined ? match : `$${Number(n) + offset}`,
      );
