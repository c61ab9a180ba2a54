import { sha256Hex } from '../../core/crypto.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError } from '../../core/errors.js';
import { enqueueJob, type JobContext, type JobHandler } from '../../jobs/runner.js';
import { decodeJson, encodeJson, nowIso, type Executor } from '../../store/database.js';
import { MEMORY_LIMITS, addWithin, forgetWithin, liveMemoryIds, type ImportedMemory, type Owner } from '../memories/index.js';
import { chunkMemories, readDocument } from '../ingest/index.js';
import type { SyncDeps } from './deps.js';
import { sourceAccess } from './oauth.js';
import { sleep } from './providers/http.js';
import { providerNamed } from './providers/index.js';
import { ConsentRevoked, ProviderConfigError, type SourceObject, type SyncRun } from './providers/provider.js';
import type { ConnectionRow } from './store.js';

/**
 * The sync engine, the same for every provider: objects are identified by connection + source
 * id and compared by content hash; each object's change (memories forgotten and added, the object
 * row, the run's counters) commits in one transaction, so a run that dies resumes from its last
 * checkpoint without duplicates; objects a complete run did not see are forgotten.
 */

export const SYNC_JOB = 'connector.sync';
const COUNTERS = ['seen', 'created', 'updated', 'deleted', 'unchanged', 'failed'] as const;
type Counter = (typeof COUNTERS)[number];

class SyncCancelled extends Error {}

export type { SyncDeps } from './deps.js';

const ownerOf = (connection: ConnectionRow): Owner => ({ projectId: connection.project_id, tenantId: '', endUserId: connection.end_user_id });

/**
 * Queues a sync of the connection; undefined when one is already queued or running (a partial
 * unique index backs the check, so two triggers cannot both win).
 */
export async function queueSync(
  db: Executor, connection: ConnectionRow, trigger: 'manual' | 'schedule', ctx: WriteContext, now: string,
): Promise<number | undefined> {
  const active = await db.selectFrom('connector_syncs').select('id').where('connection_id', '=', connection.id)
    .where('status', 'in', ['queued', 'running']).executeTakeFirst();
  if (active) return undefined;
  // The partial unique index is the last word when two triggers race past the check above: the loser's
  // transaction fails with a unique violation, which the caller's retry (or the 409) answers.
  const sync = await db.insertInto('connector_syncs')
    .values({ project_id: connection.project_id, connection_id: connection.id, job_id: null, status: 'queued', trigger, checkpoint: null, error: null, started_at: null, finished_at: null, created_at: now, updated_at: now })
    .returning('id').executeTakeFirstOrThrow();
  const jobId = await enqueueJob(db, { kind: SYNC_JOB, projectId: connection.project_id, payload: { syncId: sync.id, ctx: { actor: ctx.actor, requestId: ctx.requestId } } });
  await db.updateTable('connector_syncs').set({ job_id: jobId }).where('id', '=', sync.id).execute();
  return sync.id;
}

const contentHash = (object: SourceObject) =>
  sha256Hex('bytes' in object ? object.bytes : encodeJson(object.statements));

async function bump(db: Executor, syncId: number, counts: Partial<Record<Counter, number>>, now: string) {
  await db.updateTable('connector_syncs')
    .set((eb) => ({ ...Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, eb(k as Counter, '+', v!)])), updated_at: now }))
    .where('id', '=', syncId).execute();
}

/** The `connector.sync` job (registered in services.ts). */
export const syncJobHandler = (deps: SyncDeps): JobHandler => (job) => runSync(deps, job);

