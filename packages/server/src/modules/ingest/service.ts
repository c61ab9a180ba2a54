import { Readable } from 'node:stream';
import { write, type WriteContext } from '../../core/unit-of-work.js';
import { AppError, notFound } from '../../core/errors.js';
import { sha256Hex } from '../../core/crypto.js';
import {
  enqueueJob,
  eraseJobs,
  getJob,
  PermanentJobError,
  type JobHandler,
  type JobHandlers,
  type JobView,
} from '../../jobs/runner.js';
import type { BlobStore } from '../../store/blobs.js';
import { decodeJson, encodeJson, type Database, type Executor } from '../../store/database.js';
import {
  addWithin,
  forgetWithin,
  liveMemoryIds,
  nextSeq,
  ownersOfMemories,
  type EraseHook,
  type EraseHooks,
  type MemoryView,
  type Owner,
} from '../memories/index.js';
import type { ReadDocument } from './document.js';
import { chunkMemories } from './provenance.js';
import type { FileType } from './parsers/index.js';
import type { DocumentReader } from './reader.js';

/** This module owns uploaded_files: per end user and file name, the version whose memories are live. */

export const UPLOAD_JOB = 'ingest.upload';

export interface UploadSettings {
  /** Larger files are refused (413). */
  maxBytes: number;
  /** Files larger than this are ingested by a background job (202). */
  backgroundFromBytes: number;
}

/** What ingesting needs of the service graph. */
export interface IngestDeps {
  database: Database;
  blobs: BlobStore;
  jobs: JobHandlers;
  erase: EraseHooks;
  /** Reads files in processes of their own, within the ENGRAM_PARSE_* bounds. */
  reader: DocumentReader;
}

export interface UploadedFile {
  name: string;
  mediaType?: string;
  bytes: Buffer;
}

interface FileView {
  name: string;
  type: FileType;
  size: number;
  sha256: string;
}

export type UploadOutcome =
  | {
      status: 'created';
      file: FileView;
      memories: MemoryView[];
      skipped: Array<{ chunk_index: number; reason: string; memory_id: number }>;
      forgotten: number[];
    }
  | { status: 'skipped'; reason: 'duplicate_file'; file: FileView; memory_ids: number[] }
  | { status: 'queued'; file: FileView; job: JobView };

const fileRow = (db: Executor, owner: Owner, name: string) =>
  db
    .selectFrom('uploaded_files')
    .selectAll()
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .where('name', '=', name)
    .executeTakeFirst();

/** Whether every memory of a stored version is still live: if some were forgotten since, the same file is ingested again. */
async function stillLive(db: Executor, owner: Owner, stored: unknown): Promise<boolean> {
  const ids = decodeJson<number[]>(stored);
  return (await liveMemoryIds(db, owner, ids)).length === ids.length;
}

/**
 * Writes a read document as the live version of the file, in one transaction: the same version
 * again is skipped; another version forgets the previous version's memories and adds the new ones.
 */
