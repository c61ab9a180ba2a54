import { Type } from '@sinclair/typebox';
import { Memory } from '../memories/index.js';
import { JobResult } from '../retrieval/index.js';
// The list alone: the parsers (and their libraries) load only in the reading processes (reader-worker.ts).
import { FILE_TYPES } from './parsers/parser.js';

const File = Type.Object({
  name: Type.String(),
  type: Type.Union(FILE_TYPES.map((t) => Type.Literal(t))),
  size: Type.Integer({ description: 'Bytes' }),
  sha256: Type.String({ description: 'SHA-256 of the file, hex' }),
});

export const UploadResult = Type.Object({
  status: Type.Union([Type.Literal('created'), Type.Literal('skipped'), Type.Literal('queued')]),
  file: File,
  memories: Type.Optional(Type.Array(Memory, { description: 'created: the new memories, in document order' })),
  skipped: Type.Optional(
    Type.Array(Type.Object({ chunk_index: Type.Integer(), reason: Type.String(), memory_id: Type.Integer() }), {
      description: 'created: chunks whose text the end user already had',
    }),
  ),
  forgotten: Type.Optional(
    Type.Array(Type.Integer(), { description: "created: the previous version's memories, now forgotten" }),
  ),
  reason: Type.Optional(Type.Literal('duplicate_file')),
  memory_ids: Type.Optional(Type.Array(Type.Integer(), { description: "skipped: the file's live memories" })),
  job: Type.Optional(JobResult),
});

export const UploadJobParams = Type.Object({ job_id: Type.Integer({ minimum: 1 }) });
