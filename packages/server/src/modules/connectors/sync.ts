import { sha256Hex } from '../../core/crypto.js';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, notFound } from '../../core/errors.js';
import { enqueueJob, LeaseLost, type JobContext, type JobHandler } from '../../jobs/runner.js';
import { decodeJson, encodeJson, nowIso, type Database, type Executor } from '../../store/database.js';
import {
  MEMORY_LIMITS,
  addWithin,
  forgetWithin,
  liveMemoryIds,
  nextSeq,
  type ImportedMemory,
  type Owner,
} from '../memories/index.js';
import { chunkMemories } from '../ingest/index.js';
import type { SyncDeps } from './deps.js';
import { sourceAccess } from './oauth.js';
import { sleep } from './providers/http.js';
import { providerNamed } from './providers/index.js';
import { ConsentRevoked, ProviderConfigError, type SourceObject, type SyncRun } from './providers/provider.js';
import {
  lockedConnection,
  purgeUnderWay,
  sameCredentials,
  type ConnectionRow,
  type StoredCredentials,
} from './store.js';

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

const ownerOf = (connection: ConnectionRow): Owner => ({
  projectId: connection.project_id,
  tenantId: '',
  endUserId: connection.end_user_id,
});

/** Connection states in which a sync cannot run until consent (POST …/authorize or …/repair). */
export const AWAITING_CONSENT = ['needs_consent', 'needs_repair'];

/**
 * Queues a sync of the connection, or refuses with 409: one is already queued or running, the
 * connection waits for consent, or its memories are being purged. The connection's row is locked
 * first, so a purge or removal starting meanwhile takes its turn after (and sees the sync); two
 * triggers take turns as well, and the partial unique index on active syncs is only a backstop.
 */
export async function queueSync(
  database: Database,
  trx: Executor,
  connection: ConnectionRow,
  trigger: 'manual' | 'schedule',
  ctx: WriteContext,
  now: string,
): Promise<number> {
  const current = await lockedConnection(database, trx, connection.project_id, connection.id);
  if (!current) throw notFound('Connection');
  if (current.purging_since !== null) {
    throw new AppError(
      'conflict',
      purgeUnderWay(current)
        ? "The connection's memories are being purged; sync once that is done"
        : "A purge of the connection's memories stopped half way; purge (or remove) it again to finish, then sync",
    );
  }
  if (AWAITING_CONSENT.includes(current.state)) {
    throw new AppError(
      'conflict',
      `The connection ${current.state === 'needs_consent' ? 'is waiting for consent (POST …/authorize)' : 'lost its consent (POST …/repair)'}`,
    );
  }
  const active = await trx
    .selectFrom('connector_syncs')
    .select('id')
    .where('connection_id', '=', connection.id)
    .where('status', 'in', ['queued', 'running'])
    .executeTakeFirst();
  if (active) throw new AppError('conflict', 'A sync of this connection is already queued or running');
  const sync = await trx
    .insertInto('connector_syncs')
    .values({
      project_id: connection.project_id,
      connection_id: connection.id,
      job_id: null,
      status: 'queued',
      trigger,
      checkpoint: null,
      error: null,
      started_at: null,
      finished_at: null,
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const jobId = await enqueueJob(trx, {
    kind: SYNC_JOB,
    projectId: connection.project_id,
    payload: { syncId: sync.id, ctx: { actor: ctx.actor, requestId: ctx.requestId } },
  });
  await trx.updateTable('connector_syncs').set({ job_id: jobId }).where('id', '=', sync.id).execute();
  return sync.id;
}

const contentHash = (object: SourceObject) =>
  sha256Hex('bytes' in object ? object.bytes : encodeJson(object.statements));

async function bump(db: Executor, syncId: number, counts: Partial<Record<Counter, number>>, now: string) {
  await db
    .updateTable('connector_syncs')
    .set((eb) => ({
      ...Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, eb(k as Counter, '+', v!)])),
      updated_at: now,
    }))
    .where('id', '=', syncId)
    .execute();
}

/** The `connector.sync` job (registered in services.ts). */
export const syncJobHandler =
  (deps: SyncDeps): JobHandler =>
  (job) =>
    runSync(deps, job);