async function storeVersion(
  deps: Pick<IngestDeps, 'database' | 'erase'>,
  ctx: WriteContext,
  owner: Owner,
  name: string,
  document: ReadDocument,
): Promise<Exclude<UploadOutcome, { status: 'queued' }>> {
  const { database } = deps;
  const file = { name, type: document.type, size: document.size, sha256: document.sha256 };
  return write(database, ctx, async (trx, effects) => {
    // Locks the end user first (PostgreSQL), so two uploads of one file line up.
    await nextSeq(trx, owner, effects.now);
    const existing = await fileRow(trx, owner, name);
    if (existing?.sha256 === document.sha256 && (await stillLive(trx, owner, existing.memory_ids))) {
      effects.audit('memory.upload', { type: 'file', id: document.sha256 }, 'skipped');
      return {
        status: 'skipped' as const,
        reason: 'duplicate_file' as const,
        file,
        memory_ids: decodeJson<number[]>(existing.memory_ids),
      };
    }
    const forgotten = existing
      ? await forgetWithin(trx, { ctx, effects, hooks: deps.erase }, owner, decodeJson<number[]>(existing.memory_ids))
      : [];
    // Forgetting the previous version's last memories erased its row (eraseForgottenFiles): the new version writes one afresh.
    const kept = existing && (await fileRow(trx, owner, name));
    const outcomes = await addWithin(
      database,
      trx,
      ctx,
      effects,
      owner,
      chunkMemories(document, { source: 'upload', file: { name } }),
    );
    const memories = outcomes.flatMap((o) => ('created' in o ? [o.created] : []));
    const skipped = outcomes.flatMap((o, i) => ('skipped' in o ? [{ chunk_index: i, ...o.skipped }] : []));
    const values = {
      type: document.type,
      size: document.size,
      sha256: document.sha256,
      memory_ids: encodeJson(memories.map((m) => m.id)),
      updated_at: effects.now,
    };
    if (kept) await trx.updateTable('uploaded_files').set(values).where('id', '=', kept.id).execute();
    else {
      // A background upload's own job (still running) stays recorded, so its progress stays readable.
      const jobId =
        existing?.job_id != null && (await getJob(trx, existing.job_id, owner.projectId)) ? existing.job_id : null;
      await trx
        .insertInto('uploaded_files')
        .values({
          project_id: owner.projectId,
          tenant_id: owner.tenantId,
          end_user_id: owner.endUserId,
          name,
          job_id: jobId,
          created_at: existing?.created_at ?? effects.now,
          ...values,
        })
        .execute();
    }
    effects.audit('memory.upload', { type: 'file', id: document.sha256 });
    return { status: 'created' as const, file, memories, skipped, forgotten };
  });
}

/**
 * Ingests an uploaded file: small files at once, large ones through a background job whose
 * bytes wait in the blob store. Nothing is written for a file that cannot be read.
 */
export async function uploadFile(
  deps: IngestDeps & { settings: UploadSettings },
  ctx: WriteContext,
  owner: Owner,
  file: UploadedFile,
): Promise<UploadOutcome> {
  const { database, settings } = deps;
  if (file.bytes.length <= settings.backgroundFromBytes) {
    return storeVersion(
      deps,
      ctx,
      owner,
      file.name,
      await deps.reader.read(file.bytes, file.name, file.mediaType, 'refuse'),
    );
  }
  const type = await deps.reader.detect(file.bytes, file.name, file.mediaType, 'refuse');
  const view = { name: file.name, type, size: file.bytes.length, sha256: sha256Hex(file.bytes) };
  const existing = await fileRow(database.db, owner, file.name);
  if (existing?.sha256 === view.sha256 && (await stillLive(database.db, owner, existing.memory_ids))) {
    return {
      status: 'skipped',
      reason: 'duplicate_file',
      file: view,
      memory_ids: decodeJson<number[]>(existing.memory_ids),
    };
  }
  const blobKey = `${owner.projectId}/uploads/${view.sha256}-${Date.now().toString(36)}`;
  await deps.blobs.put(blobKey, Readable.from([file.bytes]));
  const jobId = await write(database, ctx, async (trx, effects) => {
    const id = await enqueueJob(trx, {
      kind: UPLOAD_JOB,
      projectId: owner.projectId,
      payload: {
        owner,
        name: file.name,
        mediaType: file.mediaType ?? null,
        blobKey,
        ctx: { actor: ctx.actor, organizationId: ctx.organizationId, requestId: ctx.requestId },
      },
    });
    // The file's row remembers its latest job, so the job's progress is readable by that end user only.
    await trx
      .insertInto('uploaded_files')
      .values({
        project_id: owner.projectId,
        tenant_id: owner.tenantId,
        end_user_id: owner.endUserId,
        name: file.name,
        type,
        size: view.size,
        sha256: null,
        memory_ids: '[]',
        job_id: id,
        created_at: effects.now,
        updated_at: effects.now,
      })
      .onConflict((oc) =>
        oc
          .columns(['project_id', 'tenant_id', 'end_user_id', 'name'])
          .doUpdateSet({ job_id: id, updated_at: effects.now }),
      )
      .execute();
    effects.audit('memory.upload', { type: 'file', id: view.sha256 }, 'queued');
    return id;
  });
  deps.jobs.enqueued();
  return { status: 'queued', file: view, job: (await getJob(database.db, jobId, owner.projectId))! };
}