/** Runs one sync to its end (succeeded, failed or cancelled). */
async function runSync(deps: SyncDeps, job: JobContext): Promise<unknown> {
  const { database } = deps;
  const db = database.db;
  const { syncId, ctx: jobCtx } = job.payload as { syncId: number; ctx: Pick<WriteContext, 'actor' | 'requestId'> };
  const sync = await db.selectFrom('connector_syncs').selectAll().where('id', '=', syncId).executeTakeFirst();
  if (!sync || !['queued', 'running'].includes(sync.status)) return { sync_id: syncId, skipped: true };
  const connection = await db.selectFrom('connector_connections').selectAll().where('id', '=', sync.connection_id).executeTakeFirstOrThrow();
  const ctx: WriteContext = { ...jobCtx, organizationId: connection.organization_id, projectId: connection.project_id };
  const provider = providerNamed(connection.provider)!;
  const owner = ownerOf(connection);
  const source = `connector:${provider.name}`;
  await db.updateTable('connector_syncs').set({ status: 'running', started_at: sync.started_at ?? nowIso(), updated_at: nowIso() }).where('id', '=', syncId).execute();

  let handled = 0;
  const stopIfCancelled = async () => {
    const row = await db.selectFrom('connector_syncs').select('cancel_requested').where('id', '=', syncId).executeTakeFirstOrThrow();
    if (row.cancel_requested) throw new SyncCancelled();
  };
  const heartbeat = async () => {
    handled++;
    await stopIfCancelled();
    if (handled % 10 === 0) await job.progress(handled / (handled + 100));
  };
  // Memories forgotten since the last sync (by the end user, say) make the object changed, so it is read again.
  const intact = async (stored: unknown) => {
    const ids = decodeJson<number[]>(stored);
    return (await liveMemoryIds(db, owner, ids)).length === ids.length;
  };
  const objectRow = (trx: Executor, sourceId: string) =>
    trx.selectFrom('connector_objects').selectAll().where('connection_id', '=', connection.id).where('source_id', '=', sourceId).executeTakeFirst();

  const run: SyncRun = {
    ...sourceAccess(deps, provider, connection),
    // A long wait keeps the job's lease (shorter than a Retry-After may be) and notices a cancel.
    async pause(ms) {
      for (const until = Date.now() + ms; Date.now() < until;) {
        await sleep(Math.min(15_000, until - Date.now()));
        await job.progress(handled / (handled + 100));
        await stopIfCancelled();
      }
    },
    checkpoint: sync.checkpoint === null ? null : decodeJson(sync.checkpoint),
    cursor: connection.cursor === null ? null : decodeJson(connection.cursor),
    async unchanged(sourceId, version) {
      const row = await objectRow(db, sourceId);
      if (!row || version === null || row.version !== version || row.status !== 'synced' || !(await intact(row.memory_ids))) return false;
      if (row.last_seen_sync !== syncId) {
        const now = nowIso();
        await db.transaction().execute(async (trx) => {
          await trx.updateTable('connector_objects').set({ last_seen_sync: syncId, updated_at: now }).where('connection_id', '=', connection.id).where('source_id', '=', sourceId).execute();
          await bump(trx, syncId, { seen: 1, unchanged: 1 }, now);
        });
        await heartbeat();
      }
      return true;
    },
    async object(object: SourceObject) {
      const hash = contentHash(object);
      const existing = await objectRow(db, object.sourceId);
      // Already handled by this run before a crash: nothing to do again.
      if (existing?.last_seen_sync === syncId && existing.content_hash === hash) return;
      if (existing && existing.content_hash === hash && existing.status === 'synced' && (await intact(existing.memory_ids))) {
        const now = nowIso();
        await db.transaction().execute(async (trx) => {
          await trx.updateTable('connector_objects').set({ version: object.version, last_seen_sync: syncId, updated_at: now })
            .where('connection_id', '=', connection.id).where('source_id', '=', object.sourceId).execute();
          await bump(trx, syncId, { seen: 1, unchanged: 1 }, now);
        });
        return heartbeat();
      }
      let items: ImportedMemory[];
      const origin = { source_id: object.sourceId, connection_id: connection.id, provider: provider.name, ...(object.url ? { url: object.url } : {}), ...(object.title ? { title: object.title } : {}) };
      if ('statements' in object) {
        items = object.statements.filter((s) => s.text.trim() !== '').map((s) => ({
          text: s.text.slice(0, MEMORY_LIMITS.textChars), source, created_at: s.time, metadata: { ...s.metadata, origin },
          ...(s.speaker ? { speaker: s.speaker } : {}), ...(s.sessionId ? { session_id: s.sessionId } : {}),
        }));
      } else {
        try {
          const document = await readDocument(object.bytes, object.name, object.mediaType);
          items = chunkMemories(document, { source, file: { name: object.name, ...origin } });
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          await run.failed(object.sourceId, error.message);
          return;
        }
      }
      const written = await write(database, ctx, async (trx, effects) => {
        const forgotten = existing ? await forgetWithin(trx, { ctx, effects, hooks: deps.erase }, owner, decodeJson<number[]>(existing.memory_ids)) : [];
        const outcomes = await addWithin(database, trx, ctx, effects, owner, items);
        const ids = outcomes.flatMap((o) => ('created' in o ? [o.created.id] : []));
        const values = {
          title: object.title ?? null, url: object.url ?? null, version: object.version, content_hash: hash, memory_ids: encodeJson(ids),
          status: 'synced', error: null, last_seen_sync: syncId, updated_at: effects.now,
        };
        if (existing) await trx.updateTable('connector_objects').set(values).where('connection_id', '=', connection.id).where('source_id', '=', object.sourceId).execute();
        else await trx.insertInto('connector_objects').values({ connection_id: connection.id, source_id: object.sourceId, project_id: connection.project_id, created_at: effects.now, ...values }).execute();
        await bump(trx, syncId, { seen: 1, [existing && existing.status !== 'deleted' ? 'updated' : 'created']: 1 }, effects.now);
        return true;
      }).catch((error: unknown) => {
        // Content the memory store refuses (metadata over its limit): rolled back, the object is failed.
        if (error instanceof AppError) return error;
        throw error;
      });
      if (written instanceof AppError) return run.failed(object.sourceId, written.message);
      await heartbeat();
    },
    async failed(sourceId, reason) {
      const now = nowIso();
      await db.transaction().execute(async (trx) => {
        const existing = await objectRow(trx, sourceId);
        if (existing) {
          await trx.updateTable('connector_objects').set({ status: existing.status === 'synced' ? 'synced' : 'failed', error: reason.slice(0, 500), last_seen_sync: syncId, updated_at: now })
            .where('connection_id', '=', connection.id).where('source_id', '=', sourceId).execute();
        } else {
          await trx.insertInto('connector_objects').values({
            connection_id: connection.id, source_id: sourceId, project_id: connection.project_id, title: null, url: null, version: null,
            content_hash: null, memory_ids: '[]', status: 'failed', error: reason.slice(0, 500), last_seen_sync: syncId, created_at: now, updated_at: now,
          }).execute();
        }
        await bump(trx, syncId, { seen: 1, failed: 1 }, now);
      });
      await heartbeat();
    },
    async gone(sourceId) {
      const existing = await objectRow(db, sourceId);
      if (!existing || existing.status === 'deleted') return;
      await write(database, ctx, async (trx, effects) => {
        await forgetWithin(trx, { ctx, effects, hooks: deps.erase }, owner, decodeJson<number[]>(existing.memory_ids));
        await trx.updateTable('connector_objects').set({ status: 'deleted', memory_ids: '[]', content_hash: null, version: null, last_seen_sync: syncId, updated_at: effects.now })
          .where('connection_id', '=', connection.id).where('source_id', '=', sourceId).execute();
        await bump(trx, syncId, { deleted: 1 }, effects.now);
      });
      await heartbeat();
    },
    async saveCheckpoint(state) {
      await db.updateTable('connector_syncs').set({ checkpoint: encodeJson(state), updated_at: nowIso() }).where('id', '=', syncId).execute();
      await job.progress(handled / (handled + 100));
    },
  };

  try {
    const end = await provider.sync(run);
    if (end.complete) await forgetUnseen(deps, ctx, connection, syncId);
    await finish(deps, ctx, connection, syncId, 'succeeded', null, end.cursor);
  } catch (error) {
    if (error instanceof SyncCancelled) {
      await finish(deps, ctx, connection, syncId, 'cancelled', null);
    } else {
      const message = error instanceof Error ? error.message : String(error);
      const broken = error instanceof ConsentRevoked ? 'needs_repair' : error instanceof ProviderConfigError ? 'error' : undefined;
      await finish(deps, ctx, connection, syncId, 'failed', message, undefined, broken);
    }
  }
  const done = await db.selectFrom('connector_syncs').selectAll().where('id', '=', syncId).executeTakeFirstOrThrow();
  return { sync_id: syncId, status: done.status, ...Object.fromEntries(COUNTERS.map((c) => [c, done[c]])) };
}

