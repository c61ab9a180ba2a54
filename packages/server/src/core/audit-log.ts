import { sql, type Insertable, type Selectable } from 'kysely';
import { sha256Hex } from './crypto.js';
import { sqlLiteral, type Database, type Executor } from '../store/database.js';
import { prepared, preparedInsert } from '../store/prepared.js';
import type { AuditLogTable } from '../store/schema.js';

/**
 * The append-only, hash-chained audit log: written only here; the audit module reads and verifies
 * it. Owns audit_log, audit_seals, audit_seal_horizon and audit_chain_heads.
 *
 * A write appends its rows inside its own transaction, unchained: nothing organization-wide is
 * locked, so one organization's writes run side by side, and nothing is queued: each row records the
 * transaction that wrote it (xid: PostgreSQL's transaction id, 0 on SQLite, whose one writer commits
 * rows in id order). The sealer (sealAuditChains, a chore) then chains committed rows per
 * organization, in (xid, id) order from where its last pass ended, into audit_seals: position n
 * holds the audit row's id, the hash of position n-1 and a hash over the row, its id, n and that
 * previous hash. The chain head records the last position and hash, so removing seals from the end
 * shows too.
 */

export const GENESIS_HASH = '0'.repeat(64);

export interface AuditEntry {
  organizationId: string;
  projectId: string | null;
  actorType: string;
  actorId: number | null;
  action: string;
  targetType: string;
  targetId: string | null;
  result: string;
  requestId: string | null;
  createdAt: string;
}

/** Where a row sits in its organization's chain. Legacy seals were chained before sealing existed. */
export interface ChainPlace {
  auditId: number;
  position: number;
  legacy: boolean;
}

/**
 * The hash of a sealed row covers every field of it, its id and position, and the hash before it.
 * Legacy seals (chained when the write itself chained) cover the fields and the previous hash only.
 */
export function chainHash(entry: AuditEntry, place: ChainPlace, prevHash: string): string {
  const fields = [
    entry.organizationId,
    entry.projectId,
    entry.actorType,
    entry.actorId,
    entry.action,
    entry.targetType,
    entry.targetId,
    entry.result,
    entry.requestId,
    entry.createdAt,
  ];
  return sha256Hex(
    JSON.stringify(place.legacy ? [...fields, prevHash] : [...fields, place.auditId, place.position, prevHash]),
  );
}

/**
 * The insert appending entries in the caller's transaction, unchained (the sealer chains them once
 * committed); undefined when there are none.
 */
export function auditInsert(trx: Executor, entries: AuditEntry[]) {
  if (entries.length === 0) return undefined;
  return auditRows(
    trx,
    entries.map((e) => ({
      organization_id: e.organizationId,
      project_id: e.projectId,
      actor_type: e.actorType,
      actor_id: e.actorId,
      action: e.action,
      target_type: e.targetType,
      target_id: e.targetId,
      result: e.result,
      request_id: e.requestId,
      created_at: e.createdAt,
    })),
  );
}

const auditRows = preparedInsert<Insertable<AuditLogTable>>(
  [
    'organization_id',
    'project_id',
    'actor_type',
    'actor_id',
    'action',
    'target_type',
    'target_id',
    'result',
    'request_id',
    'created_at',
  ],
  (db, rows) => db.insertInto('audit_log').values(rows),
);

/**
 * PostgreSQL: the insert appending one entry per row of the CTE `inserted` of a grouped insert
 * (core/grouped-statements.ts#groupedInsert), whose id is the entry's target; each entry's actor, request
 * and time are its write's, from the CTE `input` (joined on `ord`).
 */
export function auditInsertPerInsertedRow(action: string, targetType: string): string {
  return `INSERT INTO audit_log (organization_id, project_id, actor_type, actor_id, action, target_type, target_id, result, request_id, created_at)
    SELECT input.ctx_organization_id, input.ctx_project_id, input.ctx_actor_type, input.ctx_actor_id, ${sqlLiteral(action)}, ${sqlLiteral(targetType)},
      CAST(inserted.id AS text), 'success', input.ctx_request_id, input.ctx_now
    FROM inserted JOIN input USING (ord) ORDER BY inserted.id`;
}