/** Runs one sync to its end (succeeded, failed or cancelled). */
async function runSync(deps: SyncDeps, job: JobContext): Promise<unknown> {
  const { database } = deps;
  const db = database.db;
  const { syncId, ctx: jobCtx } = job.payload as { syncId: number; ctx: Pick<WriteContext, 'actor' | 'requestId'> };
  const sync = await db.selectFrom('connector_syncs').selectAll().where('id', '=', syncId).executeTakeFirst();
  if (!sync || !['queued', 'running'].includes(sync.status)) return { sync_id: syncId, skipped: true };
  const connection = await db
    .selectFrom('connector_connections')
    .selectAll()
    .where('id', '=', sync.connection_id)
    .executeTakeFirstOrThrow();
  const ctx: WriteContext = { ...jobCtx, organizationId: connection.organization_id, projectId: connection.project_id };
  const provider = providerNamed(connection.provider)!;
  const owner = ownerOf(connection);
  const source = `connector:${provider.name}`;
  const credentials: StoredCredentials = { sealed: connection.credentials };

  let handled = 0;
  // Every write of the run renews the job's lease in its own transaction and commits only while this
  // attempt holds the job: a runner that stalled past its lease and was taken over writes nothing more.
  const fence = (trx: Executor) => job.progress(handled / (handled + 100), trx);
  await db.transaction().execute(async (trx) => {
    await fence(trx);
    await trx
      .updateTable('connector_syncs')
      .set({ status: 'running', started_at: sync.started_at ?? nowIso(), updated_at: nowIso() })
      .where('id', '=', syncId)
      .execute();
  });

  const stopIfCancelled = async () => {
    const row = await db
      .selectFrom('connector_syncs')
      .select('cancel_requested')
      .where('id', '=', syncId)
      .executeTakeFirstOrThrow();
    if (row.cancel_requested) throw new SyncCancelled();
  };
  const heartbeat = async () => {
    handled++;
    await stopIfCancelled();
  };
  // Memories forgotten since the last sync (by the end user, say) make the object changed, so it is read again.
  const intact = async (stored: unknown) => {
    const ids = decodeJson<number[]>(stored);
    return (await liveMemoryIds(db, owner, ids)).length === ids.length;
  };
  const objectRow = (trx: Executor, sourceId: string) =>
    trx
      .selectFrom('connector_objects')
      .selectAll()
      .where('connection_id', '=', connection.id)
      .where('source_id', '=', sourceId)
      .executeTakeFirst();

  const run: SyncRun = {
    ...sourceAccess(deps, provider, connection, credentials),
    // A long wait keeps the job's lease (shorter than a Retry-After may be) and notices a cancel.
    async pause(ms) {
      for (const until = Date.now() + ms; Date.now() < until; ) {
        await sleep(Math.min(15_000, until - Date.now()));
        await job.progress(handled / (handled + 100));
        await stopIfCancelled();
      }
    },
    checkpoint: sync.checkpoint === null ? null : decodeJson(sync.checkpoint),
    cursor: connection.cursor === null ? null : decodeJson(connection.cursor),
    async unchanged(sourceId, version) {
      const row = await objectRow(db, sourceId);
      if (
        !row ||
        version === null ||
        row.version !== version ||
        row.status !== 'synced' ||
        !(await intact(row.memory_ids))
      )
        return false;
      if (row.last_seen_sync !== syncId) {
        const now = nowIso();
        await db.transaction().execute(async (trx) => {
          await fence(trx);
          await trx
            .updateTable('connector_objects')
            .set({ last_seen_sync: syncId, updated_at: now })
            .where('connection_id', '=', connection.id)
            .where('source_id', '=', sourceId)
            .execute();
          await bump(trx, syncId, { seen: 1, unchanged: 1 }, now);
        });
        await heartbeat();
      }
      return true;
    },
    async object(object: SourceObject) {
      const hash = contentHash(object);
      const seen = await objectRow(db, object.sourceId);
      // Already handled by this run before a crash: nothing to do again.
      if (seen?.last_seen_sync === syncId && seen.content_hash === hash) return;
      if (seen && seen.content_hash === hash && seen.status === 'synced' && (await intact(seen.memory_ids))) {
        const now = nowIso();
        await db.transaction().execute(async (trx) => {
          await fence(trx);
          await trx
            .updateTable('connector_objects')
            .set({ version: object.version, last_seen_sync: syncId, updated_at: now })
            .where('connection_id', '=', connection.id)
            .where('source_id', '=', object.sourceId)
            .execute();
          await bump(trx, syncId, { seen: 1, unchanged: 1 }, now);
        });
        return heartbeat();
      }
      let items: ImportedMemory[];
      const origin = {
        source_id: object.sourceId,
        connection_id: connection.id,
        provider: provider.name,
        ...(object.url ? { url: object.url } : {}),
        ...(object.title ? { title: object.title } : {}),
      };
      if ('statements' in object) {
        items = object.statements
          .filter((s) => s.text.trim() !== '')
          .map((s) => ({
            text: s.text.slice(0, MEMORY_LIMITS.textChars),
            source,
            created_at: s.time,
            metadata: { ...s.metadata, origin },
            ...(s.speaker ? { speaker: s.speaker } : {}),
            ...(s.sessionId ? { session_id: s.sessionId } : {}),
          }));
      } else {
        try {
          const document = await deps.reader.read(object.bytes, object.name, object.mediaType, 'wait');
          items = chunkMemories(document, { source, file: { name: object.name, ...origin } });
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          await run.failed(object.sourceId, error.message);
          return;
        }
      }
      const written = await write(database, ctx, async (trx, effects) => {
        await fence(trx);
        // The owner's lock first, then the object row as it is now: the memories replaced are those it names.
        const seq = await nextSeq(trx, owner, effects.now);
        const existing = await objectRow(trx, object.sourceId);
        if (existing)
          await forgetWithin(
            trx,
            { ctx, effects, hooks: deps.erase, seq },
            owner,
            decodeJson<number[]>(existing.memory_ids),
          );
        const outcomes = await addWithin(database, trx, ctx, effects, owner, items);
        const ids = outcomes.flatMap((o) => ('created' in o ? [o.created.id] : []));
        const values = {
          title: object.title ?? null,
          url: object.url ?? null,
          version: object.version,
          content_hash: hash,
          memory_ids: encodeJson(ids),
          status: 'synced',
          error: null,
          last_seen_sync: syncId,
          updated_at: effects.now,
        };
        if (existing)
          await trx
            .updateTable('connector_objects')
            .set(values)
            .where('connection_id', '=', connection.id)
            .where('source_id', '=', object.sourceId)
            .execute();
        else
          await trx
            .insertInto('connector_objects')
            .values({
              connection_id: connection.id,
              source_id: object.sourceId,
              project_id: connection.project_id,
              created_at: effects.now,
              ...values,
            })
            .execute();
        await bump(
          trx,
          syncId,
          { seen: 1, [existing && existing.status !== 'deleted' ? 'updated' : 'created']: 1 },
          effects.now,
        );
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
        await fence(trx);
        const existing = await objectRow(trx, sourceId);
        if (existing) {
          await trx
            .updateTable('connector_objects')
            .set({
              status: existing.status === 'synced' ? 'synced' : 'failed',
              error: reason.slice(0, 500),
              last_seen_sync: syncId,
              updated_at: now,
            })
            .where('connection_id', '=', connection.id)
            .where('source_id', '=', sourceId)
            .execute();
        } else {
          await trx
            .insertInto('connector_objects')
            .values({
              connection_id: connection.id,
              source_id: sourceId,
              project_id: connection.project_id,
              title: null,
              url: null,
              version: null,
              content_hash: null,
              memory_ids: '[]',
              status: 'failed',
              error: reason.slice(0, 500),
              last_seen_sync: syncId,
              created_at: now,
              updated_at: now,
            })
            .execute();
        }
        await bump(trx, syncId, { seen: 1, failed: 1 }, now);
      });
      await heartbeat();
    },
    async gone(sourceId) {
      const seen = await objectRow(db, sourceId);
      if (!seen || seen.status === 'deleted') return;
      await write(database, ctx, async (trx, effects) => {
        await fence(trx);
        const seq = await nextSeq(trx, owner, effects.now);
        const existing = await objectRow(trx, sourceId);
        if (!existing || existing.status === 'deleted') return;
        await forgetWithin(
          trx,
          { ctx, effects, hooks: deps.erase, seq },
          owner,
          decodeJson<number[]>(existing.memory_ids),
        );
        await trx
          .updateTable('connector_objects')
          .set({
            status: 'deleted',
            memory_ids: '[]',
            content_hash: null,
            version: null,
            last_seen_sync: syncId,
            updated_at: effects.now,
          })
          .where('connection_id', '=', connection.id)
          .where('source_id', '=', sourceId)
          .execute();
        await bump(trx, syncId, { deleted: 1 }, effects.now);
      });
      await heartbeat();
    },
    async saveCheckpoint(state) {
      await db.transaction().execute(async (trx) => {
        await fence(trx);
        await trx
          .updateTable('connector_syncs')
          .set({ checkpoint: encodeJson(state), updated_at: nowIso() })
          .where('id', '=', syncId)
          .execute();
      });
    },
  };

  const end = (
    status: 'succeeded' | 'failed' | 'cancelled',
    error: string | null,
    cursor?: unknown,
    broken?: 'error' | 'needs_repair',
  ) => finish(deps, ctx, connection, syncId, fence, { status, error, cursor, broken, credentials: credentials.sealed });
  try {
    const result = await provider.sync(run);
    if (result.complete) await forgetUnseen(deps, ctx, connection, syncId, fence);
    await end('succeeded', null, result.cursor);
  } catch (error) {
    if (error instanceof LeaseLost) throw error;
    if (error instanceof SyncCancelled) {
      await end('cancelled', null);
    } else {
      const message = error instanceof Error ? error.message : String(error);
      const broken =
        error instanceof ConsentRevoked ? 'needs_repair' : error instanceof ProviderConfigError ? 'error' : undefined;
      await end('failed', message, undefined, broken);
    }
  }
  const done = await db.selectFrom('connector_syncs').selectAll().where('id', '=', syncId).executeTakeFirstOrThrow();
  return { sync_id: syncId, status: done.status, ...Object.fromEntries(COUNTERS.map((c) => [c, done[c]])) };
}

