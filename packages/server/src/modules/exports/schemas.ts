import { Type, type Static } from '@sinclair/typebox';

export const EXPORT_FORMATS = ['jsonl', 'json', 'csv'] as const;
export const EXPORT_INCLUDES = ['history', 'feedback', 'relations'] as const;
export const EXPORT_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled', 'expired'] as const;
export const IMPORT_FORMATS = ['auto', 'engram', 'mem0'] as const;
export const IMPORT_STATUSES = ['queued', 'running', 'completed', 'failed', 'cancelled'] as const;

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const ExportScope = Type.Object(
  {
    tenant_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'One tenant (/v1 plane)' })),
    end_user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'One end user' })),
    session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'One session' })),
    created_after: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive' })),
    created_before: Type.Optional(Type.String({ format: 'date-time', description: 'Exclusive' })),
    tags_any: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 64 }), {
        minItems: 1,
        maxItems: 50,
        description: 'Memories with any of these tags',
      }),
    ),
  },
  { additionalProperties: false, description: 'What to export; empty: the whole project' },
);
export type ExportScopeInput = Static<typeof ExportScope>;

export const CreateExportBody = Type.Object(
  {
    scope: Type.Optional(ExportScope),
    format: Type.Optional(
      Type.Union(
        EXPORT_FORMATS.map((f) => Type.Literal(f)),
        { default: 'jsonl' },
      ),
    ),
    gzip: Type.Optional(Type.Boolean({ default: false })),
    include: Type.Optional(
      Type.Array(Type.Union(EXPORT_INCLUDES.map((f) => Type.Literal(f))), {
        maxItems: EXPORT_INCLUDES.length,
        uniqueItems: true,
        description: 'Memories are always included; relations go with their source memory',
      }),
    ),
  },
  { additionalProperties: false },
);
export type CreateExportInput = Static<typeof CreateExportBody>;

export const Progress = Type.Object({ rows_done: Type.Integer(), rows_total: Nullable(Type.Integer()) });

export const Export = Type.Object({
  id: Type.Integer(),
  project_id: Type.String(),
  status: Type.Union(EXPORT_STATUSES.map((s) => Type.Literal(s))),
  scope: ExportScope,
  format: Type.Union(EXPORT_FORMATS.map((f) => Type.Literal(f))),
  gzip: Type.Boolean(),
  include: Type.Array(Type.String()),
  progress: Progress,
  size: Nullable(Type.Integer({ description: 'Bytes of the artifact' })),
  sha256: Nullable(Type.String({ description: 'SHA-256 (hex) of the artifact as downloaded' })),
  filename: Type.String(),
  error: Nullable(Type.String()),
  artifact_deleted_at: Nullable(Timestamp),
  artifact_deleted_reason: Nullable(Type.String({ description: 'expired, memories_forgotten, end_user_purged' })),
  created_at: Timestamp,
  started_at: Nullable(Timestamp),
  completed_at: Nullable(Timestamp),
  expires_at: Timestamp,
});
export type ExportView = Static<typeof Export>;

export const ImportQuery = Type.Object(
  {
    format: Type.Optional(
      Type.Union(
        IMPORT_FORMATS.map((f) => Type.Literal(f)),
        { default: 'auto' },
      ),
    ),
  },
  { additionalProperties: false },
);

export const Import = Type.Object({
  id: Type.Integer(),
  project_id: Type.String(),
  status: Type.Union(IMPORT_STATUSES.map((s) => Type.Literal(s))),
  format: Type.Union(IMPORT_FORMATS.map((f) => Type.Literal(f))),
  progress: Type.Object({
    rows_done: Type.Integer({ description: 'Records read and committed' }),
    rows_total: Nullable(Type.Integer({ description: 'Known once the file is read to the end' })),
    bytes_done: Type.Integer(),
    bytes_total: Type.Integer(),
  }),
  created: Type.Integer({ description: 'Memories created' }),
  skipped: Type.Integer({ description: 'Records already present (same client_ref or text)' }),
  relations_created: Type.Integer({ description: 'Relations restored (an Engram export with relations)' }),
  relations_skipped: Type.Integer({
    description: 'Relations present already, or with a memory at either end not in the project',
  }),
  error: Nullable(
    Type.Object({ message: Type.String(), record: Nullable(Type.Integer()), line: Nullable(Type.Integer()) }),
  ),
  created_at: Timestamp,
  completed_at: Nullable(Timestamp),
});
export type ImportView = Static<typeof Import>;

export const IdParams = Type.Object({ id: Type.Integer({ minimum: 1 }) });