const SEAL_BATCH = 2000;

/**
 * A place in the order the sealer goes through audit rows: by the id of the transaction that wrote
 * the row (PostgreSQL; 0 on SQLite), then by the row's id.
 */
export interface Place {
  xid: bigint;
  id: number;
}

const before = (a: Place, b: Place) => a.xid < b.xid || (a.xid === b.xid && a.id < b.id);

/**
 * Where unsealed rows may be: every row before `below` is sealed, but those of the transactions in
 * `open` (PostgreSQL: still running when the horizon was taken, so their rows may commit later).
 */
export interface Horizon {
  below: Place;
  open: bigint[];
}

/**
 * Chains every committed, unsealed audit row into its organization's chain, in (xid, id) order, up
 * to 2,000 rows a transaction. The rows to look at are those at or past the horizon, and those of its
 * open transactions; a row already sealed is skipped. Rows of a transaction still running are
 * invisible here and get later positions in a later pass. Each batch takes the sealer's lock
 * (PostgreSQL, `readHorizon`; on SQLite the transaction holds the one write lock), so sealers in
 * several processes take turns and never fork a chain; writers never touch it. A whole pass that
 * sealed anything moves the horizon to where it began (`passHorizon`); one with nothing to do writes
 * nothing. Given an organization, it seals only that one's rows and leaves the horizon. Returns how
 * many rows it sealed.
 */
export async function sealAuditChains(database: Database, organizationId?: string): Promise<number> {
  let pass: { from: Horizon; to: Horizon } | undefined;
  let after: Place | undefined;
  let sealed = 0;
  for (;;) {
    const rows = await database.db.transaction().execute(async (trx) => {
      const current = await readHorizon(database, trx, true);
      pass ??= { from: current, to: await passHorizon(database, trx) };
      const rows = await unsealedRows(database, trx, pass.from, pass.to.below, after, organizationId).execute();
      for (const [org, ofOrg] of groupBy(rows, (r) => r.organization_id)) await sealBatch(database, trx, org, ofOrg);
      // Only after sealing: moving it is itself a write, whose transaction id the next pass's xmax would pass again.
      const moves =
        rows.length < SEAL_BATCH && !organizationId && sealed + rows.length > 0 && before(current.below, pass.to.below);
      if (moves) await moveHorizon(database, trx, pass.to);
      return rows;
    });
    sealed += rows.length;
    if (rows.length < SEAL_BATCH) return sealed;
    const last = rows[rows.length - 1]!;
    after = { xid: BigInt(last.xid), id: last.id };
  }
}

/**
 * The horizon a pass that begins now reaches. PostgreSQL: every transaction below the snapshot's xmax
 * but those in progress (its xip) has ended, so every row it wrote is visible to this pass's later
 * statements; rows of transactions in progress may still come, and are kept open. SQLite: the
 * transaction holds the write lock, so every row is committed, and later rows get larger ids.
 */
async function passHorizon(database: Database, trx: Executor): Promise<Horizon> {
  if (database.dialect === 'postgres') {
    const { rows } = await sql<{ xmax: string; xip: string[] }>`
      SELECT CAST(pg_snapshot_xmax(s) AS text) AS xmax, ARRAY(SELECT CAST(x AS text) FROM pg_snapshot_xip(s) AS x) AS xip
      FROM (SELECT pg_current_snapshot() AS s) AS snapshot`.execute(trx);
    return { below: { xid: BigInt(rows[0]!.xmax), id: 0 }, open: rows[0]!.xip.map(BigInt) };
  }
  const row = await trx
    .selectFrom('audit_log')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirst();
  return { below: { xid: 0n, id: Number(row?.id ?? 0) + 1 }, open: [] };
}