/** The background half of a large upload (registered in services.ts). */
export function uploadJobHandler(deps: Omit<IngestDeps, 'jobs'>): JobHandler {
  return async (job) => {
    const { owner, name, mediaType, blobKey, ctx } = job.payload as {
      owner: Owner;
      name: string;
      mediaType: string | null;
      blobKey: string;
      ctx: Omit<WriteContext, 'projectId'>;
    };
    const stream = await deps.blobs.get(blobKey);
    if (!stream) throw new PermanentJobError('The uploaded file is no longer available; upload it again');
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
    await job.progress(0.1);
    let document: ReadDocument;
    try {
      document = await deps.reader.read(Buffer.concat(chunks), name, mediaType ?? undefined, 'wait');
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      await deps.blobs.delete(blobKey);
      throw new PermanentJobError(error.message);
    }
    await job.progress(0.5);
    const outcome = await storeVersion(deps, { ...ctx, projectId: owner.projectId }, owner, name, document);
    await deps.blobs.delete(blobKey);
    return outcome.status === 'created'
      ? {
          status: 'created',
          file: outcome.file,
          memory_ids: outcome.memories.map((m) => m.id),
          skipped: outcome.skipped.length,
          forgotten: outcome.forgotten,
        }
      : { status: 'skipped', reason: outcome.reason, file: outcome.file, memory_ids: outcome.memory_ids };
  };
}

/** A background upload's job, visible only to the end user who uploaded the file. */
export async function uploadJob(db: Executor, owner: Owner, jobId: number): Promise<JobView> {
  const row = await db
    .selectFrom('uploaded_files')
    .select('id')
    .where('project_id', '=', owner.projectId)
    .where('job_id', '=', jobId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .executeTakeFirst();
  const job = row ? await getJob(db, jobId, owner.projectId, UPLOAD_JOB) : undefined;
  if (!job) throw notFound('Upload job');
  return job;
}

/**
 * Removing an end user: their files' rows (names are user content) and the upload jobs they recorded
 * (payload and result name the file) are deleted (an end-user erase hook, services.ts).
 */
export async function eraseEndUserFiles(trx: Executor, owner: Owner): Promise<void> {
  const files = await trx
    .selectFrom('uploaded_files')
    .select(['id', 'job_id'])
    .where('project_id', '=', owner.projectId)
    .where('tenant_id', '=', owner.tenantId)
    .where('end_user_id', '=', owner.endUserId)
    .execute();
  await eraseJobs(
    trx,
    files.flatMap((f) => (f.job_id === null ? [] : [f.job_id])),
  );
  for (let i = 0; i < files.length; i += 500)
    await trx
      .deleteFrom('uploaded_files')
      .where(
        'id',
        'in',
        files.slice(i, i + 500).map((f) => f.id),
      )
      .execute();
}

/**
 * Forgetting memories: a file none of whose memories is live any more loses its row (the name is user content)
 * and the finished upload job it recorded (payload and result name the file); an erase hook (services.ts). A file
 * some of whose memories live on keeps its row. Files are found through the forgotten memories' owners, who hold
 * few files each.
 */
export const eraseForgottenFiles: EraseHook = async (trx, ids) => {
  const forgotten = new Set(ids);
  const owners = new Map(
    (await ownersOfMemories(trx, ids)).map((o) => [`${o.project_id}\n${o.tenant_id}\n${o.end_user_id}`, o]),
  );
  for (const owner of owners.values()) {
    const files = await trx
      .selectFrom('uploaded_files')
      .select(['id', 'job_id', 'memory_ids'])
      .where('project_id', '=', owner.project_id)
      .where('tenant_id', '=', owner.tenant_id)
      .where('end_user_id', '=', owner.end_user_id)
      .execute();
    const scope = { projectId: owner.project_id, tenantId: owner.tenant_id, endUserId: owner.end_user_id };
    for (const file of files) {
      const memoryIds = decodeJson<number[]>(file.memory_ids);
      if (!memoryIds.some((id) => forgotten.has(id))) continue;
      if ((await liveMemoryIds(trx, scope, memoryIds)).length > 0) continue;
      const job = file.job_id === null ? undefined : await getJob(trx, file.job_id, owner.project_id);
      // A job still ingesting the file (its new version) keeps its record until it ends.
      if (job && job.status !== 'queued' && job.status !== 'running') await eraseJobs(trx, [job.id]);
      await trx.deleteFrom('uploaded_files').where('id', '=', file.id).execute();
    }
  }
};