/** Objects of the connection that a complete run did not see are gone at the source: their memories are forgotten. */
async function forgetUnseen(deps: SyncDeps, ctx: WriteContext, connection: ConnectionRow, syncId: number): Promise<void> {
  for (;;) {
    const gone = await deps.database.db.selectFrom('connector_objects').selectAll()
      .where('connection_id', '=', connection.id).where('status', '!=', 'deleted')
      .where((eb) => eb.or([eb('last_seen_sync', 'is', null), eb('last_seen_sync', '!=', syncId)]))
      .limit(100).execute();
    if (gone.length === 0) return;
    await write(deps.database, ctx, async (trx, effects) => {
      const ids = gone.flatMap((o) => decodeJson<number[]>(o.memory_ids));
      await forgetWithin(trx, { ctx, effects, hooks: deps.erase }, ownerOf(connection), ids);
      await trx.updateTable('connector_objects').set({ status: 'deleted', memory_ids: '[]', content_hash: null, version: null, last_seen_sync: syncId, updated_at: effects.now })
        .where('connection_id', '=', connection.id).where('source_id', 'in', gone.map((o) => o.source_id)).execute();
      await bump(trx, syncId, { deleted: gone.length }, effects.now);
    });
  }
}

async function finish(
  deps: SyncDeps, ctx: WriteContext, connection: ConnectionRow, syncId: number, status: 'succeeded' | 'failed' | 'cancelled',
  error: string | null, cursor?: unknown, broken?: 'error' | 'needs_repair',
): Promise<void> {
  await write(deps.database, ctx, async (trx, effects) => {
    const row = await trx.updateTable('connector_syncs').set({ status, error: error?.slice(0, 1000) ?? null, finished_at: effects.now, updated_at: effects.now })
      .where('id', '=', syncId).returningAll().executeTakeFirstOrThrow();
    await trx.updateTable('connector_connections').set({
      ...(cursor !== undefined ? { cursor: encodeJson(cursor) } : {}),
      ...(broken ? { state: broken, state_reason: error } : {}),
      updated_at: effects.now,
    }).where('id', '=', connection.id).execute();
    const summary = {
      connection_id: connection.id, sync_id: syncId, provider: connection.provider,
      seen: row.seen, created: row.created, updated: row.updated, deleted: row.deleted, unchanged: row.unchanged, failed: row.failed,
    };
    if (status === 'succeeded') effects.emit('sync.completed', summary);
    if (status === 'failed') effects.emit('sync.failed', { ...summary, error: (error ?? 'failed').slice(0, 300) });
    effects.audit(`connector.sync`, { type: 'connection', id: connection.id }, status);
  });
}
