import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { controlContextOf, principalOf } from '../../http/auth.js';
import { AppError, invalid } from '../../core/errors.js';
import { declaredErrors } from '../../http/openapi.js';
import { PageOf, PageQuery } from '../../core/paging.js';
import type { JobHandlers } from '../../jobs/runner.js';
import type { BlobStore } from '../../store/blobs.js';
import type { Database } from '../../store/database.js';
import { CONTENT_TYPES } from './formats.js';
import { cancelImport, createImport, getImport, listImports } from './imports.js';
import { CreateExportBody, Export, IdParams, Import, ImportQuery } from './schemas.js';
import { cancelExport, createExport, deleteExport, exportRow, filenameOf, listExports, toExport } from './service.js';

export interface ExportOptions {
  database: Database;
  blobs: BlobStore;
  /** Told of every enqueued job, so a runner in this process starts it at once. */
  jobs: JobHandlers;
  /** How long an artifact is kept. */
  ttlSeconds: number;
}

const tags = ['exports'];
const read = {
  auth: {
    accepts: ['bearer', 'api_key'],
    scope: 'exports:read',
    capability: 'exports.manage',
    bearerProject: 'required',
  },
} as const;
const manage = {
  auth: {
    accepts: ['bearer', 'api_key'],
    scope: 'exports:write',
    capability: 'exports.manage',
    bearerProject: 'required',
  },
} as const;
/** Anything larger is refused while it streams in. */
const MAX_IMPORT_BYTES = 8 * 1024 ** 3;

/** The project the call acts on, resolved by authentication (X-Project-ID, or the key's lock), and its write context. */
function contextOf(request: FastifyRequest) {
  const projectId = principalOf(request).projectId!;
  return { ...controlContextOf(request, undefined, projectId), projectId };
}

