import { sha256Hex } from '../../core/crypto.js';
import { eventJson } from '../../core/events.js';
import { groupedInsert, type InputColumn } from '../../core/grouped-statements.js';
import type { Effects, WriteContext } from '../../core/unit-of-work.js';
import { encodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import { owned, toMemory, viewOf, type MemoryRow, type Owner } from './feed.js';
import { nextSeq, REVISION_STEP } from './revisions.js';
import {
  checkContent,
  createdChanges,
  NEW_MEMORY_COLUMNS,
  PROJECT,
  TENANT,
  END_USER,
  memoryColumnList,
  turnHash,
  INSERTED_HISTORY_FIELDS,
  insertOne,
} from './rows.js';
import type { MemoryView } from './schemas.js';

/** Conversation turns (/v1): stored verbatim, a redelivery converging on the stored row; on PostgreSQL one grouped statement. */

/**
 * A turn sent without a timestamp is dated on arrival; the same turn arriving again within this
 * window is taken as a redelivery of it (docs/api.md, "Turns").
 */
export const TURN_REDELIVERY_WINDOW_MS = 60_000;

/**
 * Keys under which an undated turn arriving at `now` may already be stored: arrivals are keyed by
 * window-sized slot, so the current slot and the one before cover every arrival within the window.
 */
function arrivalHashes(sessionId: string | null, speaker: string, text: string, now: string): [string, string] {
  const slot = Math.floor(Date.parse(now) / TURN_REDELIVERY_WINDOW_MS);
  const key = (n: number) => sha256Hex(JSON.stringify(['turn-arrival', sessionId, speaker, text, n]));
  return [key(slot), key(slot - 1)];
}

/**
 * A speaker built from a content hash (`sha256:` and hex digits) names one turn, so its redelivery converges at any
 * distance in time (spec: add_turn). Another speaker may say the same words again later: a turn of its own.
 */
export const CONTENT_HASH_SPEAKER = /^sha256:[0-9a-f]{8,128}$/i;

/**
 * How a turn is recognised when delivered again: by its words alone for a content-hash speaker (the key an undated
 * bulk item has), by its timestamp when it has one, else by its arrival within the redelivery window.
 */
function turnKeys(turn: TurnInput, now: string): { hashes: [string] | [string, string]; windowStart: string | null } {
  if (CONTENT_HASH_SPEAKER.test(turn.speaker))
    return { hashes: [turnHash(turn.sessionId, turn.speaker, turn.text, null)], windowStart: null };
  if (turn.occurredAt !== undefined)
    return { hashes: [turnHash(turn.sessionId, turn.speaker, turn.text, turn.occurredAt)], windowStart: null };
  return {
    hashes: arrivalHashes(turn.sessionId, turn.speaker, turn.text, now),
    windowStart: new Date(Date.parse(now) - TURN_REDELIVERY_WINDOW_MS).toISOString(),
  };
}

export interface TurnInput {
  text: string;
  speaker: string;
  source: string;
  sessionId: string | null;
  metadata: Record<string, unknown>;
  /** When it expires (normalized, in the future); never when absent. */
  expiresAt?: string;
  /** When the turn was said; defaults to now. */
  occurredAt?: string;
}

/**
 * Stores a conversation turn verbatim for a tenant's user. The same turn delivered again (same
 * session, speaker and text, and the same timestamp, or none within the redelivery window; a
 * content-hash speaker's at any time) converges on the stored row; the same words at another time
 * are another turn. Runs inside the caller's transaction.
 */
export async function insertTurn(
  trx: Executor,
  ctx: WriteContext,
  effects: Effects,
  database: Database,
  owner: Owner,
  turn: TurnInput,
): Promise<{ memory: MemoryView; created: boolean }> {
  // The same content rules as /memory/add: text not blank, metadata within its size limit.
  checkContent({ text: turn.text, metadata: turn.metadata });
  const at = turn.occurredAt ?? effects.now;
  // Taken first even for a redelivery: on PostgreSQL its row lock is what makes the duplicate check race-free.
  const seq = await nextSeq(trx, owner, effects.now);
  const { hashes, windowStart } = turnKeys(turn, effects.now);
  const existing = await owned(owner)(trx)
    .where('dedupe_hash', 'is not', null)
    .where('dedupe_hash', 'in', hashes)
    .$if(windowStart !== null, (qb) => qb.where('created_at', '>', windowStart!))
    .orderBy('id', 'desc')
    .executeTakeFirst();
  if (existing) return { memory: toMemory(existing), created: false };
  const memory = await insertOne(
    trx,
    ctx,
    effects,
    owner,
    {
      text: turn.text,
      is_summary: database.bool(false),
      source: turn.source,
      metadata: encodeJson(turn.metadata),
      session_id: turn.sessionId,
      speaker: turn.speaker,
      dedupe_hash: hashes[0],
      seq,
      created_at: at,
      expires_at: turn.expiresAt ?? null,
    },
    true,
  );
  return { memory, created: true };
}

/**
 * The relations of insertTurnInOneStatement's statement a TurnCount reads, by the names the statement gives them:
 * `input` (one row per turn: the memory's columns, `dedupe_hash` and the count's own input columns), `landed` (the
 * memories rows inserted) and `counted` (the count's own statement's result).
 */
export interface TurnRelations {
  readonly input: string;
  readonly landed: string;
  readonly counted: string;
}

const TURN_RELATIONS: TurnRelations = { input: 'input', landed: 'landed', counted: 'counted' };

/**
 * What the caller of insertTurnInOneStatement counts per turn that lands, in the same statement (PostgreSQL): its
 * own input columns; `statement`, a data-modifying statement (its result is `counted`) that reads `landed` joined
 * with `input` on owner and dedupe hash; and `refusedWhen`, a condition over `counted` and `input` under which the
 * whole statement is refused, so that nothing of it is written (the caller's general path then decides, exactly).
 * Both are written against the relation names they are handed, never names of their own.
 */
export interface TurnCount {
  columns: readonly InputColumn[];
  statement: (relations: TurnRelations) => string;
  refusedWhen: (relations: TurnRelations) => string;
}

/** Why a turn did not land in its statement (insertTurnInOneStatement). */
export type TurnNotLanded = 'refused' | 'left out';

/**
 * PostgreSQL: a new turn with its revision bump, history row, memory.created event, audit row and the caller's
 * count, grouped with the turns submitted at the same time into one statement (core/grouped-statements.ts#groupedInsert).
 * Only a turn that is certainly new lands: its redelivery lookup reads the statement's snapshot, so a turn is left
 * out when the lookup finds an earlier delivery, when its insert meets one (the dedupe index), and when its end
 * user's revision moved after the snapshot was taken (the statement waited for another transaction's row lock:
 * that transaction may have stored the same turn, which the snapshot does not show). Each owner has at most one
 * turn in a statement. 'left out' means nothing but the revision bump was written and the request's held key was
 * verified by the statement; 'refused' means nothing was written (the count's `refusedWhen`). Either way
 * insertTurn then decides, under the end user's row lock.
 */
export async function insertTurnInOneStatement(
  database: Database,
  ctx: WriteContext,
  owner: Owner,
  turn: TurnInput,
  count: TurnCount,
  countValues: readonly unknown[],
): Promise<MemoryView | TurnNotLanded> {
  checkContent({ text: turn.text, metadata: turn.metadata });
  const now = nowIso();
  const at = turn.occurredAt ?? now;
  const {
    hashes: [hash, earlierHash = null],
    windowStart,
  } = turnKeys(turn, now);
  const row: Omit<MemoryRow, 'id'> = {
    project_id: owner.projectId,
    tenant_id: owner.tenantId,
    end_user_id: owner.endUserId,
    text: turn.text,
    tags: '[]',
    is_summary: database.bool(false),
    source: turn.source,
    importance: 0.5,
    metadata: encodeJson(turn.metadata),
    client_ref: null,
    session_id: turn.sessionId,
    speaker: turn.speaker,
    dedupe_hash: hash,
    seq: 0,
    created_at: at,
    updated_at: now,
    deleted_at: null,
    superseded_by: null,
    expires_at: turn.expiresAt ?? null,
  };
  // The memory as its row will read; its id is the row's (set in SQL).
  const expected = viewOf(row, 1);
  const changes = createdChanges(expected, INSERTED_HISTORY_FIELDS);
  let inserted: MemoryRow | undefined;
  try {
    inserted = await turnStatementFor(count)<MemoryRow>(
      database,
      ctx,
      now,
      [
        ...NEW_MEMORY_COLUMNS.map(([column]) => row[column]),
        encodeJson(changes),
        earlierHash,
        windowStart,
        ...countValues,
      ],
      () => eventJson('memory.created', { memory: expected, tenant_id: owner.tenantId || null }),
      ctx.journal?.recordInserted({ memory: { ...expected }, created: true }, ['memory', 'id']),
    );
  } catch (error) {
    if ((error as { code?: string }).code === TURN_REFUSED) return 'refused';
    throw error;
  }
  return inserted ? toMemory(inserted) : 'left out';
}

/** SQLSTATE division_by_zero: raised by a turn statement whose count refused it, and by nothing else in it. */
const TURN_REFUSED = '22012';

const turnStatements = new Map<TurnCount, ReturnType<typeof groupedInsert>>();
const turnStatementFor = (count: TurnCount) => {
  let statement = turnStatements.get(count);
  if (!statement) turnStatements.set(count, (statement = turnStatement(count)));
  return statement;
};

function turnStatement(count: TurnCount) {
  const owner = 'project_id, tenant_id, end_user_id';
  const { input, landed, counted } = TURN_RELATIONS;
  return groupedInsert({
    columns: [
      ...NEW_MEMORY_COLUMNS,
      ['history_changes', 'json'],
      ['earlier_hash', 'text'],
      ['window_start', 'timestamptz'],
      ...count.columns,
    ],
    steps: [
      // The revisions as the statement's snapshot has them, before its own bump waits for any row lock.
      [
        'known',
        `SELECT e.project_id, e.tenant_id, e.end_user_id, e.revision FROM end_users e JOIN input USING (${owner})`,
      ],
      ['revision', REVISION_STEP],
      [
        'fresh',
        `SELECT input.* FROM input JOIN revision USING (${owner}) LEFT JOIN known USING (${owner})
        WHERE revision.revision = COALESCE(known.revision, 0) + 1
        AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.project_id = input.project_id AND m.tenant_id = input.tenant_id
          AND m.end_user_id = input.end_user_id AND m.dedupe_hash IN (input.dedupe_hash, input.earlier_hash) AND m.deleted_at IS NULL
          AND (input.window_start IS NULL OR m.created_at > input.window_start))`,
      ],
      [
        landed,
        `INSERT INTO memories (${memoryColumnList}, seq)
        SELECT ${NEW_MEMORY_COLUMNS.map(([column]) => `fresh.${column}`).join(', ')}, revision.revision
        FROM fresh JOIN revision USING (${owner}) ORDER BY fresh.ord
        ON CONFLICT DO NOTHING RETURNING *`,
      ],
      [counted, count.statement(TURN_RELATIONS)],
      // Division by zero (TURN_REFUSED) when the count refuses the statement: an error, so nothing of it is written.
      [
        'inserted',
        `SELECT ${landed}.*, ${input}.ord FROM ${landed} JOIN ${input} USING (${owner}, dedupe_hash)
        WHERE (SELECT 1 / (CASE WHEN ${count.refusedWhen(TURN_RELATIONS)} THEN 0 ELSE 1 END)) = 1`,
      ],
    ],
    rows: [
      `INSERT INTO memory_history (project_id, memory_id, action, changes, actor_type, actor_id, request_id, created_at)
      SELECT input.ctx_project_id, inserted.id, 'create', input.history_changes, input.ctx_actor_type, input.ctx_actor_id, input.ctx_request_id, input.ctx_now
      FROM inserted JOIN input USING (ord) ORDER BY inserted.id`,
    ],
    audit: { action: 'memory.add_turn', targetType: 'memory' },
    event: 'memory.created',
    // One turn per owner: the revision check above holds for one bump per owner and statement.
    exclusive: (values) => [`${values[PROJECT]}\u0000${values[TENANT]}\u0000${values[END_USER]}`],
  });
}
