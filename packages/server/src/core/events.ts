import { Type, type Static, type TObject } from '@sinclair/typebox';
import { PostgresAdapter, sql, type Insertable } from 'kysely';
import {
  containsText,
  decodeJson,
  encodeJson,
  nowIso,
  sqlLiteral,
  type Database,
  type Executor,
} from '../store/database.js';
import { renamedJson } from './pseudonyms.js';
import { preparedInsert } from '../store/prepared.js';
import type { OutboxEventsTable } from '../store/schema.js';
import type { ValidateFunction } from 'ajv';
import { bodyAjv } from './validation.js';

/**
 * The event catalogue: every kind of event the service emits, declared once with its payload
 * schema and version. The outbox accepts only these; webhook delivery serves this list as its
 * "event types" operation. Memory events carry the memory's public representation; the outbox
 * records which memory, so forgetting it erases that copy (eraseMemoryEvents), as webhook
 * deliveries do theirs. A change to a payload that is not purely additive takes a new version.
 */

interface EventType<P extends TObject = TObject> {
  version: number;
  description: string;
  payload: P;
}

const event = <P extends TObject>(version: number, description: string, payload: P): EventType<P> => ({
  version,
  description,
  payload,
});
const Id = Type.Integer({ minimum: 1 });
/** A relation's ids and type, never its metadata (which may quote content). */
const RelationPayload = Type.Object({
  relation_id: Id,
  type: Type.String(),
  source_id: Id,
  target_id: Id,
  end_user_id: Type.String(),
});

const MemoryRepresentation = Type.Object(
  { id: Id, end_user_id: Type.String() },
  {
    additionalProperties: true,
    description: 'The memory as GET /memory/{memory_id} answers it (text, tags, metadata, …)',
  },
);
const ApiKeyPayload = Type.Object({
  api_key_id: Id,
  name: Type.String(),
  project_id: Type.Union([Type.String(), Type.Null()]),
  scopes: Type.Array(Type.String()),
});