/** Objects of the connection that a complete run did not see are gone at the source: their memories are forgotten. */
async function forgetUnseen(
  deps: SyncDeps,
  ctx: WriteContext,
  connection: ConnectionRow,
  syncId: number,
  fence: (trx: Executor) => Promise<void>,
): Promise<void> {
  for (;;) {
    const gone = await deps.database.db
      .selectFrom('connector_objects')
      .selectAll()
      .where('connection_id', '=', connection.id)
      .where('status', '!=', 'deleted')
      .where((eb) => eb.or([eb('last_seen_sync', 'is', null), eb('last_seen_sync', '!=', syncId)]))
      .limit(100)
      .execute();
    if (gone.length === 0) return;
    await write(deps.database, ctx, async (trx, effects) => {
      await fence(trx);
      const ids = gone.flatMap((o) => decodeJson<number[]>(o.memory_ids));
      await forgetWithin(trx, { ctx, effects, hooks: deps.erase }, ownerOf(connection), ids);
      await trx
        .updateTable('connector_objects')
        .set({
          status: 'deleted',
          memory_ids: '[]',
          content_hash: null,
          version: null,
          last_seen_sync: syncId,
          updated_at: effects.now,
        })
        .where('connection_id', '=', connection.id)
        .where(
          'source_id',
          'in',
          gone.map((o) => o.source_id),
        )
        .execute();
      await bump(trx, syncId, { deleted: gone.length }, effects.now);
    });
  }
}