/** The first key of the sealer's advisory lock (PostgreSQL; migrations hold 724991, exports 724992). */
const SEALER_LOCK_CLASS = 724_993;

/**
 * The horizon, read (with `lock`) under the sealer's lock. On PostgreSQL that is a transaction-scoped
 * advisory lock, not the row's: a row lock takes a transaction id, which would move the next pass's
 * xmax and so make every pass of an idle system rewrite the horizon; a pass with nothing to do writes nothing.
 */
async function readHorizon(database: Database, trx: Executor, lock: boolean): Promise<Horizon> {
  if (lock && database.dialect === 'postgres')
    await sql`SELECT pg_advisory_xact_lock(${SEALER_LOCK_CLASS}, 0)`.execute(trx);
  const row = await trx
    .selectFrom('audit_seal_horizon')
    .select(['xid', 'audit_id', 'open_xids'])
    .where('id', '=', 1)
    .executeTakeFirstOrThrow();
  return {
    below: { xid: BigInt(row.xid), id: Number(row.audit_id) },
    open: row.open_xids === '' ? [] : row.open_xids.split(',').map(BigInt),
  };
}

async function moveHorizon(database: Database, trx: Executor, to: Horizon): Promise<void> {
  await trx
    .updateTable('audit_seal_horizon')
    .set({ xid: xidValue(database, to.below.xid), audit_id: to.below.id, open_xids: to.open.join(',') })
    .where('id', '=', 1)
    .execute();
}

const xidValue = (database: Database, xid: bigint) =>
  database.dialect === 'postgres' ? sql<string>`CAST(${String(xid)} AS xid8)` : sql<number>`${Number(xid)}`;

/**
 * A row's place compared with `place`. SQLite uses only the leading column of a row value's range
 * in an index (a scan of every row with xid 0, all of them there), so its bound is on the id alone.
 */
const comparedWith = (database: Database, op: '<' | '>=' | '>', place: Place) => {
  if (database.dialect === 'postgres')
    return sql<boolean>`(a.xid, a.id) ${sql.raw(op)} (${xidValue(database, place.xid)}, ${place.id})`;
  if (place.xid !== 0n) throw new Error('audit rows on SQLite are all of xid 0');
  return sql<boolean>`a.xid = 0 AND a.id ${sql.raw(op)} ${place.id}`;
};

/** Whether a row is past the horizon (or of one of its open transactions). */
const pastHorizon = (database: Database, horizon: Horizon) => {
  const past = comparedWith(database, '>=', horizon.below);
  if (horizon.open.length === 0) return past;
  return sql<boolean>`(${past} OR a.xid = ANY(CAST(${horizon.open.map(String)} AS xid8[])))`;
};

/**
 * A probe of audit_seals' unique index per row: a subquery with LIMIT is not flattened into a join,
 * which without statistics on audit_seals (a new database, no ANALYZE since) was a hash of every seal.
 */
const notSealed = sql<boolean>`(SELECT s.audit_id FROM audit_seals AS s WHERE s.audit_id = a.id LIMIT 1) IS NULL`;

/**
 * The statement reading unsealed rows from the horizon `from` up to `to` (after `after`, the last row
 * of the batch before), in (xid, id) order (exported for the test of its plan).
 */
export function unsealedRows(
  database: Database,
  trx: Executor,
  from: Horizon,
  to: Place,
  after: Place | undefined,
  organizationId?: string,
) {
  let query = trx
    .selectFrom('audit_log as a')
    .selectAll('a')
    .where(pastHorizon(database, from))
    .where(comparedWith(database, '<', to))
    .where(notSealed);
  if (after) query = query.where(comparedWith(database, '>', after));
  if (organizationId) query = query.where('a.organization_id', '=', organizationId);
  return query.orderBy('a.xid').orderBy('a.id').limit(SEAL_BATCH);
}

