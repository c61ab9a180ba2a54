import { pipeline, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { Selectable } from 'kysely';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, notFound } from '../../core/errors.js';
import { paginate, type PageParams } from '../../core/paging.js';
import { compileBody, validateEndUserId, validationError } from '../../core/validation.js';
import { enqueueJob, LeaseLost, type JobContext } from '../../jobs/runner.js';
import type { BlobStore } from '../../store/blobs.js';
import { nowIso, type Database, type Executor } from '../../store/database.js';
import type { ImportsTable } from '../../store/schema.js';
import {
  AddMemoryBody,
  importMemories,
  MEMORY_LIMITS,
  prepareImport,
  type ImportedMemory,
  type Owner,
  type PreparedImport,
} from '../memories/index.js';
import { importRelations, RELATION_TYPES, SUMMARIZES, type ImportedRelation } from '../synthesis/index.js';
import { ENGRAM_EXPORT_FORMAT } from './formats.js';
import { ImportFileError, scanRecords, type Container } from './import-scanner.js';
import type { ImportView } from './schemas.js';

/**
 * Imports: an uploaded file (kept in the blob store until the job has read it) becomes memories,
 * a batch per transaction. Each record's source id becomes its client_ref, so a re-run (after a
 * crash, or of the same file) skips what already landed.
 */

export const IMPORT_JOB = 'imports.run';
const RELATIONS_PER_CALL = 1000;
const SYSTEM = { type: 'system', id: null } as const;
type ImportRow = Selectable<ImportsTable>;
type Format = 'auto' | 'engram' | 'mem0';

export function toImport(row: ImportRow): ImportView {
  const finished = row.status === 'completed';
  return {
    id: row.id,
    project_id: row.project_id,
    status: row.status as ImportView['status'],
    format: row.format as Format,
    progress: {
      rows_done: row.rows_done,
      rows_total: finished ? row.rows_done : null,
      bytes_done: row.bytes_done,
      bytes_total: row.bytes_total,
    },
    created: row.rows_created,
    skipped: row.rows_skipped,
    relations_created: row.relations_created,
    relations_skipped: row.relations_skipped,
    error: row.error === null ? null : { message: row.error, record: row.error_record, line: row.error_line },
    created_at: row.created_at,
    completed_at: row.completed_at,
  };
}