/** `Range: bytes=a-b | a- | -n` (one range) -> offset and length; null for none or several ranges (the whole file is sent). */
function byteRange(header: string | undefined, size: number): { offset: number; length: number } | null {
  if (!header) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  let start: number;
  let end: number;
  if (match[1] === '') {
    start = Math.max(0, size - Number(match[2]));
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  if (start >= size || start > end) {
    throw new AppError('range_not_satisfiable', `The range is outside the artifact (${size} bytes)`, 'Range', {
      'Content-Range': `bytes */${size}`,
    });
  }
  return { offset: start, length: end - start + 1 };
}

export const exportRoutes: FastifyPluginAsyncTypebox<ExportOptions> = async (
  app,
  { database, blobs, jobs, ttlSeconds },
) => {
  app.post(
    '/exports',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Create an export',
        description:
          'Exports the project named by X-Project-ID (narrowed by `scope`) in the background; answers 202 with the export record. Read progress with GET /exports/{id}, then download the artifact.',
        body: CreateExportBody,
        response: { 202: Export, ...declaredErrors(400, 404) },
      },
    },
    async (request, reply) => {
      const exported = await createExport(database, contextOf(request), request.body, ttlSeconds);
      jobs.enqueued();
      return reply.status(202).send(exported);
    },
  );

  app.get(
    '/exports',
    {
      config: read,
      schema: {
        tags,
        summary: 'List exports',
        description: 'Newest first.',
        querystring: PageQuery,
        response: { 200: PageOf(Export), ...declaredErrors(400, 404) },
      },
    },
    async (request) => listExports(database.db, principalOf(request).projectId!, request.query),
  );

  app.get(
    '/exports/:id',
    {
      config: read,
      schema: {
        tags,
        summary: 'Get an export',
        params: IdParams,
        response: { 200: Export, ...declaredErrors(400, 404) },
      },
    },
    async (request) => toExport(await exportRow(database.db, principalOf(request).projectId!, request.params.id)),
  );

  app.post(
    '/exports/:id/cancel',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Cancel an export',
        description: 'A running export stops within a second; 409 when it has already finished.',
        params: IdParams,
        response: { 200: Export, ...declaredErrors(400, 404, 409) },
      },
    },
    async (request) => cancelExport(database, contextOf(request), request.params.id),
  );

  app.delete(
    '/exports/:id',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Delete an export',
        description: 'Deletes the artifact and the record (404 from then on); a running export is cancelled.',
        params: IdParams,
        response: { 200: Export, ...declaredErrors(400, 404) },
      },
    },
    async (request) => deleteExport(database, blobs, contextOf(request), request.params.id),
  );

  app.get(
    '/exports/:id/download',
    {
      config: read,
      schema: {
        tags,
        summary: 'Download an export',
        description:
          'The artifact, streamed, with Content-Length, Content-Disposition, `Repr-Digest: sha-256=:…:` (of the whole artifact) and single-range `Range` support (206) so a broken download resumes. 409 before it has completed, 410 once expired or withdrawn.',
        params: IdParams,
        response: {
          200: Type.String({ description: 'The artifact' }),
          206: Type.String({ description: 'Part of the artifact' }),
          ...declaredErrors(400, 404, 409, 410, 416),
        },
      },
    },
    async (request, reply) => {
      const row = await exportRow(database.db, principalOf(request).projectId!, request.params.id);
      if (row.artifact_deleted_at !== null) {
        const why =
          row.artifact_deleted_reason === 'expired' ? 'expired' : 'was withdrawn because memories it held were erased';
        throw new AppError('gone', `The export's artifact ${why}; create a new export`);
      }
      if (row.status !== 'completed' || row.blob_key === null)
        throw new AppError('conflict', `The export is ${row.status}; only a completed export can be downloaded`);
      const size = row.size!;
      const range = byteRange(request.headers.range, size);
      const body = await blobs.get(row.blob_key, range ?? undefined);
      if (!body) throw new AppError('gone', "The export's artifact is no longer stored; create a new export");
      reply
        .header('content-type', row.gzip ? 'application/gzip' : CONTENT_TYPES[row.format as keyof typeof CONTENT_TYPES])
        .header('content-disposition', `attachment; filename="${filenameOf(row)}"`)
        .header('repr-digest', `sha-256=:${Buffer.from(row.sha256!, 'hex').toString('base64')}:`)
        .header('accept-ranges', 'bytes')
        .header('etag', `"${row.sha256}"`)
        .header('content-length', String(range ? range.length : size));
      if (range)
        reply.status(206).header('content-range', `bytes ${range.offset}-${range.offset + range.length - 1}/${size}`);
      return reply.send(body as never);
    },
  );

  await app.register(async (uploads) => {
    // The file streams into the blob store as it arrives: no body limit, no JSON parsing here.
    uploads.removeAllContentTypeParsers();
    uploads.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    uploads.post(
      '/imports',
      {
        config: manage,
        schema: {
          tags,
          summary: 'Import memories',
          description:
            "The request body is the file: Engram's export (jsonl or json, optionally gzipped) or Mem0's (`{\"results\": [...]}` or the list get_all returns). Answers 202 with the import record; read progress with GET /imports/{id}. Each record's source id becomes its client_ref, so importing the same file again skips what landed.",
          querystring: ImportQuery,
          response: { 202: Import, ...declaredErrors(400, 404, 413) },
        },
        preValidation: async (request) => {
          // The stream is taken aside so that idempotency fingerprints the request without reading it.
          (request as FastifyRequest & { upload?: unknown }).upload = request.body;
          request.body = undefined;
        },
      },
      async (request, reply) => {
        const upload = (request as FastifyRequest & { upload?: AsyncIterable<Uint8Array> }).upload;
        if (!upload) throw invalid('body', 'The request body must be the file to import');
        const ctx = contextOf(request);
        async function* limited() {
          let bytes = 0;
          for await (const chunk of upload!) {
            bytes += chunk.length;
            if (bytes > MAX_IMPORT_BYTES)
              throw new AppError('payload_too_large', `An import file is at most ${MAX_IMPORT_BYTES} bytes`);
            yield chunk;
          }
        }
        const { format } = request.query as { format?: 'auto' | 'engram' | 'mem0' };
        const created = await createImport(database, blobs, ctx, format ?? 'auto', limited());
        jobs.enqueued();
        return reply.status(202).send(created);
      },
    );
  });

  app.get(
    '/imports',
    {
      config: read,
      schema: {
        tags,
        summary: 'List imports',
        description: 'Newest first.',
        querystring: PageQuery,
        response: { 200: PageOf(Import), ...declaredErrors(400, 404) },
      },
    },
    async (request) => listImports(database.db, principalOf(request).projectId!, request.query),
  );

  app.get(
    '/imports/:id',
    {
      config: read,
      schema: {
        tags,
        summary: 'Get an import',
        description: 'Status and progress (records done, bytes read).',
        params: IdParams,
        response: { 200: Import, ...declaredErrors(400, 404) },
      },
    },
    async (request) => getImport(database.db, principalOf(request).projectId!, request.params.id),
  );

  app.post(
    '/imports/:id/cancel',
    {
      config: manage,
      schema: {
        tags,
        summary: 'Cancel an import',
        description:
          'Stops after the batch in progress; committed batches stay (a re-import skips them). 409 when finished.',
        params: IdParams,
        response: { 200: Import, ...declaredErrors(400, 404, 409) },
      },
    },
    async (request) => cancelImport(database, contextOf(request), request.params.id),
  );
};
