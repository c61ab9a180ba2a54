import multipart, { type MultipartFile } from '@fastify/multipart';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ownerOf, writeContextOf } from '../../http/auth.js';
import { AppError, invalid } from '../../core/errors.js';
import { sha256Hex } from '../../core/crypto.js';
import { JobResult } from '../retrieval/index.js';
import { CHUNK } from './chunker.js';
import { UploadJobParams, UploadResult } from './schemas.js';
import { uploadFile, uploadJob, type IngestDeps, type UploadedFile, type UploadSettings } from './service.js';

declare module 'fastify' {
  interface FastifyRequest {
    uploadedFile?: UploadedFile;
  }
}

const tags = ['memories'];

/**
 * The multipart parser's errors for a body that breaks the format, as the caller's 400: busboy
 * reports them as plain errors, known by their message only.
 */
function malformedForm(error: Error): AppError | undefined {
  if (error.message === 'Multipart: Boundary not found')
    return invalid('Content-Type', 'The multipart/form-data Content-Type needs a boundary parameter');
  if (
    /terminated early due to unexpected end of multipart data|^Unexpected end of multipart data$/.test(error.message)
  ) {
    return invalid('file', 'The multipart body ends in the middle of a part');
  }
  return undefined;
}

export const ingestRoutes: FastifyPluginAsyncTypebox<IngestDeps & { settings: UploadSettings }> = async (app, deps) => {
  const { database, settings } = deps;

  // Thrown on to the app's error handler (http/error-handler.ts), which answers it.
  app.setErrorHandler((error: Error) => {
    throw malformedForm(error) ?? error;
  });

  // Registered inside this plugin only, so every other route keeps answering multipart bodies with 415.
  await app.register(multipart, {
    limits: { fileSize: settings.maxBytes, files: 1, fields: 10, parts: 11 },
    attachFieldsToBody: 'keyValues',
    // The file is read whole (it is parsed whole anyway) and the body keeps only its digest, so the
    // idempotency fingerprint covers the file's content without hashing megabytes of JSON.
    async onFile(this: { uploadedFile?: UploadedFile }, part: MultipartFile) {
      if (part.fieldname !== 'file') {
        part.file.resume();
        throw invalid(part.fieldname, `Unexpected file field ${part.fieldname}; send the document as "file"`);
      }
      const bytes = await part.toBuffer();
      const name = part.filename.split(/[\\/]/).pop()!.trim();
      if (!name || name.length > 255) throw invalid('file', 'The file needs a name of 1 to 255 characters');
      this.uploadedFile = { name, mediaType: part.mimetype, bytes };
      (part as unknown as { value: unknown }).value = { name, size: bytes.length, sha256: sha256Hex(bytes) };
    },
  });

  app.post(
    '/memory/upload',
    {
      config: { auth: { scope: 'memories:write', endUser: 'required' } },
      schema: {
        tags,
        summary: 'Ingest a file',
        description:
          'multipart/form-data with one part `file`: text, Markdown, HTML, PDF, DOCX, CSV or JSON, detected by content and name. ' +
          `The document is split along its structure (headings, paragraphs, table rows, sentences) into memories of 1 to ${CHUNK.max} characters ` +
          `(paragraphs packed to about ${CHUNK.target}), each with its provenance in metadata. The same file again is skipped; another version ` +
          `of a file with the same name replaces the previous version's memories. Files over ${settings.backgroundFromBytes} bytes are ingested ` +
          `by a job (202; read it at GET /memory/upload/{job_id}); over ${settings.maxBytes} bytes is 413, as is a file beyond a reading bound ` +
          '(it inflates, has pages or parts, needs memory or time past the ENGRAM_PARSE_* setting its message names).',
        consumes: ['multipart/form-data'],
        body: Type.Object(
          { file: Type.String({ format: 'binary', description: 'The document' }) },
          { additionalProperties: false },
        ),
        response: { 201: UploadResult, 200: UploadResult, 202: UploadResult },
      },
      // The body schema documents the form; the form itself is checked below, part by part.
      validatorCompiler: () => (data: unknown) => ({ value: data }),
      preValidation: async (request) => {
        if (!request.isMultipart())
          throw new AppError('unsupported_media_type', 'Send the file as multipart/form-data', 'Content-Type');
      },
      preHandler: async (request) => {
        const fields = Object.keys((request.body as Record<string, unknown> | undefined) ?? {}).filter(
          (f) => f !== 'file',
        );
        if (fields.length > 0) throw invalid(fields[0]!, `Unknown form field ${fields[0]}; send only "file"`);
        if (!request.uploadedFile) throw invalid('file', 'A file part named "file" is required');
      },
    },
    async (request, reply) => {
      const outcome = await uploadFile(deps, writeContextOf(request), ownerOf(request), request.uploadedFile!);
      return reply.status(outcome.status === 'created' ? 201 : outcome.status === 'queued' ? 202 : 200).send(outcome);
    },
  );

  app.get(
    '/memory/upload/:job_id',
    {
      config: { auth: { scope: 'memories:read', endUser: 'required' } },
      schema: {
        tags,
        summary: 'Progress of a large upload',
        description:
          'The job ingesting a large file: status, progress (0 to 1) and, once done, the result (memory ids) or the reason it failed.',
        params: UploadJobParams,
        response: { 200: JobResult },
      },
    },
    async (request) => uploadJob(database.db, ownerOf(request), request.params.job_id),
  );
};
