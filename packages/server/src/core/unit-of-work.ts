import { CompiledQuery, sql, type Kysely, type OperationNodeSource, type Transaction } from 'kysely';
import { prepared } from '../store/prepared.js';
import { LAST_IN_TRANSACTION, nowIso, type Database } from '../store/database.js';
import type { DB } from '../store/schema.js';
import { auditInsert, auditInsertPerRow, type AuditEntry } from './audit-log.js';
import type { PendingWrite, WriteContext } from './context.js';
import { notifyEventsCommitted, outboxInsert, outboxInsertPerRow, type EventKind, type EventPayload, type OutboxEvent } from './events.js';

export type { PendingWrite, WriteContext, WriteJournal } from './context.js';

export interface Effects {
  /** One audit row per state-changing action. */
  audit(action: string, target: { type: string; id: string | number | null }, result?: string): void;
  /** An event of the catalogue (core/events.ts) for webhook delivery, committed with the change. */
  emit<K extends EventKind>(type: K, payload: EventPayload<K>): void;
  /** A statement to run in this transaction whose result the change does not need: sent with the audit and outbox rows. */
  later(statement: PendingWrite | undefined): void;
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
  const result = await inTransaction(database, async (trx) => {
    events.length = 0;
    const now = nowIso();
    const audits: AuditEntry[] = [];
    const pending: PendingWrite[] = [];
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
      later: (statement) => {
        if (statement) pending.push(statement);
      },
    };
    const result = await change(trx, effects);
    if (ctx.journal) pending.push(ctx.journal.record(trx, result));
    effects.later(outboxInsert(trx, events));
    effects.later(auditInsert(trx, audits));
    await runTogether(database, trx, pending);
    return result;
  });
  if (events.length > 0) notifyEventsCommitted();
  return result;
}

/** The write context's values as oneStatementWrite binds them, for the shape's own rows. */
export interface BoundContext {
  projectId: string | null;
  actorType: string;
  actorId: number | null;
  requestId: string | null;
  now: string;
}

/** What a one-statement write does (oneStatementWrite); every value in it is bound, never shaping the SQL. */
export interface InsertShape {
  /** Data-modifying CTEs run in order, the last named `inserted` and returning the row. */
  steps: Array<[name: string, statement: OperationNodeSource]>;
  /** The owning module's further inserts, reading `inserted`. */
  rows: OperationNodeSource[];
  audit: { action: string; targetType: string };
  /** An event carrying the inserted row, its payload from `eventJson` (the row's id is set at memory.id). */
  event?: { type: EventKind; payloadJson: string };
}

/**
 * One INSERT and what it implies, as a single statement (PostgreSQL): the shape's steps, its rows,
 * and an audit row and event per row of `inserted`. One statement is atomic without BEGIN and
 * COMMIT: one round trip where write() takes two. Nothing but the steps takes effect when the INSERT
 * does not land (ON CONFLICT DO NOTHING): the result is then undefined, and the caller takes write().
 * Built and compiled once (store/prepared.ts), with a marker for each of `arity` arguments and of the
 * write context's values. Not for a request with an Idempotency-Key (its journal row needs the
 * result): the caller checks.
 */
export function oneStatementWrite<A extends unknown[]>(arity: number, shape: (db: Kysely<DB>, bound: BoundContext, ...args: A) => InsertShape) {
  let emits: boolean | undefined;
  const statement = prepared(6 + arity, (db, organizationId: string, projectId: string | null, actorType: string, actorId: number | null,
    requestId: string | null, now: string, ...args: A) => {
    const { steps, rows, audit, event } = shape(db as Kysely<DB>, { projectId, actorType, actorId, requestId, now }, ...args);
    if (steps.at(-1)?.[0] !== 'inserted') throw new Error('oneStatementWrite: the last step must be named inserted');
    emits = event !== undefined;
    const effects = [
      ...rows,
      ...(event ? [outboxInsertPerRow({ organizationId, projectId, type: event.type, payloadJson: event.payloadJson, createdAt: now }, 'inserted')] : []),
      auditInsertPerRow({
        organizationId, projectId, actorType, actorId, action: audit.action, targetType: audit.targetType, result: 'success', requestId, createdAt: now,
      }, 'inserted'),
    ];
    const ctes = [...steps, ...effects.map((cte, i): [string, OperationNodeSource] => [`effect_${i}`, cte])];
    const query = sql`WITH ${sql.join(ctes.map(([name, cte]) => sql`${sql.id(name)} AS (${cte})`))} SELECT * FROM inserted`;
    return { compile: () => query.compile(db) };
  });
  return async <Row extends { id: number }>(database: Database, ctx: WriteContext, now: string, ...args: A): Promise<Row | undefined> => {
    if (database.dialect !== 'postgres' || ctx.journal) throw new Error('oneStatementWrite: PostgreSQL writes without a journal only');
    const [row] = (await statement(database.db, ctx.organizationId, ctx.projectId, ctx.actor.type, ctx.actor.id, ctx.requestId, now, ...args)) as Row[];
    if (row && emits) notifyEventsCommitted();
    return row;
  };
}