function groupBy<T, K>(items: T[], key: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** Appends these rows (one organization's, in order) to its chain. */
async function sealBatch(
  database: Database,
  trx: Executor,
  organizationId: string,
  rows: Array<Selectable<AuditLogTable>>,
): Promise<void> {
  // Creating the head and reading it in one statement.
  const head = await trx
    .insertInto('audit_chain_heads')
    .values({ organization_id: organizationId, last_hash: GENESIS_HASH, last_position: 0 })
    .onConflict((oc) =>
      oc.column('organization_id').doUpdateSet((eb) => ({ last_hash: eb.ref('audit_chain_heads.last_hash') })),
    )
    .returning(['last_hash', 'last_position'])
    .executeTakeFirstOrThrow();
  let prev = head.last_hash;
  let position = Number(head.last_position);
  const seals = rows.map((row) => {
    const place = { auditId: row.id, position: ++position, legacy: false };
    const hash = chainHash(entryOf(row), place, prev);
    const seal = {
      organization_id: organizationId,
      position,
      audit_id: row.id,
      prev_hash: prev,
      hash,
      legacy: database.bool(false),
    };
    prev = hash;
    return seal;
  });
  if (database.dialect === 'postgres') {
    // Each column as one array: one prepared statement for every batch size, and no per-value parameters to bind.
    await sealRows(
      trx,
      organizationId,
      seals.map((s) => s.position),
      rows.map((r) => r.id),
      seals.map((s) => s.prev_hash),
      seals.map((s) => s.hash),
    );
  } else {
    // Bound parameters per statement stay under SQLite's limit (32766).
    for (let i = 0; i < seals.length; i += 1000)
      await trx
        .insertInto('audit_seals')
        .values(seals.slice(i, i + 1000))
        .execute();
  }
  await trx
    .updateTable('audit_chain_heads')
    .set({ last_hash: prev, last_position: position })
    .where('organization_id', '=', organizationId)
    .execute();
}

const sealRows = prepared(
  5,
  (db, organizationId: string, positions: number[], ids: number[], prevHashes: string[], hashes: string[]) =>
    db
      .insertInto('audit_seals')
      .columns(['organization_id', 'position', 'audit_id', 'prev_hash', 'hash', 'legacy'])
      .expression(sql`
    SELECT ${organizationId}, s.position, s.audit_id, s.prev_hash, s.hash, false
    FROM unnest(${positions}::bigint[], ${ids}::bigint[], ${prevHashes}::text[], ${hashes}::text[]) AS s(position, audit_id, prev_hash, hash)`),
);

/** The chained fields of an audit_log row. */
export function entryOf(row: {
  organization_id: string;
  project_id: string | null;
  actor_type: string;
  actor_id: number | null;
  action: string;
  target_type: string;
  target_id: string | null;
  result: string;
  request_id: string | null;
  created_at: string;
}): AuditEntry {
  return {
    organizationId: row.organization_id,
    projectId: row.project_id,
    actorType: row.actor_type,
    actorId: row.actor_id,
    action: row.action,
    targetType: row.target_type,
    targetId: row.target_id,
    result: row.result,
    requestId: row.request_id,
    createdAt: row.created_at,
  };
}

/** Unsealed rows per organization (all organizations, or one): committed rows past the horizon without a seal. */
export async function unsealedCounts(database: Database, organizationId?: string): Promise<Map<string, number>> {
  const horizon = await readHorizon(database, database.db, false);
  let query = database.db
    .selectFrom('audit_log as a')
    .select(['a.organization_id', sql<number>`count(*)`.as('n')])
    .where(pastHorizon(database, horizon))
    .where(notSealed)
    .groupBy('a.organization_id');
  if (organizationId) query = query.where('a.organization_id', '=', organizationId);
  return new Map((await query.execute()).map((r) => [r.organization_id, Number(r.n)]));
}
