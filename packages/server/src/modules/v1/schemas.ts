import { Type } from '@sinclair/typebox';
import { ExpiresAt, Memory, TtlSeconds } from '../memories/index.js';
import { MinScore, ScoredMemorySchema } from '../retrieval/index.js';

const Id = (description: string) => Type.String({ minLength: 1, maxLength: 256, description });

export const AddTurnBody = Type.Object(
  {
    tenant_id: Id('Tenant of the application'),
    user_id: Id("The tenant's user; opaque, not an e-mail address"),
    source: Type.Optional(
      Type.String({ minLength: 1, maxLength: 128, description: 'Origin label; default "conversation"' }),
    ),
    text: Type.String({ minLength: 1, maxLength: 32_000, description: 'The turn, stored verbatim' }),
    speaker: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'Who spoke; a content hash here makes redelivery converge',
    }),
    expires_at: Type.Optional(ExpiresAt),
    ttl_seconds: Type.Optional(TtlSeconds),
    metadata: Type.Optional(
      Type.Object(
        {
          session_id: Type.Optional(Id('Conversation session')),
          project: Type.Optional(Type.String({ maxLength: 256 })),
          timestamp: Type.Optional(
            Type.String({ format: 'date-time', description: 'When the turn was said (default: now)' }),
          ),
        },
        { additionalProperties: true },
      ),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      {
        tenant_id: 'acme',
        user_id: 'user-42',
        text: 'I just booked the Lisbon flight for Friday.',
        speaker: 'user',
        source: 'chat',
        ttl_seconds: 2_592_000,
        metadata: { session_id: 'session-7', timestamp: '2026-01-15T09:30:00Z' },
      },
    ],
  },
);

export const AddTurnResult = Type.Object({
  id: Type.Integer(),
  status: Type.Union([Type.Literal('created'), Type.Literal('duplicate')]),
  tenant_id: Type.String(),
  user_id: Type.String(),
  session_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
});

export const RecallBody = Type.Object(
  {
    tenant_id: Id('Tenant'),
    user_id: Id("The tenant's user"),
    query: Type.String({ minLength: 1, maxLength: 4_000 }),
    k: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
    session_id: Type.Optional(Id('Narrow to one session')),
    min_score: Type.Optional(MinScore),
  },
  { additionalProperties: false },
);

export const RecallResult = Type.Object({
  memories: Type.Array(
    Type.Intersect([
      ScoredMemorySchema,
      Type.Object({ speaker: Type.Union([Type.String(), Type.Null()]), tenant_id: Type.String() }),
    ]),
    { description: 'Whole memory records, best first' },
  ),
  context: Type.String({ description: 'The recalled turns in conversation order, ready for a prompt' }),
});

export const Quota = Type.Object({
  monthly_turns: Type.Integer(),
  used: Type.Integer(),
  remaining: Type.Integer(),
  period_start: Type.String({ format: 'date-time' }),
  period_end: Type.String({ format: 'date-time' }),
});

export const StatusResult = Type.Object({
  status: Type.String(),
  database: Type.String(),
  tenant_id: Type.Union([Type.String(), Type.Null()]),
  counts: Type.Object({
    tenants: Type.Integer(),
    users: Type.Integer(),
    memories: Type.Integer(),
    turns_this_period: Type.Integer({
      description:
        "Turns stored this month: the tenant's (quota.used), or with a key bound to an end user that end user's live turns",
    }),
  }),
  quota: Type.Union([Quota, Type.Null()]),
});

export const ListQuery = Type.Object(
  {
    tenant_id: Type.Optional(Id('Tenant')),
    user_id: Type.Optional(Id('User')),
    session_id: Type.Optional(Id('Session')),
    offset: Type.Integer({ minimum: 0, default: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
  },
  { additionalProperties: false },
);

export const ListResult = Type.Object({
  items: Type.Array(
    Type.Intersect([
      Memory,
      Type.Object({
        speaker: Type.Union([Type.String(), Type.Null()]),
        tenant_id: Type.String(),
        user_id: Type.String(),
      }),
    ]),
    { description: 'Whole memory records, newest first' },
  ),
  total: Type.Integer(),
  offset: Type.Integer(),
  limit: Type.Integer(),
  has_next: Type.Boolean(),
});
