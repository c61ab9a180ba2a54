import { sql } from 'kysely';
import { expect } from 'vitest';
import { decodeJson } from '../store/database.js';
import type { DB } from '../store/schema.js';
import type { CallOptions, Response, TestApp } from './harness.js';

/** Small helpers shared by the memory data-plane tests. */

/** Asserts the error body of the wire contract: status, code, field (when given) and the echoed request id. */
export function expectError(res: Response, status: number, code: string, field?: string | null): void {
  expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body?.error, res.text).toMatchObject({
    code,
    message: expect.any(String),
    request_id: res.headers['x-request-id'],
  });
  if (field === null) expect(res.body.error).not.toHaveProperty('field');
  else if (field !== undefined) expect(res.body.error.field, res.text).toBe(field);
}

/** POST /memory/add that must create; returns the memory. */
export async function addMemory(t: TestApp, body: string | Record<string, unknown>, options: CallOptions = {}) {
  const res = await t.call('POST', '/memory/add', {
    ...options,
    body: typeof body === 'string' ? { text: body } : body,
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

export async function countRows(t: TestApp, table: keyof DB): Promise<number> {
  const row = await t.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function maxId(t: TestApp, table: 'outbox_events' | 'audit_log' | 'memory_history'): Promise<number> {
  const row = await t.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.max('id').as('m'))
    .executeTakeFirst();
  return Number(row?.m ?? 0);
}

/** The id of the last outbox event written (0: none yet), a mark for eventsAfter. */
export const lastEventId = (t: TestApp) => maxId(t, 'outbox_events');

/** The outbox events written after a mark, as [type, project, memory id]. */
export async function eventsAfter(t: TestApp, id: number) {
  const rows = await t.database.db
    .selectFrom('outbox_events')
    .select(['type', 'project_id', 'memory_id'])
    .where('id', '>', id)
    .orderBy('id')
    .execute();
  return rows.map((e) => [e.type, e.project_id, e.memory_id === null ? null : Number(e.memory_id)]);
}

export const memoryRow = (t: TestApp, id: number) =>
  t.database.db.selectFrom('memories').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

export const historyRows = (t: TestApp, memoryId: number) =>
  t.database.db.selectFrom('memory_history').selectAll().where('memory_id', '=', memoryId).orderBy('id').execute();

/** Everything a memory request can write, to prove that a request changed nothing. */
export async function snapshot(t: TestApp) {
  const db = t.database.db;
  return {
    memories: await db.selectFrom('memories').selectAll().orderBy('id').execute(),
    history: await db.selectFrom('memory_history').selectAll().orderBy('id').execute(),
    endUsers: await db.selectFrom('end_users').selectAll().orderBy('end_user_id').execute(),
    outbox: await countRows(t, 'outbox_events'),
    audit: await countRows(t, 'audit_log'),
  };
}

/** Runs a request and asserts the database is exactly as before it (audit rows included unless `allowAudit`). */
export async function expectNothingWritten(
  t: TestApp,
  run: () => Promise<Response>,
  allowAudit = false,
): Promise<Response> {
  const before = await snapshot(t);
  const res = await run();
  const after = await snapshot(t);
  if (allowAudit) {
    // An attempt that changed no memory is still audited; everything else must be as it was.
    expect({ ...after, audit: 0, endUsers: [] }).toEqual({ ...before, audit: 0, endUsers: [] });
  } else {
    expect(after).toEqual(before);
  }
  return res;
}

/**
 * Runs a state-changing request and returns what it wrote besides its own rows: the audit rows
 * carrying its request id and the outbox events written since.
 */
export async function withEffects(t: TestApp, run: () => Promise<Response>) {
  const lastEvent = await maxId(t, 'outbox_events');
  const res = await run();
  const db = t.database.db;
  const audit = await db
    .selectFrom('audit_log')
    .selectAll()
    .where('request_id', '=', String(res.headers['x-request-id']))
    .execute();
  const events = await db.selectFrom('outbox_events').selectAll().where('id', '>', lastEvent).orderBy('id').execute();
  return {
    res,
    audit,
    events: events.map((e) => ({
      type: e.type,
      payload: decodeJson<Record<string, unknown>>(e.payload),
      created_at: e.created_at,
    })),
  };
}

/** Asserts the one audit row of a request and that its events were written at the same instant (same transaction). */
export function expectAudited(
  effects: Pick<Awaited<ReturnType<typeof withEffects>>, 'audit' | 'events'>,
  t: TestApp,
  expected: { action: string; target_type?: string; target_id?: string | null; result?: string },
): void {
  expect(effects.audit).toHaveLength(1);
  const [row] = effects.audit;
  expect(row).toMatchObject({
    result: 'success',
    ...expected,
    organization_id: t.organizationId,
    project_id: t.projectId,
    actor_type: 'api_key',
    actor_id: t.keyId,
  });
  for (const event of effects.events) expect(event.created_at).toBe(row!.created_at);
}

/** Makes every audit append fail, so a write fails after its memory rows are in: the transaction must roll back. */
export async function breakAuditLog(t: TestApp): Promise<() => Promise<void>> {
  const db = t.database.db;
  if (t.dialect === 'sqlite') {
    await sql`CREATE TRIGGER fail_audit BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'injected failure'); END`.execute(
      db,
    );
    return async () => void (await sql`DROP TRIGGER fail_audit`.execute(db));
  }
  await sql`CREATE FUNCTION fail_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$`.execute(
    db,
  );
  await sql`CREATE TRIGGER fail_audit BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION fail_audit()`.execute(
    db,
  );
  return async () => {
    await sql`DROP TRIGGER fail_audit ON audit_log`.execute(db);
    await sql`DROP FUNCTION fail_audit()`.execute(db);
  };
}

/** Sends a write twice with one Idempotency-Key: the second answer is the first, replayed. */
export async function expectIdempotentReplay(send: () => Promise<Response>, status: number): Promise<Response> {
  const first = await send();
  expect(first.status, first.text).toBe(status);
  const replay = await send();
  expect(replay.status).toBe(status);
  expect(replay.headers['idempotent-replayed']).toBe('true');
  expect(replay.body).toEqual(first.body);
  return first;
}