export const EVENT_TYPES = {
  'memory.created': event(
    2,
    'A memory (or a /v1 turn, or a summary) was stored.',
    Type.Object({
      memory: MemoryRepresentation,
      tenant_id: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  'memory.updated': event(
    2,
    "A memory's tags, importance, metadata or source changed; `fields` names them.",
    Type.Object({
      memory: MemoryRepresentation,
      fields: Type.Array(Type.String()),
    }),
  ),
  'memory.deleted': event(
    1,
    'A memory was forgotten (erased down to a tombstone).',
    Type.Object({
      memory_id: Id,
      end_user_id: Type.String(),
    }),
  ),
  'end_user.purged': event(
    2,
    'Every memory of an end user was forgotten; `end_user_id` is their pseudonym (`eu~…`), never the id (docs/api.md, "What forgetting removes").',
    Type.Object({
      end_user_id: Type.String(),
      deleted: Type.Integer({ minimum: 0 }),
    }),
  ),
  'relation.created': event(
    1,
    'Two memories of an end user were related (POST /memory/relations, or an import restoring a relation).',
    RelationPayload,
  ),
  'relation.deleted': event(1, 'A relation between two memories was removed.', RelationPayload),
  'decision.resolved': event(
    1,
    'A conflicting statement (GET /memory/decisions) was resolved.',
    Type.Object({
      decision_id: Id,
      end_user_id: Type.String(),
      resolution: Type.Union([Type.Literal('keep_one'), Type.Literal('keep_both'), Type.Literal('dismiss')]),
      kept_memory_id: Type.Union([Id, Type.Null()]),
      memory_ids: Type.Array(Id),
    }),
  ),
  'ontology.updated': event(
    1,
    "A project's ontology was replaced; its memories are reclassified by the job named.",
    Type.Object({
      revision: Type.Integer({ minimum: 1 }),
      job_id: Id,
    }),
  ),
  'project.created': event(
    1,
    'A project was created.',
    Type.Object({
      project_id: Type.String(),
      name: Type.String(),
      slug: Type.String(),
    }),
  ),
  'project.updated': event(
    1,
    "A project's name, slug or description changed.",
    Type.Object({
      project_id: Type.String(),
      changed: Type.Array(Type.String()),
      name: Type.String(),
      slug: Type.String(),
      description: Type.String(),
      updated_at: Type.String(),
    }),
  ),
  'project.deleted': event(
    1,
    'A project was deleted and its memories tombstoned.',
    Type.Object({
      project_id: Type.String(),
      memories_tombstoned: Type.Integer({ minimum: 0 }),
    }),
  ),
  'sync.completed': event(
    1,
    'A connector sync finished; counts of the objects it saw.',
    Type.Object({
      connection_id: Id,
      sync_id: Id,
      provider: Type.String(),
      seen: Type.Integer(),
      created: Type.Integer(),
      updated: Type.Integer(),
      deleted: Type.Integer(),
      unchanged: Type.Integer(),
      failed: Type.Integer(),
    }),
  ),
  'sync.failed': event(
    1,
    'A connector sync stopped on an error (the reason, never a credential).',
    Type.Object({
      connection_id: Id,
      sync_id: Id,
      provider: Type.String(),
      seen: Type.Integer(),
      created: Type.Integer(),
      updated: Type.Integer(),
      deleted: Type.Integer(),
      unchanged: Type.Integer(),
      failed: Type.Integer(),
      error: Type.String(),
    }),
  ),
  'api_key.created': event(1, 'An API key was created (never its secret).', ApiKeyPayload),
  'api_key.revoked': event(1, 'An API key was revoked.', ApiKeyPayload),
  'webhook.test': event(
    1,
    'Sent to one endpoint by its "send a test event" operation.',
    Type.Object({
      endpoint_id: Id,
      message: Type.String(),
    }),
  ),
  'endpoint.disabled': event(
    1,
    'A webhook endpoint failed every attempt for its disable period and was disabled.',
    Type.Object({
      endpoint_id: Id,
      url: Type.String(),
      failing_since: Type.String(),
      reason: Type.String(),
    }),
  ),
  'export.completed': event(
    1,
    "An export's artifact is ready to download.",
    Type.Object({
      export_id: Id,
      project_id: Type.String(),
      rows: Type.Integer({ minimum: 0 }),
      size: Type.Integer({ minimum: 0 }),
      sha256: Type.String(),
    }),
  ),
  'export.failed': event(
    1,
    'An export failed after its last attempt.',
    Type.Object({
      export_id: Id,
      project_id: Type.String(),
      error: Type.String(),
    }),
  ),
  'member.invited': event(
    1,
    'A person was invited to the organization (the invitation id and role; never the address).',
    Type.Object({
      invitation_id: Id,
      role: Type.String(),
    }),
  ),
  'member.invitation_revoked': event(
    1,
    'A pending invitation was revoked; its link no longer works.',
    Type.Object({
      invitation_id: Id,
      role: Type.String(),
    }),
  ),
  'member.joined': event(
    1,
    'A person joined the organization (accepted an invitation, or added by an operator).',
    Type.Object({
      user_id: Id,
      role: Type.String(),
    }),
  ),
  'member.role_changed': event(
    1,
    "A member's role changed.",
    Type.Object({
      user_id: Id,
      role: Type.String(),
      previous_role: Type.String(),
    }),
  ),
  'member.removed': event(
    1,
    'A member was removed from the organization; their sessions ended.',
    Type.Object({
      user_id: Id,
      previous_role: Type.String(),
    }),
  ),
} as const satisfies Record<string, EventType>;

export type EventKind = keyof typeof EVENT_TYPES;
export type EventPayload<K extends EventKind> = Static<(typeof EVENT_TYPES)[K]['payload']>;

export function isEventKind(kind: string): kind is EventKind {
  return Object.hasOwn(EVENT_TYPES, kind);
}

/** The catalogue as data, in name order: what a "list event types" operation serves. */
export function listEventTypes(): Array<{ type: EventKind; version: number; description: string; payload: TObject }> {
  return (Object.keys(EVENT_TYPES) as EventKind[]).sort().map((type) => ({ type, ...EVENT_TYPES[type] }));
}

/** Each kind's payload check, compiled at its first event (all at once cost a command-line start ~0.4 s of CPU). */
const validators = new Map<EventKind, ValidateFunction>();
function validatorOf(kind: EventKind): ValidateFunction | undefined {
  if (!Object.hasOwn(EVENT_TYPES, kind)) return undefined;
  let valid = validators.get(kind);
  if (!valid) {
    valid = bodyAjv.compile({ ...EVENT_TYPES[kind].payload, additionalProperties: false });
    validators.set(kind, valid);
  }
  return valid;
}

export interface OutboxEvent<K extends EventKind = EventKind> {
  organizationId: string;
  projectId: string | null;
  type: K;
  payload: EventPayload<K>;
  createdAt: string;
}

/**
 * The insert that writes events to the durable outbox in the transaction of the change they
 * describe (the unit of work sends it); delivery reads them later. Only events a subscription
 * matches are written (`subscribed`): one nobody receives costs no row. An undeclared kind or a
 * payload off its schema is a programming error. Undefined when there is nothing to write.
 */
export function outboxInsert(trx: Executor, events: OutboxEvent[]) {
  if (events.length === 0) return undefined;
  for (const e of events) checkEvent(e);
  return outboxRows(
    trx,
    events.map((e) => ({
      organization_id: e.organizationId,
      project_id: e.projectId,
      type: e.type,
      payload: encodeJson(e.payload),
      memory_id: memoryOf(e),
      created_at: e.createdAt,
    })),
  );
}

const OUTBOX_COLUMNS = ['organization_id', 'project_id', 'type', 'payload', 'memory_id', 'created_at'] as const;

/**
 * INSERT … SELECT from the rows' VALUES, each kept if subscribed. PostgreSQL types a VALUES list of
 * parameters as text, so the columns that are not text are cast there; SQLite names its columns
 * column1, column2, … and takes no column list on the alias.
 */
const outboxRows = preparedInsert<Insertable<OutboxEventsTable>>(OUTBOX_COLUMNS, (db, rows) => {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const cast = (value: unknown, type: string) => (postgres ? sql`CAST(${value} AS ${sql.raw(type)})` : sql`${value}`);
  const values = rows.map(
    (r) =>
      sql`(${r.organization_id}, ${r.project_id}, ${r.type}, ${cast(r.payload, 'json')}, ${cast(r.memory_id, 'bigint')}, ${cast(r.created_at, 'timestamptz')})`,
  );
  const [organization, project, type, ...rest] = postgres
    ? OUTBOX_COLUMNS.map((c) => `event.${c}`)
    : OUTBOX_COLUMNS.map((_, i) => `event.column${i + 1}`);
  const statement = sql`INSERT INTO outbox_events (${sql.raw(OUTBOX_COLUMNS.join(', '))})
    SELECT ${sql.raw([organization, project, type, ...rest].join(', '))}
    FROM (VALUES ${sql.join(values)}) AS ${sql.raw(postgres ? `event (${OUTBOX_COLUMNS.join(', ')})` : 'event')}
    WHERE ${sql.raw(subscribed(organization!, project!, type!))}`;
  return { compile: () => statement.compile(db) };
});

/**
 * SQL true when a subscription receives the event of these expressions: one of its organization
 * and kind, in its project (or, for an event of the organization as a whole, any project), as
 * delivery's fan-out sends them (modules/webhooks). Evaluated in the writing transaction, it is the
 * final word: the server rules out before building an event only what this would drop
 * (core/event-subscriptions.ts), so a subscription committed before the write's statement began
 * receives the events the server sent, and those of every request that arrived after it committed.
 */
function subscribed(organization: string, project: string, type: string): string {
  return `EXISTS (SELECT 1 FROM event_subscriptions s WHERE s.organization_id = ${organization} AND s.type = ${type}
      AND (${project} IS NULL OR s.project_id = ${project}))`;
}

/**
 * PostgreSQL: the insert writing one event per row of the CTE `inserted` of a grouped insert
 * (core/grouped-statements.ts#groupedInsert), if subscribed: the memory the event carries is the row
 * inserted, so each write's payload (from eventJson, in the CTE `input`) is written with the row's
 * id at `memory.id` (by jsonb_set, so such a payload's keys are stored in jsonb's order). A write
 * whose event was found unsubscribed before it was built carries no payload (null) and gets no row.
 */
export function outboxInsertPerInsertedRow(type: EventKind): string {
  return `INSERT INTO outbox_events (organization_id, project_id, type, payload, memory_id, created_at)
    SELECT input.ctx_organization_id, input.ctx_project_id, ${sqlLiteral(type)},
      jsonb_set(input.ctx_event_payload, '{memory,id}', to_jsonb(inserted.id)), inserted.id, input.ctx_now
    FROM inserted JOIN input USING (ord)
    WHERE input.ctx_event_payload IS NOT NULL AND ${subscribed('input.ctx_organization_id', 'input.ctx_project_id', sqlLiteral(type))}
    ORDER BY inserted.id`;
}

/** A payload of a memory event checked against the catalogue and encoded, for a grouped insert's event. */
export function eventJson<K extends EventKind>(type: K, payload: EventPayload<K>): string {
  const event = { type, payload } as OutboxEvent;
  checkEvent(event);
  if (memoryOf(event) === null) throw new Error(`Event ${type} carries no memory`);
  return encodeJson(payload);
}

let checked = 0;

/** How many events this process has checked against the catalogue (for tests: an event nobody receives is never built). */
export const eventsChecked = (): number => checked;

function checkEvent(e: Pick<OutboxEvent, 'type' | 'payload'>): void {
  checked++;
  const valid = validatorOf(e.type);
  if (!valid) throw new Error(`Undeclared event kind ${String(e.type)}; declare it in core/events.ts`);
  if (!valid(e.payload))
    throw new Error(`Event ${e.type} payload does not match its schema: ${bodyAjv.errorsText(valid.errors)}`);
}

/** The memory an event carries a copy of, if any. */
function memoryOf(e: OutboxEvent): number | null {
  const payload = e.payload as { memory?: { id: number } };
  return payload.memory?.id ?? null;
}

/** Forgetting: outbox events that carry these memories keep only their ids. */
export async function eraseMemoryEvents(
  trx: Executor,
  memoryIds: number[],
  rewrittenIds: number[] = [],
): Promise<void> {
  const all = [...memoryIds, ...rewrittenIds];
  if (all.length === 0) return;
  const rewritten = new Set(rewrittenIds);
  const rows = await trx
    .selectFrom('outbox_events')
    .select(['id', 'memory_id'])
    .where('memory_id', 'in', all)
    .orderBy('id')
    .execute();
  for (const row of rows) {
    await trx
      .updateTable('outbox_events')
      .set({ payload: encodeJson({ memory: erasedMemory(row.memory_id!, rewritten) }) })
      .where('id', '=', row.id)
      .execute();
  }
}

/**
 * Removing an end user: outbox events of the project naming them (memory.deleted, relation.*, decision.resolved,
 * an earlier end_user.purged) name their pseudonym instead. Found by the id's JSON text in the payload: a purge
 * is rare, and the outbox keeps events only until they are dispatched and then for its retention.
 */
export async function renameEndUserInEvents(
  trx: Executor,
  projectId: string,
  endUserId: string,
  pseudonym: string,
): Promise<void> {
  const rows = await trx
    .selectFrom('outbox_events')
    .select(['id', 'payload'])
    .where('project_id', '=', projectId)
    .where(containsText(trx, 'payload', JSON.stringify(endUserId)))
    .orderBy('id')
    .execute();
  for (const row of rows) {
    const payload = renamedJson(row.payload, endUserId, pseudonym);
    if (payload !== undefined)
      await trx.updateTable('outbox_events').set({ payload }).where('id', '=', row.id).execute();
  }
}

/**
 * What is left of a memory's representation in an event once it is forgotten, or once an erasure
 * rewrote it (a summary of a forgotten source: its later `memory.updated` carries the new text).
 */
export function erasedMemory(
  id: number,
  rewritten: ReadonlySet<number> = new Set(),
): { id: number; forgotten: true } | { id: number; rewritten: true } {
  return rewritten.has(id) ? { id, rewritten: true } : { id, forgotten: true };
}

type CommitListener = () => void;
const commitListeners = new Set<CommitListener>();

/** In-process wake-up for outbox readers: called after a transaction that enqueued events commits. */
export function onEventsCommitted(listener: CommitListener): () => void {
  commitListeners.add(listener);
  return () => commitListeners.delete(listener);
}

export function notifyEventsCommitted(): void {
  for (const listener of commitListeners) listener();
}

/** An event as stored in the outbox, for a dispatcher; its payload is read only when asked for (payloadsOf). */
export interface StoredEvent {
  id: number;
  organizationId: string;
  projectId: string | null;
  type: EventKind;
  version: number;
  createdAt: string;
}

/**
 * Takes outbox events on (webhook delivery fans them out to its endpoints' delivery rows) inside
 * the transaction that marks them dispatched, so an event is handed on exactly once. `payloadsOf`
 * reads the payloads of the events it is given, in their order: most events go to no endpoint,
 * and then none is read.
 */
export type OutboxDispatcher = (
  trx: Executor,
  events: StoredEvent[],
  payloadsOf: (events: StoredEvent[]) => Promise<Array<Record<string, unknown>>>,
) => Promise<void>;

/**
 * Hands the oldest undispatched events to every dispatcher and marks them dispatched, one batch
 * per transaction: one statement marks the batch and answers it (rows locked with SKIP LOCKED on
 * PostgreSQL, so workers take different batches), then the dispatchers run, and the transaction
 * commits both. Without a dispatcher events stay pending, for the one that comes. Returns how
 * many it dispatched.
 */
export async function dispatchOutbox(
  database: Database,
  dispatchers: readonly OutboxDispatcher[],
  batchSize = 100,
): Promise<number> {
  if (dispatchers.length === 0) return 0;
  return database.db.transaction().execute(async (trx) => {
    const rows = await trx
      .updateTable('outbox_events')
      .set({ dispatched_at: nowIso() })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('outbox_events')
          .select('id')
          .where('dispatched_at', 'is', null)
          .orderBy('id')
          .limit(batchSize)
          .$if(database.dialect === 'postgres', (qb) => qb.forUpdate().skipLocked()),
      )
      .returning(['id', 'organization_id', 'project_id', 'type', 'created_at'])
      .execute();
    if (rows.length === 0) return 0;
    rows.sort((a, b) => a.id - b.id);
    const events = rows.map(
      (r): StoredEvent => ({
        id: r.id,
        organizationId: r.organization_id,
        projectId: r.project_id,
        type: r.type as EventKind,
        version: isEventKind(r.type) ? EVENT_TYPES[r.type].version : 0,
        createdAt: r.created_at,
      }),
    );
    const payloadsOf = async (wanted: StoredEvent[]) => {
      if (wanted.length === 0) return [];
      const stored = await trx
        .selectFrom('outbox_events')
        .select(['id', 'payload'])
        .where(
          'id',
          'in',
          wanted.map((e) => e.id),
        )
        .execute();
      const byId = new Map(stored.map((row) => [row.id, row.payload]));
      return wanted.map((e) => decodeJson<Record<string, unknown>>(byId.get(e.id)!));
    };
    for (const dispatch of dispatchers) await dispatch(trx, events, payloadsOf);
    return rows.length;
  });
}

/** Dispatched events are kept this long (for inspection), then deleted. */
export const OUTBOX_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export async function purgeDispatchedEvents(
  db: Executor,
  before = new Date(Date.now() - OUTBOX_RETENTION_MS).toISOString(),
): Promise<number> {
  const result = await db
    .deleteFrom('outbox_events')
    .where('dispatched_at', 'is not', null)
    .where('dispatched_at', '<', before)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Events not yet handed to a dispatcher, and when the oldest was written (for `engram status` and /metrics). */
export async function outboxBacklog(db: Executor): Promise<{ pending: number; oldest: string | null }> {
  const row = await db
    .selectFrom('outbox_events')
    .select([(eb) => eb.fn.countAll().as('n'), (eb) => eb.fn.min('created_at').as('oldest')])
    .where('dispatched_at', 'is', null)
    .executeTakeFirst();
  return { pending: Number(row?.n ?? 0), oldest: (row?.oldest as string | null | undefined) ?? null };
}