async function finish(
  deps: SyncDeps,
  ctx: WriteContext,
  connection: ConnectionRow,
  syncId: number,
  fence: (trx: Executor) => Promise<void>,
  outcome: {
    status: 'succeeded' | 'failed' | 'cancelled';
    error: string | null;
    cursor?: unknown;
    broken?: 'error' | 'needs_repair';
    credentials: string | null;
  },
): Promise<void> {
  const { status, error, cursor, broken } = outcome;
  await write(deps.database, ctx, async (trx, effects) => {
    await fence(trx);
    // The connection before the sync's row, as queueSync takes them: the two never wait for each other in turn.
    await trx
      .updateTable('connector_connections')
      .set({ updated_at: effects.now })
      .where('id', '=', connection.id)
      .execute();
    // Where the next run starts, only while the configuration is the one this run read: new configuration chose what to read anew.
    if (cursor !== undefined) {
      await trx
        .updateTable('connector_connections')
        .set({ cursor: encodeJson(cursor) })
        .where('id', '=', connection.id)
        .where('config', '=', encodeJson(decodeJson(connection.config)))
        .execute();
    }
    // Decided from the credentials and configuration this run used: a consent, new credentials or configuration since decides afresh.
    if (broken) {
      await trx
        .updateTable('connector_connections')
        .set({ state: broken, state_reason: error })
        .where('id', '=', connection.id)
        .where(sameCredentials(outcome.credentials))
        .where('config', '=', encodeJson(decodeJson(connection.config)))
        .execute();
    }
    const row = await trx
      .updateTable('connector_syncs')
      .set({ status, error: error?.slice(0, 1000) ?? null, finished_at: effects.now, updated_at: effects.now })
      .where('id', '=', syncId)
      .returningAll()
      .executeTakeFirstOrThrow();
    const summary = {
      connection_id: connection.id,
      sync_id: syncId,
      provider: connection.provider,
      seen: row.seen,
      created: row.created,
      updated: row.updated,
      deleted: row.deleted,
      unchanged: row.unchanged,
      failed: row.failed,
    };
    if (status === 'succeeded') effects.emit('sync.completed', summary);
    if (status === 'failed') effects.emit('sync.failed', { ...summary, error: (error ?? 'failed').slice(0, 300) });
    effects.audit(`connector.sync`, { type: 'connection', id: connection.id }, status);
  });
}
