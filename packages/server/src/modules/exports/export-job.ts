import { pipeline, Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { write } from '../../core/unit-of-work.js';
import { LeaseLost, type JobContext } from '../../jobs/runner.js';
import type { BlobStore } from '../../store/blobs.js';
import { decodeJson, nowIso, type Database } from '../../store/database.js';
import { countForExport, exportPage, historyOfMemories } from '../memories/index.js';
import { feedbackOfMemories } from '../retrieval/index.js';
import { relationsFromMemories, SUMMARIZES } from '../synthesis/index.js';
import { ENGRAM_EXPORT_FORMAT, serializer, type ExportRecord } from './formats.js';
import type { ExportScopeInput } from './schemas.js';
import { filterOf } from './service.js';

const PAGE = 1000;
/** Progress (and the cancel/erasure check) at most this often, so a large export is not slowed by its own bookkeeping. */
const CHECK_EVERY_MS = 500;
const SYSTEM = { type: 'system', id: null } as const;

class Stop extends Error {
  constructor(readonly why: 'cancelled' | 'restart') {
    super(why);
  }
}

/**
 * Writes one export's artifact to the blob store, streaming keyset pages of memories through the
 * memories module, so memory use stays flat at any size. A crash re-runs it from the start under
 * a new blob key; an erasure of a memory it may have written restarts it; a cancel stops it.
 */
export function exportJob(database: Database, blobs: BlobStore) {
  return async (job: JobContext) => {
    const id = job.payload.exportId as number;
    const { db } = database;
    // Left by an earlier attempt that crashed or failed.
    for (let attempt = 1; attempt < job.attempt; attempt++) await blobs.delete(blobKey(job.projectId!, id, attempt));
    for (let restarts = 0; ; restarts++) {
      const row = await db.selectFrom('exports').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row || row.deleted_at !== null || (row.status !== 'queued' && row.status !== 'running'))
        return { skipped: row?.status ?? 'missing' };
      const scope = decodeJson<ExportScopeInput>(row.scope);
      const filter = filterOf(row.project_id, scope);
      const include = decodeJson<string[]>(row.include);
      const linked = include.includes('relations');
      // Counted beside the walk, not before it (on PostgreSQL a count of 100,000 rows took 105 ms before the first
      // page was asked for): rows_total is written at the first progress check, null until then.
      const counting = countForExport(database, filter);
      // Awaited by the first progress check or when the export ends, unless the export stops first.
      counting.catch(() => {});
      let total: number | undefined;
      const started = nowIso();
      await db
        .updateTable('exports')
        .set({
          status: 'running',
          started_at: row.started_at ?? started,
          rows_total: null,
          rows_done: 0,
          last_memory_id: 0,
          updated_at: started,
        })
        .where('id', '=', id)
        .where('status', 'in', ['queued', 'running'])
        .execute();
      const epoch = row.erasures;
      const key = blobKey(row.project_id, id, job.attempt, restarts);
      let done = 0;
      let lastId = 0;
      let checkedAt = Date.now();
      // Kept aside: a stream error may reach put() wrapped (a premature close of the gzip stage).
      let stopped: Stop | undefined;
      const check = async () => {
        checkedAt = Date.now();
        const now = await db
          .selectFrom('exports')
          .select(['status', 'erasures', 'deleted_at'])
          .where('id', '=', id)
          .executeTakeFirst();
        if (!now || now.deleted_at !== null || now.status !== 'running') throw (stopped = new Stop('cancelled'));
        if (now.erasures !== epoch) throw (stopped = new Stop('restart'));
        total ??= await counting;
        await db
          .updateTable('exports')
          .set({ rows_done: done, rows_total: total, last_memory_id: lastId, updated_at: nowIso() })
          .where('id', '=', id)
          .execute();
        await job.progress(total === 0 ? 1 : Math.min(1, done / total));
      };
      async function* text() {
        const out = serializer(row!.format as 'jsonl', include);
        yield out.start({
          format: ENGRAM_EXPORT_FORMAT,
          version: 1,
          export_id: id,
          project_id: row!.project_id,
          generated_at: started,
          scope,
          include,
        });
        // The next page is read while this one is written out (the database's work and Node's side by side).
        let reading = exportPage(database, filter, lastId, PAGE);
        for (;;) {
          const page = await reading;
          if (page.length === 0) break;
          const ids = page.map((m) => m.id);
          if (page.length === PAGE) {
            reading = exportPage(database, filter, ids[ids.length - 1]!, PAGE);
            // Awaited at the top of the loop, unless the export stops first.
            reading.catch(() => {});
          }
          const history = include.includes('history') ? await historyOfMemories(db, row!.project_id, ids) : undefined;
          const feedback = include.includes('feedback') ? await feedbackOfMemories(db, ids) : undefined;
          // A summary's links to its sources always travel with it: imported, it is still rewritten when a source is forgotten.
          const summaries = linked ? [] : page.filter((m) => m.is_summary).map((m) => m.id);
          const relations = linked
            ? await relationsFromMemories(db, row!.project_id, ids)
            : summaries.length
              ? await relationsFromMemories(db, row!.project_id, summaries, SUMMARIZES)
              : undefined;
          let chunk = '';
          for (const memory of page) {
            // The page's objects are the job's own (exportPage): extended in place, not copied.
            const record: ExportRecord = memory;
            if (history) record.history = history.get(memory.id) ?? [];
            if (feedback) record.feedback = feedback.get(memory.id) ?? [];
            if (relations && (linked || memory.is_summary)) record.relations = relations.get(memory.id) ?? [];
            chunk += out.record(record, done === 0);
            done++;
          }
          lastId = ids[ids.length - 1]!;
          yield chunk;
          if (Date.now() - checkedAt >= CHECK_EVERY_MS) await check();
          if (page.length < PAGE) break;
        }
        yield out.end();
      }
      const bytes = Readable.from(
        (async function* () {
          for await (const part of text()) yield Buffer.from(part);
        })(),
      );
      try {
        const info = await blobs.put(key, row.gzip ? pipeline(bytes, createGzip(), () => {}) : bytes);
        // No statement of this export outlives it (the count's answer is not needed: rows_total is what was written).
        await counting.catch(() => {});
        const finished = await write(
          database,
          { actor: SYSTEM, organizationId: row.organization_id, projectId: row.project_id, requestId: null },
          async (trx, effects) => {
            const result = await trx
              .updateTable('exports')
              .set({
                status: 'completed',
                blob_key: key,
                size: info.size,
                sha256: info.sha256,
                rows_done: done,
                rows_total: done,
                last_memory_id: lastId,
                completed_at: effects.now,
                updated_at: effects.now,
              })
              .where('id', '=', id)
              .where('status', '=', 'running')
              .where('deleted_at', 'is', null)
              .where('erasures', '=', epoch)
              .executeTakeFirst();
            if (Number(result.numUpdatedRows) === 0) return false;
            effects.emit('export.completed', {
              export_id: id,
              project_id: row.project_id,
              rows: done,
              size: info.size,
              sha256: info.sha256,
            });
            return true;
          },
        );
        if (finished) return { rows: done, size: info.size };
        await blobs.delete(key);
      } catch (thrown) {
        const error = stopped ?? thrown;
        await counting.catch(() => {});
        await blobs.delete(key);
        if (error instanceof Stop && error.why === 'cancelled') return { cancelled: true };
        if (!(error instanceof Stop)) {
          // A taken-over attempt leaves the outcome to the runner that took the job over.
          if (!job.finalAttempt || error instanceof LeaseLost) throw error;
          await failExport(database, row, error);
          return { failed: true };
        }
      }
      // Restarted (an erasure hit what was written) or lost a race with cancel: the next loop decides.
    }
  };
}

export const blobKey = (projectId: string, id: number, attempt: number, restart = 0) =>
  `${projectId}/exports/${id}-${attempt}${restart ? `.${restart}` : ''}`;

async function failExport(
  database: Database,
  row: { id: number; organization_id: string; project_id: string },
  error: unknown,
) {
  // The message is the job's own (a database or storage failure); it names no secret.
  const message = error instanceof Error ? error.message.slice(0, 500) : 'export failed';
  await write(
    database,
    { actor: SYSTEM, organizationId: row.organization_id, projectId: row.project_id, requestId: null },
    async (trx, effects) => {
      await trx
        .updateTable('exports')
        .set({ status: 'failed', error: message, completed_at: effects.now, updated_at: effects.now })
        .where('id', '=', row.id)
        .where('status', '=', 'running')
        .execute();
      effects.emit('export.failed', { export_id: row.id, project_id: row.project_id, error: message });
    },
  );
}
