import { Type, type Static } from '@sinclair/typebox';
import { Filters } from './filters.js';

/** Limits the spec leaves open; recorded in docs/api.md. */
export const LIMITS = {
  textChars: 32_000,
  tags: 50,
  tagChars: 64,
  metadataBytes: 16_384,
  bulkItems: 50,
  batchUpdates: 100,
  forgetIds: 1_000,
} as const;

// Bounded so that every accepted id binds as a PostgreSQL bigint and a JavaScript number.
export const MemoryId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Memory id' });
const Text = Type.String({ minLength: 1, maxLength: LIMITS.textChars, description: 'One statement' });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.tagChars }), {
  maxItems: LIMITS.tags,
  uniqueItems: true,
});
const Importance = Type.Number({ minimum: 0, maximum: 1, description: '0 (trivial) to 1 (critical); default 0.5' });
const Metadata = Type.Object(
  {},
  { additionalProperties: true, description: `Free-form JSON object, at most ${LIMITS.metadataBytes} bytes` },
);
const Source = Type.String({ minLength: 1, maxLength: 128, description: 'Descriptive origin label' });
const ClientRef = Type.String({
  minLength: 1,
  maxLength: 256,
  description: 'Caller reference for idempotent re-import',
});
const SessionId = Type.String({ minLength: 1, maxLength: 256, description: 'Conversation session, narrows retrieval' });
/** At most ten years ahead, in seconds. */
export const MAX_TTL_SECONDS = 315_360_000;
export const ExpiresAt = Type.String({
  format: 'date-time',
  description:
    'When the memory expires (in the future): from then on no read returns it, and the expiry sweep erases it as forgetting does',
});
export const TtlSeconds = Type.Integer({
  minimum: 1,
  maximum: MAX_TTL_SECONDS,
  description: 'Expires this many seconds after the write (instead of expires_at)',
});

export const AddMemoryBody = Type.Object(
  {
    text: Text,
    source: Type.Optional(Source),
    tags: Type.Optional(Tags),
    importance: Type.Optional(Importance),
    metadata: Type.Optional(Metadata),
    client_ref: Type.Optional(ClientRef),
    session_id: Type.Optional(SessionId),
    expires_at: Type.Optional(ExpiresAt),
    ttl_seconds: Type.Optional(TtlSeconds),
  },
  {
    additionalProperties: false,
    $id: 'AddMemory',
    examples: [
      {
        text: 'Prefers a window seat on long flights',
        source: 'chat',
        tags: ['travel'],
        importance: 0.7,
        metadata: { airline: 'TAP' },
        client_ref: 'crm-1042',
        session_id: 'session-7',
      },
      { text: 'Flight TP123 to Lisbon on Friday, seat 14A', tags: ['travel'], ttl_seconds: 604_800 },
    ],
  },
);
export type AddMemoryInput = Static<typeof AddMemoryBody>;

export const MemoryPatch = Type.Object(
  {
    tags: Type.Optional(Tags),
    importance: Type.Optional(Importance),
    metadata: Type.Optional(Metadata),
    source: Type.Optional(Source),
    expires_at: Type.Optional(
      Type.Union([ExpiresAt, Type.Null()], { description: 'A new expiry, or null: never expires' }),
    ),
    ttl_seconds: Type.Optional(TtlSeconds),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [
      { tags: ['travel', 'work'], importance: 0.8 },
      { expires_at: '2026-12-31T23:59:59Z' },
      { expires_at: null },
    ],
  },
);
export type MemoryPatchInput = Static<typeof MemoryPatch>;

export const Memory = Type.Object(
  {
    id: Type.Integer(),
    text: Type.String(),
    tags: Type.Array(Type.String()),
    is_summary: Type.Boolean(),
    source: Type.Union([Type.String(), Type.Null()]),
    importance: Type.Number(),
    metadata: Type.Object({}, { additionalProperties: true }),
    client_ref: Type.Union([Type.String(), Type.Null()]),
    session_id: Type.Union([Type.String(), Type.Null()]),
    end_user_id: Type.String(),
    created_at: Type.String({ format: 'date-time' }),
    updated_at: Type.String({ format: 'date-time' }),
    superseded_by: Type.Union([Type.Integer(), Type.Null()], {
      description:
        'The memory a resolved decision kept over this one (GET /memory/decisions); it ranks below that memory in retrieval',
    }),
    expires_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
      description: 'When it expires; null: never',
    }),
  },
  { $id: 'Memory' },
);
export type MemoryView = Static<typeof Memory>;

export const SkipReason = Type.Union([
  Type.Literal('duplicate_client_ref'),
  Type.Literal('duplicate_text'),
  Type.Literal('already_migrated'),
]);
export type SkipReason = Static<typeof SkipReason>;

export const Skipped = Type.Object({
  status: Type.Literal('skipped'),
  reason: SkipReason,
  memory_id: Type.Integer(),
});

const ItemError = Type.Object({ code: Type.String(), message: Type.String(), field: Type.Optional(Type.String()) });