/** PostgreSQL: a transaction of its own. SQLite: a place in the next group commit. */
function inTransaction<T>(database: Database, work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
  if (database.dialect === 'postgres') return database.db.transaction().execute(work);
  let group = commitGroups.get(database);
  if (!group) commitGroups.set(database, (group = new CommitGroup(database)));
  return group.submit(work);
}

const commitGroups = new WeakMap<Database, CommitGroup>();

interface GroupedWrite {
  work(trx: Transaction<DB>): Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Group commit for SQLite, where a durable commit (synchronous=FULL) costs an fsync and blocks the
 * one connection: the writes submitted while the event loop was busy run in one transaction, each
 * inside its own savepoint (a write that fails is rolled back alone and fails alone), and all are
 * answered only after that transaction's COMMIT returned, so none is acknowledged before it is
 * durable. A failed COMMIT fails every write of the group, none of which then committed.
 */
class CommitGroup {
  private waiting: GroupedWrite[] = [];
  private scheduled = false;

  constructor(private readonly database: Database) {}

  submit<T>(work: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.waiting.push({ work, resolve: resolve as (value: unknown) => void, reject });
      if (this.scheduled) return;
      this.scheduled = true;
      // After the I/O of this turn of the event loop: requests read in the same turn join the group.
      setImmediate(() => void this.commit());
    });
  }

  private async commit(): Promise<void> {
    this.scheduled = false;
    const group = this.waiting.splice(0);
    const outcomes: Array<{ value: unknown } | { error: unknown }> = [];
    try {
      await this.database.db.transaction().execute(async (trx) => {
        if (group.length === 1) {
          outcomes.push({ value: await group[0]!.work(trx) });
          return;
        }
        for (const write of group) {
          await sql`SAVEPOINT grouped_write`.execute(trx);
          try {
            outcomes.push({ value: await write.work(trx) });
          } catch (error) {
            outcomes.push({ error });
            await sql`ROLLBACK TO grouped_write`.execute(trx);
          }
          await sql`RELEASE grouped_write`.execute(trx);
        }
      });
    } catch (error) {
      for (const write of group) write.reject(error);
      return;
    }
    group.forEach((write, i) => {
      const outcome = outcomes[i]!;
      if ('error' in outcome) write.reject(outcome.error);
      else write.resolve(outcome.value);
    });
  }
}

/**
 * A change with no organization to audit it in (a user without one): its own transaction, audit
 * rows and events dropped, its pending statements still run.
 */
export async function writeUnaudited<T>(database: Database, change: (trx: Transaction<DB>, effects: Effects) => Promise<T>): Promise<T> {
  return database.db.transaction().execute(async (trx) => {
    const pending: PendingWrite[] = [];
    const result = await change(trx, { now: nowIso(), audit: () => {}, emit: () => {}, later: (s) => void (s && pending.push(s)) });
    await runTogether(database, trx, pending);
    return result;
  });
}

/**
 * Runs statements that return nothing the caller reads, last in their transaction. On PostgreSQL
 * they travel as one statement (each a data-modifying CTE; all see the same snapshot, so none may
 * depend on another's rows), marked so that the COMMIT goes out with it (store/database.ts,
 * LAST_IN_TRANSACTION): one round trip for them all and the COMMIT. SQLite runs in process, so
 * it runs them in order.
 */
async function runTogether(database: Database, trx: Transaction<DB>, statements: PendingWrite[]): Promise<void> {
  if (database.dialect === 'sqlite') {
    for (const statement of statements) await trx.executeQuery(statement.compile());
    return;
  }
  if (statements.length === 0) return;
  await trx.executeQuery(asCommonTableExpressions(statements.map((statement) => statement.compile())));
}

/**
 * `WITH "w0" AS (…), "w1" AS (…) SELECT 1 AS "done"` from compiled PostgreSQL statements, each
 * statement's parameters renumbered after those before it: the text Kysely compiles from the same
 * statements as CTEs, without building and compiling them again (a bulk write's rows are most of
 * its parameters: rebuilding them cost more than running the statement's JavaScript). The texts
 * are few (one per shape and row count), so each joined text is kept: the same string every time,
 * whose hash the named-statement lookup (store/database.ts) computes once.
 */
function asCommonTableExpressions(statements: CompiledQuery[]): CompiledQuery {
  const key = statements.map((statement) => statement.sql).join('\u0000');
  let text = joinedTexts.get(key);
  if (text === undefined) {
    let offset = 0;
    const ctes = statements.map((statement, i) => {
      const renumbered = renumberParameters(statement.sql, offset);
      offset += statement.parameters.length;
      return `"w${i}" as (${renumbered})`;
    });
    text = `${LAST_IN_TRANSACTION}with ${ctes.join(', ')} select 1 as "done"`;
    if (joinedTexts.size >= 256) joinedTexts.delete(joinedTexts.keys().next().value!);
    joinedTexts.set(key, text);
  }
  return CompiledQuery.raw(text, statements.flatMap((statement) => statement.parameters));
}

const joinedTexts = new Map<string, string>();

/** `$n` becomes `$(n + offset)` outside quoted literals and identifiers. */
const renumberParameters = (text: string, offset: number) =>
  offset === 0 ? text : text.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\$(\d+)/g, (match, n: string | undefined) => (n === undefined ? match : `$${Number(n) + offset}`));