/** Stores the uploaded file, then records the import and queues its job. */
export async function createImport(
  database: Database,
  blobs: BlobStore,
  ctx: WriteContext & { projectId: string },
  format: Format,
  body: AsyncIterable<Uint8Array>,
): Promise<ImportView> {
  const key = `${ctx.projectId}/imports/upload-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  let info: Awaited<ReturnType<BlobStore['put']>>;
  try {
    info = await blobs.put(key, body);
  } catch (error) {
    await blobs.delete(key);
    throw error;
  }
  if (info.size === 0) {
    await blobs.delete(key);
    throw new AppError('validation_error', 'The import file is empty', 'body');
  }
  return write(database, ctx, async (trx, effects) => {
    const row = await trx
      .insertInto('imports')
      .values({
        organization_id: ctx.organizationId,
        project_id: ctx.projectId,
        created_by: ctx.actor.id,
        created_by_type: ctx.actor.type === 'api_key' ? 'api_key' : 'user',
        status: 'queued',
        format,
        blob_key: key,
        bytes_total: info.size,
        created_at: effects.now,
        updated_at: effects.now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await enqueueJob(trx, { kind: IMPORT_JOB, projectId: ctx.projectId, payload: { importId: row.id } });
    effects.audit('import.create', { type: 'import', id: row.id });
    return toImport(row);
  });
}

const projectImports = (db: Executor, projectId: string) =>
  db.selectFrom('imports').selectAll().where('project_id', '=', projectId);

export function listImports(db: Executor, projectId: string, page: PageParams) {
  return paginate(projectImports(db, projectId).orderBy('id', 'desc'), page, toImport);
}

export async function getImport(db: Executor, projectId: string, id: number): Promise<ImportView> {
  const row = await projectImports(db, projectId).where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('Import');
  return toImport(row);
}

export async function cancelImport(
  database: Database,
  ctx: WriteContext & { projectId: string },
  id: number,
): Promise<ImportView> {
  return write(database, ctx, async (trx, effects) => {
    // The status is decided as the update finds the row: an import finishing meanwhile stays finished and the cancel is refused.
    const updated = await trx
      .updateTable('imports')
      .set({ status: 'cancelled', completed_at: effects.now, updated_at: effects.now })
      .where('id', '=', id)
      .where('project_id', '=', ctx.projectId)
      .where('status', 'in', ['queued', 'running'])
      .returningAll()
      .executeTakeFirst();
    if (!updated)
      throw new AppError('conflict', `The import is already ${(await getImport(trx, ctx.projectId, id)).status}`);
    effects.audit('import.cancel', { type: 'import', id });
    return toImport(updated);
  });
}

const validateMemory = compileBody<ImportedMemory>(AddMemoryBody);

/** A timestamp in any RFC 3339 offset (Mem0 writes local offsets and microseconds), as our UTC milliseconds. */
function timestamp(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new AppError('validation_error', `${field} must be an RFC 3339 timestamp`, field);
  return new Date(ms).toISOString();
}

const optionalString = (value: unknown) => (typeof value === 'string' && value !== '' ? value : undefined);

const RELATION_KINDS: readonly string[] = [...RELATION_TYPES, SUMMARIZES];
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The relations an Engram record carries from itself to other memories of its end user, as links between client_refs. */
function relationsOf(r: Record<string, unknown>, owner: Owner, sourceRef: string): ImportedRelation[] {
  if (r.relations === undefined || r.relations === null) return [];
  if (!Array.isArray(r.relations)) throw new AppError('validation_error', 'relations must be an array', 'relations');
  return r.relations.map((link: unknown, i) => {
    const field = (name: string) => `relations/${i}${name ? `/${name}` : ''}`;
    if (!isObject(link)) throw new AppError('validation_error', 'a relation must be an object', field(''));
    if (typeof link.type !== 'string' || !RELATION_KINDS.includes(link.type)) {
      throw new AppError('validation_error', `type must be one of ${RELATION_KINDS.join(', ')}`, field('type'));
    }
    if (!Number.isSafeInteger(link.target_id) || (link.target_id as number) < 1)
      throw new AppError('validation_error', 'target_id must be a positive integer', field('target_id'));
    if (
      link.target_client_ref !== undefined &&
      link.target_client_ref !== null &&
      typeof link.target_client_ref !== 'string'
    ) {
      throw new AppError('validation_error', 'target_client_ref must be a string or null', field('target_client_ref'));
    }
    const metadata = link.metadata ?? {};
    if (!isObject(metadata)) throw new AppError('validation_error', 'metadata must be an object', field('metadata'));
    if (Buffer.byteLength(JSON.stringify(metadata)) > MEMORY_LIMITS.metadataBytes) {
      throw new AppError(
        'validation_error',
        `metadata must serialise to at most ${MEMORY_LIMITS.metadataBytes} bytes`,
        field('metadata'),
      );
    }
    return {
      owner,
      source_ref: sourceRef,
      target_ref: optionalString(link.target_client_ref) ?? `engram:${String(link.target_id)}`,
      type: link.type,
      metadata,
      created_at: timestamp(link.created_at, field('created_at')),
    };
  });
}

/** One record of Engram's own export format. */
function fromEngram(
  r: Record<string, unknown>,
  projectId: string,
): { owner: Owner; item: ImportedMemory; relations: ImportedRelation[] } {
  const item: Record<string, unknown> = {
    text: r.text,
    tags: r.tags,
    importance: r.importance,
    metadata: r.metadata,
    client_ref: optionalString(r.client_ref) ?? `engram:${String(r.id)}`,
    ...(optionalString(r.source) ? { source: r.source } : {}),
    ...(optionalString(r.session_id) ? { session_id: r.session_id } : {}),
  };
  for (const k of Object.keys(item)) if (item[k] === undefined) delete item[k];
  if (!validateMemory(item)) throw validationError(validateMemory.errors);
  if (typeof r.end_user_id !== 'string')
    throw new AppError('validation_error', 'end_user_id is required', 'end_user_id');
  const owner = {
    projectId,
    tenantId: typeof r.tenant_id === 'string' ? r.tenant_id : '',
    endUserId: validateEndUserId(r.end_user_id, 'end_user_id'),
  };
  return {
    owner,
    relations: relationsOf(r, owner, item.client_ref as string),
    item: {
      ...(item as unknown as ImportedMemory),
      is_summary: r.is_summary === true,
      speaker: optionalString(r.speaker) ?? null,
      created_at: timestamp(r.created_at, 'created_at'),
      updated_at: timestamp(r.updated_at, 'updated_at'),
    },
  };
}

/** One record of Mem0's export (`results`) or get_all list: id, memory, user_id, metadata, categories, timestamps. */
function fromMem0(r: Record<string, unknown>, projectId: string): { owner: Owner; item: ImportedMemory } {
  if (r.id === undefined || r.id === null) throw new AppError('validation_error', 'id is required', 'id');
  const userId = optionalString(r.user_id) ?? optionalString(r.agent_id);
  if (!userId) throw new AppError('validation_error', 'user_id is required', 'user_id');
  const metadata = {
    ...((r.metadata ?? {}) as Record<string, unknown>),
    ...(optionalString(r.agent_id) && r.user_id ? { agent_id: r.agent_id } : {}),
  };
  const item: Record<string, unknown> = {
    text: r.memory,
    tags: r.categories ?? [],
    metadata,
    client_ref: String(r.id),
    ...(optionalString(r.run_id) ? { session_id: r.run_id } : {}),
  };
  if (!validateMemory(item)) {
    const error = validationError(validateMemory.errors);
    // Name the field as the file does.
    const field = error.field
      ?.replace(/^text/, 'memory')
      .replace(/^tags/, 'categories')
      .replace(/^session_id/, 'run_id');
    throw new AppError(
      'validation_error',
      error.message.replace(/\btext\b/, 'memory').replace(/\btags\b/, 'categories'),
      field,
    );
  }
  const created = timestamp(r.created_at, 'created_at');
  return {
    owner: { projectId, tenantId: '', endUserId: validateEndUserId(userId, 'user_id') },
    item: {
      ...(item as unknown as ImportedMemory),
      created_at: created,
      updated_at: timestamp(r.updated_at, 'updated_at') ?? created,
    },
  };
}

function detect(format: Format, container: Container, header: Record<string, unknown> | null): 'engram' | 'mem0' {
  if (format !== 'auto') return format;
  if (header?.format === ENGRAM_EXPORT_FORMAT || container === 'memories' || container === 'lines') return 'engram';
  return 'mem0';
}

async function* decoded(bytes: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  for await (const chunk of bytes) {
    yield decoder.decode(chunk, { stream: true });
  }
  yield decoder.decode();
}

/** The file's text, gunzipped when it starts with the gzip magic number; `counter` counts the stored bytes read. */
async function fileText(blobs: BlobStore, key: string, counter: { bytes: number }): Promise<AsyncIterable<string>> {
  const head = await blobs.get(key, { offset: 0, length: 2 });
  const magic = head ? Buffer.concat(await head.toArray()) : Buffer.alloc(0);
  const raw = (await blobs.get(key))!;
  async function* counted() {
    for await (const chunk of raw) {
      counter.bytes += (chunk as Buffer).length;
      yield chunk as Buffer;
    }
  }
  const bytes = Readable.from(counted());
  return decoded(magic[0] === 0x1f && magic[1] === 0x8b ? pipeline(bytes, createGunzip(), () => {}) : bytes);
}

/** `recordsPerBatch`: the records a batch's transaction writes (config.importBatch). */
export function importJob(database: Database, blobs: BlobStore, recordsPerBatch: number) {
  return async (job: JobContext) => {
    const id = job.payload.importId as number;
    const { db } = database;
    const row = await db.selectFrom('imports').selectAll().where('id', '=', id).executeTakeFirst();
    // A finished import has no file left; a cancelled one has, until its job runs.
    if (!row?.blob_key) return { skipped: row?.status ?? 'missing' };
    const ctx: WriteContext = {
      actor: row.created_by === null ? SYSTEM : { type: row.created_by_type, id: row.created_by },
      organizationId: row.organization_id,
      projectId: row.project_id,
      requestId: null,
    };
    // The uploaded file holds memory content: it goes once read or cancelled, so erasure leaves no copy in it.
    const discardUpload = async () => {
      await db.updateTable('imports').set({ blob_key: null }).where('id', '=', id).execute();
      await blobs.delete(row.blob_key!);
    };
    const stop = async () => {
      await discardUpload();
      return { cancelled: true };
    };
    // A re-run starts over: records that landed are skipped by their client_ref. The status is
    // decided as the update finds the row, so a cancel since the read above stands.
    const started = await db
      .updateTable('imports')
      .set({
        status: 'running',
        rows_done: 0,
        rows_created: 0,
        rows_skipped: 0,
        relations_created: 0,
        relations_skipped: 0,
        bytes_done: 0,
        updated_at: nowIso(),
      })
      .where('id', '=', id)
      .where('status', 'in', ['queued', 'running'])
      .executeTakeFirst();
    if (Number(started.numUpdatedRows) === 0) return stop();
    const counter = { bytes: 0 };
    let header: Record<string, unknown> | null = null;
    let batch: Array<{ owner: Owner; item: ImportedMemory }> = [];
    // Relations are restored once the batch holding their source has landed; one whose target comes later in the
    // file waits (in memory) and is tried again at the end.
    let linking: ImportedRelation[] = [];
    const waiting: ImportedRelation[] = [];
    const totals = { done: 0, created: 0, skipped: 0, relationsCreated: 0, relationsSkipped: 0 };
    const link = async (relations: ImportedRelation[], last: boolean) => {
      for (let start = 0; start < relations.length; start += RELATIONS_PER_CALL) {
        const chunk = relations.slice(start, start + RELATIONS_PER_CALL);
        (await importRelations(database, ctx, chunk)).forEach((outcome, i) => {
          if (outcome === 'created') totals.relationsCreated++;
          else if (outcome === 'existing' || last) totals.relationsSkipped++;
          else waiting.push(chunk[i]!);
        });
      }
    };
    const finish = async (set: {
      status: string;
      error?: string;
      error_record?: number | null;
      error_line?: number | null;
    }) => {
      // Only a running import finishes: a cancel since the last check stands. The file is deleted before the outcome
      // shows, so a finished import has none left; a crash in between leaves a running import, whose next attempt
      // finds the file gone and fails it (what landed stays, and a re-upload skips it).
      await blobs.delete(row.blob_key!);
      const finished = await db
        .updateTable('imports')
        .set({ ...set, blob_key: null, completed_at: nowIso(), updated_at: nowIso() })
        .where('id', '=', id)
        .where('status', '=', 'running')
        .executeTakeFirst();
      if (Number(finished.numUpdatedRows) === 0)
        await db.updateTable('imports').set({ blob_key: null }).where('id', '=', id).execute();
    };
    // A batch is recorded while the next one is read, parsed and prepared (the database's work and Node's side by
    // side), one at a time, so batches land in file order. `refusedAt`: the last record of a batch the memories module refused.
    let recording: Promise<boolean> | undefined;
    let refusedAt: { record: number; line: number } | null = null;
    type Totals = typeof totals;
    /** Writes the import's counts; answers whether it still runs (not cancelled). */
    const progressed = async (executor: Executor, counts: Totals, bytes: number) => {
      const now = await executor
        .updateTable('imports')
        .set({
          rows_done: counts.done,
          rows_created: counts.created,
          rows_skipped: counts.skipped,
          relations_created: counts.relationsCreated,
          relations_skipped: counts.relationsSkipped,
          bytes_done: bytes,
          updated_at: nowIso(),
        })
        .where('id', '=', id)
        .returning('status')
        .executeTakeFirst();
      return now?.status === 'running';
    };
    const record = async (
      memories: PreparedImport | undefined,
      relations: ImportedRelation[],
      end: typeof current,
      bytes: number,
      last: boolean,
    ) => {
      let running = true;
      if (memories) {
        // The counts go in the batch's own transaction: one commit a batch (each of its own was an fsync on
        // SQLite), and counts that never run ahead of what landed.
        const result = await importMemories(database, ctx, memories, (trx, outcome) =>
          progressed(
            trx,
            {
              ...totals,
              done: totals.done + memories.size,
              created: totals.created + outcome.created,
              skipped: totals.skipped + outcome.skipped,
            },
            bytes,
          ),
        ).catch((error: unknown) => {
          if (error instanceof AppError) refusedAt = end;
          throw error;
        });
        totals.done += memories.size;
        totals.created += result.created;
        totals.skipped += result.skipped;
        running = result.recorded!;
      }
      const relationsBefore = totals.relationsCreated + totals.relationsSkipped;
      await link(relations, false);
      if (last) await link(waiting.splice(0), true);
      // Relations are restored after their batch committed: counted by a write of their own when there were any.
      if (!memories || totals.relationsCreated + totals.relationsSkipped !== relationsBefore)
        running = await progressed(db, totals, bytes);
      await job.progress(row.bytes_total ? bytes / row.bytes_total : 1);
      return running;
    };
    /** Whether the batch before still runs (not cancelled); an error of its recording is thrown here. */
    const recorded = async () => {
      const earlier = recording;
      recording = undefined;
      return earlier ? earlier : true;
    };
    const flush = async (last = false) => {
      // Checked and prepared before the batch before is awaited: while the database writes that one (prepareImport).
      // Content the memories module refuses fails the import here, as the batch ending at the current record.
      const prepared = batch.length > 0 ? prepareImport(database, batch) : undefined;
      if (!(await recorded())) return false;
      const next = record(prepared, linking, current, counter.bytes, last);
      batch = [];
      linking = [];
      if (last) return next;
      // Awaited by the next flush, or by the failure that ends the import first.
      recording = next;
      next.catch(() => {});
      return true;
    };
    if (!(await blobs.stat(row.blob_key))) {
      await finish({
        status: 'failed',
        error:
          'the uploaded file is gone: an earlier attempt read it and stopped before recording its outcome (what it imported stays; importing the file again skips it)',
      });
      return { failed: true };
    }
    let current: { record: number; line: number } | null = null;
    try {
      for await (const scanned of scanRecords(await fileText(blobs, row.blob_key, counter))) {
        if (scanned.kind === 'header') {
          header = scanned.value;
          continue;
        }
        current = scanned;
        let value: unknown;
        try {
          value = JSON.parse(scanned.text);
        } catch {
          throw new ImportFileError(
            `record ${scanned.record} (line ${scanned.line}) is not valid JSON`,
            scanned.record,
            scanned.line,
          );
        }
        const format = detect(row.format as Format, scanned.container, header);
        try {
          if (format === 'engram') {
            const { owner, item, relations } = fromEngram(value as Record<string, unknown>, row.project_id);
            batch.push({ owner, item });
            linking.push(...relations);
          } else {
            batch.push(fromMem0(value as Record<string, unknown>, row.project_id));
          }
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          throw new ImportFileError(
            `record ${scanned.record} (line ${scanned.line}): ${error.field ? `${error.field}: ` : ''}${error.message}`,
            scanned.record,
            scanned.line,
          );
        }
        if (batch.length === recordsPerBatch && !(await flush())) return stop();
      }
      if (!(await flush(true))) return stop();
      await finish({ status: 'completed' });
      return totals;
    } catch (thrown) {
      // A batch still being recorded lands (or fails, which came first in the file) before the outcome is decided.
      const error = await recorded().then(
        () => thrown,
        (earlier: unknown) => earlier,
      );
      if (error instanceof ImportFileError || error instanceof TypeError) {
        const message =
          error instanceof ImportFileError
            ? error.message
            : `line ${current ? current.line : 1}: the file is not valid UTF-8`;
        await finish({
          status: 'failed',
          error: message,
          error_record: error instanceof ImportFileError ? error.record : null,
          error_line: error instanceof ImportFileError ? error.line : null,
        });
        return { failed: true };
      }
      if (error instanceof AppError) {
        // A record the memories module refused as a whole (e.g. a NUL character): the batch did not land.
        const at: typeof current = refusedAt ?? current;
        await finish({
          status: 'failed',
          error: `batch ending at record ${at?.record ?? 0}: ${error.message}`,
          error_record: at?.record ?? null,
          error_line: at?.line ?? null,
        });
        return { failed: true };
      }
      // A taken-over attempt leaves the outcome to the runner that took the job over.
      if (!job.finalAttempt || error instanceof LeaseLost) throw error;
      await finish({ status: 'failed', error: error instanceof Error ? error.message.slice(0, 500) : 'import failed' });
      return { failed: true };
    }
  };
}