export const BulkAddBody = Type.Array(AddMemoryBody, { minItems: 1, maxItems: LIMITS.bulkItems });
export const BulkAddResult = Type.Object({
  totals: Type.Object({ created: Type.Integer(), skipped: Type.Integer(), failed: Type.Integer() }),
  results: Type.Array(
    Type.Object({
      index: Type.Integer(),
      status: Type.Union([Type.Literal('created'), Type.Literal('skipped'), Type.Literal('failed')]),
      memory: Type.Optional(Memory),
      memory_id: Type.Optional(Type.Integer()),
      reason: Type.Optional(SkipReason),
      error: Type.Optional(ItemError),
    }),
  ),
});
export type BulkAddResultView = Static<typeof BulkAddResult>;

export const BatchUpdateBody = Type.Object(
  {
    updates: Type.Array(
      Type.Object({ id: MemoryId, ...MemoryPatch.properties }, { additionalProperties: false, minProperties: 2 }),
      { minItems: 1, maxItems: LIMITS.batchUpdates },
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        updates: [
          { id: 1, importance: 0.9 },
          { id: 2, tags: ['archived'], ttl_seconds: 86_400 },
        ],
      },
    ],
  },
);
export const BatchUpdateResult = Type.Object({
  totals: Type.Object({ updated: Type.Integer(), failed: Type.Integer() }),
  results: Type.Array(
    Type.Object({
      index: Type.Integer(),
      id: Type.Integer(),
      status: Type.Union([Type.Literal('updated'), Type.Literal('failed')]),
      memory: Type.Optional(Memory),
      error: Type.Optional(ItemError),
    }),
  ),
});
export type BatchUpdateResultView = Static<typeof BatchUpdateResult>;

export const ForgetBody = Type.Object(
  {
    ids: Type.Optional(
      Type.Array(MemoryId, {
        minItems: 1,
        maxItems: LIMITS.forgetIds,
        description: 'Forget these memories (answers the array of ids forgotten)',
      }),
    ),
    filters: Type.Optional(Filters),
    session_id: Type.Optional(SessionId),
    dry_run: Type.Optional(
      Type.Boolean({
        description: 'With filters or session_id: count and name what would be forgotten, forgetting nothing',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: LIMITS.forgetIds,
        description: `With filters or session_id: forget at most this many, oldest first (default and at most ${LIMITS.forgetIds})`,
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'What to forget: ids, or filters and/or session_id (one kind of selection a request)',
    examples: [
      { ids: [1, 2] },
      { filters: { tags: { $in: ['travel'] }, created_at: { $lt: '2025-01-01T00:00:00Z' } }, dry_run: true },
      { session_id: 'session-7', limit: 500 },
    ],
  },
);

export const ForgetScopeResult = Type.Object({
  dry_run: Type.Boolean(),
  ids: Type.Array(Type.Integer(), { description: 'Forgotten (on a dry run: would be), ascending, at most limit' }),
  matched: Type.Integer({ description: 'Live memories the selection matched when the request ran, ids included' }),
  has_more: Type.Boolean({
    description: 'More matched than this request forgot (limit): send it again for the next ones',
  }),
});

export const HistoryEntry = Type.Object({
  id: Type.Integer(),
  action: Type.String({ description: 'create | update | forget' }),
  changes: Type.Union([
    Type.Record(Type.String(), Type.Object({ before: Type.Unknown(), after: Type.Unknown() })),
    Type.Null(),
  ]),
  actor: Type.Object({ type: Type.String(), id: Type.Union([Type.Integer(), Type.Null()]) }),
  request_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
});
export const HistoryResult = Type.Object({ memory_id: Type.Integer(), items: Type.Array(HistoryEntry) });

export const ListMemoriesQuery = Type.Object(
  {
    filters: Type.Optional(
      Type.String({
        minLength: 2,
        maxLength: 16_384,
        description:
          'The filters object of POST /memory/query, as JSON (URL-encoded): {"tags_any": ["travel"], "metadata": {"lang": "en"}}',
        examples: ['{"tags":{"$in":["travel"]},"importance":{"$gte":0.5}}'],
      }),
    ),
    session_id: Type.Optional(SessionId),
    order_by: Type.Union([Type.Literal('created_at'), Type.Literal('updated_at')], {
      default: 'created_at',
      description: 'Sort key (ties by id)',
    }),
    order: Type.Union([Type.Literal('desc'), Type.Literal('asc')], {
      default: 'desc',
      description: 'Newest first (desc) or oldest first (asc)',
    }),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50, description: 'Memories per page (at most 100)' }),
    cursor: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'next_cursor of the previous page, with the same order_by and order',
      }),
    ),
    total: Type.Boolean({
      default: false,
      description: 'Also count every memory the filters select (one more query over all of them)',
    }),
  },
  { additionalProperties: false },
);

export const ListMemoriesResult = Type.Object({
  items: Type.Array(Memory),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Send as cursor for the next page; null on the last page',
  }),
  has_next: Type.Boolean(),
  limit: Type.Integer(),
  total: Type.Optional(Type.Integer({ description: 'Every memory the filters select (only when total=true)' })),
});
